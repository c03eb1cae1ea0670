/**
 * The agent's side of the host: the tools it is given (eager or deferred, with
 * the meta tools), the fleet's tool search, and the call of a tool by name —
 * a registered one, a meta tool, or a tool of an `on_demand` server that the
 * call starts.
 */
import type { McpHost } from './api.js';
import { createDeferredTools } from './deferred-tools.js';
import { createOnDemand } from './on-demand.js';
import { createFleetSearch } from './tool-search.js';
import type { ToolMount } from './tool-mount.js';
import type { ServerActorRef } from '../machines/registry.machine.js';
import { deniedMessage, isDenied } from '../approvals/policy.js';
import { errorResult, type AgentTool } from '../catalog/tools/agent-tool.js';
import { toAgentTool } from '../catalog/tools/adapter.js';
import { createReadResultTool, READ_RESULT_TOOL } from '../catalog/tools/read-result-tool.js';
import type { ResultSpill } from '../catalog/tools/result-spill.js';
import { SEARCH_TOOLS_NAME } from '../catalog/tools/search-tools-tool.js';
import type { ProjectionContext } from '../journal/projection.js';
import type { Selectors } from '../journal/selectors.js';
import type { JournalEventInput } from '../journal/index.js';
import type { AgentToolResult, ExecuteOptions } from '../catalog/index.js';
import { ADMIN_PRINCIPAL, type Principal, type PrincipalInput, type QuotaRefusal, type Quotas } from '../users/index.js';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { principalOf, toolVisible, visibleTo } from './access.js';
import type { Sessions } from './sessions.js';
import { modelVisible } from '../apps/tool-meta.js';
import { own } from '../records.js';
import { checkOptions } from '../checked-options.js';
import { z } from 'zod';

export interface AgentToolsOptions {
  mount: ToolMount;
  spill: ResultSpill;
  selectors: Selectors;
  projected(): ProjectionContext;
  servers(): Record<string, ServerActorRef>;
  current(name: string): ServerActorRef | undefined;
  stopping(): boolean;
  /** Starts re-listing expired catalogs in the background: every read does. */
  freshenSoon(): void;
  /** Journals each call of a server's tool (`tool.called`). */
  append(event: JournalEventInput): void;
  /** Each user's calls per minute and calls at once (the admin is not limited). */
  quotas: Quotas;
  /** The sessions of per_user servers: their tools and calls. */
  sessions: Sessions;
}

/**
 * The listings' options, checked as `createMcpHost`'s are: a misspelled or
 * mistyped `loading` listed every tool eagerly, unseen. The principal is
 * checked by its own parser, which names its field.
 */
const ToolsOptionsSchema = z.strictObject({ loading: z.enum(['eager', 'deferred']), principal: z.unknown() }).partial();
const AllToolsOptionsSchema = z.strictObject({ principal: z.unknown() }).partial();

export type AgentTools = Pick<McpHost, 'tools' | 'allTools' | 'searchTools' | 'hasTool' | 'tool' | 'toolServer' | 'callTool'>;

/**
 * An app's call of a tool of its server (`name` is the tool's `{server}__{tool}`),
 * within the principal's quota and journaled as theirs, like an agent's.
 */
export type AppCallMeter = (server: string, name: string, principal: Principal | undefined, run: () => Promise<CallToolResult>) => Promise<CallToolResult>;

/** How a metered call's result tells its server, whether it failed, and what a refusal answers. */
interface ResultShape<T> {
  server(result: T | undefined): string | undefined;
  isError(result: T): boolean;
  refused(refusal: QuotaRefusal): T;
  /** The call's signal: an error result once it aborted is the cancellation's answer. */
  signal?: AbortSignal | undefined;
}

/** The answer to a model's call of an app-only tool: it exists, and only its app may call it. */
export function appOnlyMessage(name: string, server: string): string {
  return `tool "${name}" is app-only: only the app of server "${server}" may call it (through its app bridge), never a model`;
}

export function createAgentTools(options: AgentToolsOptions): AgentTools & { meterAppCall: AppCallMeter } {
  // Taken apart, not kept: the options object itself dies once the host is made.
  const { mount, spill, selectors, projected, current, freshenSoon, sessions, append, quotas } = options;
  /** Made when first listed or called: most hosts never spill a result. */
  let readResultTool: AgentTool | undefined;
  const readResult = (): AgentTool => (readResultTool ??= createReadResultTool(spill));
  /** `read_result` is listed only while a result of the principal's is kept: a model needs it once a spill note has named it. */
  const withReadResult = (tools: AgentTool[], principal: Principal | undefined): AgentTool[] =>
    spill.hasResults(principal?.id) ? [...tools, readResult()] : tools;
  /** The server a tool name belongs to (see `toolOwner`). */
  const ownerByName = (tool: string): string | undefined => selectors.toolOwner(projected(), tool);
  const onDemand = createOnDemand({ current, projected, stopping: options.stopping });
  const fleetSearch = createFleetSearch(projected, selectors, (server) => sessions.listings(server));
  const deferredTools = createDeferredTools({ servers: options.servers, search: fleetSearch, onDemand });

  /** Whether `principal` may see the tool `name` (a meta tool, or one nobody owns, is decided elsewhere). */
  function mayCall(name: string, principal: Principal | undefined): boolean {
    if (principal === undefined) return true;
    const tool = mount.get(name);
    if (tool) return toolVisible(projected(), tool.server, tool.originalName, principal);
    const perUser = sessions.owner(name, principal.id);
    if (perUser) return toolVisible(projected(), perUser.server, perUser.original, principal);
    const owner = ownerByName(name);
    if (owner === undefined) return true;
    const original = own(projected().servers, owner)?.known_tools?.find((known) => known.name === name)?.original;
    return toolVisible(projected(), owner, original ?? name, principal);
  }

  /** Whether a call of `name` can reach a server: a mounted tool, a per_user server's, or one an `on_demand` server starts for. */
  function reachable(name: string): boolean {
    if (mount.get(name) !== undefined || sessions.owner(name) !== undefined) return true;
    const owner = ownerByName(name);
    return owner !== undefined && onDemand.knows(owner, name);
  }

  /**
   * Runs a call within the principal's quota and journals it as theirs: how
   * it ended and how long it took (a meta tool's or an unknown tool's call is
   * no server's). A call over quota is answered at once and not made.
   */
  async function metered<T>(name: string, principal: Principal | undefined, run: () => Promise<T>, shape: ResultShape<T>): Promise<T> {
    const started = performance.now();
    const record = (result: T | undefined, refused?: QuotaRefusal['limit']) => {
      const server = shape.server(result);
      if (!server || own(projected().servers, server) === undefined) return;
      append({
        type: 'tool.called',
        server,
        tool: name,
        principal: principal?.id ?? ADMIN_PRINCIPAL,
        outcome: result === undefined || (shape.isError(result) && shape.signal?.aborted === true) ? 'cancelled' : shape.isError(result) ? 'error' : 'ok',
        duration_ms: Math.round(performance.now() - started),
        ...(refused !== undefined && { refused_by: refused }),
      });
    };
    // Only a call that can reach a server counts: a name no server offers is answered without using up the quota.
    const admission = principal === undefined || !reachable(name) ? undefined : quotas.admit(principal.id, principal.quota);
    if (admission?.admitted === false) {
      const result = shape.refused(admission.refusal);
      record(result, admission.refusal.limit);
      return result;
    }
    try {
      const result = await run();
      record(result);
      return result;
    } catch (error) {
      record(undefined);
      throw error;
    } finally {
      admission?.release();
    }
  }

  /** An agent's call of a tool by name, metered. */
  function journaled(name: string, args: Record<string, unknown>, callOptions: ExecuteOptions | undefined, principal: Principal | undefined) {
    return metered(name, principal, () => call(name, args, callOptions), {
      signal: callOptions?.signal,
      server: (result) => result?.details.server || ownerByName(name),
      isError: (result) => result.details.is_error,
      refused({ limit, retry_after_seconds, message }) {
        // `details.tool` is the server's own name of the tool, as on every other result of a call that reached it.
        const owner = ownerByName(name);
        const original =
          mount.get(name)?.originalName ??
          sessions.owner(name)?.original ??
          (owner === undefined ? undefined : own(projected().servers, owner)?.known_tools?.find((known) => known.name === name)?.original);
        const result = errorResult(owner ?? '', original ?? name, message);
        result.details.quota = { limit, retry_after_seconds };
        return result;
      },
    });
  }

  /** The call itself: a mounted tool, or one of an `on_demand` server that it starts. */
  async function call(name: string, args: Record<string, unknown>, callOptions: ExecuteOptions | undefined): Promise<AgentToolResult> {
    const tool = mount.get(name);
    if (tool === undefined) return unmountedCall(name, args, callOptions);
    if (!modelVisible(tool.ui)) return errorResult(tool.server, tool.originalName, appOnlyMessage(name, tool.server));
    return tool.execute(args, callOptions);
  }

  /** The call of a tool no ready server mounted: a per_user server's, an `on_demand` one's (started for it), or an error result. */
  async function unmountedCall(name: string, args: Record<string, unknown>, callOptions: ExecuteOptions | undefined): Promise<AgentToolResult> {
    const caller = principalOf(callOptions?.principal)?.id;
    const perUser = sessions.owner(name, caller);
    if (perUser) {
      // A tool learnt from a session, or one named before any session listed it: either goes through the caller's session.
      const learnt = sessions.learnt(perUser.server, caller)?.find((each) => each.name === name);
      return (learnt ?? perUserTool(perUser.server, perUser.original)).execute(args, callOptions ?? {});
    }
    const owner = ownerByName(name);
    if (owner && onDemand.knows(owner, name)) {
      // A tool its policy denies is refused here, without starting its server for nothing.
      const known = own(projected().servers, owner)?.known_tools?.find((tool) => tool.name === name);
      const original = known?.original;
      // An app-only tool is refused without starting its server: a model may never call it.
      if (known !== undefined && !modelVisible(known.ui)) return errorResult(owner, known.original, appOnlyMessage(name, owner));
      if (original !== undefined && isDenied(current(owner)?.getSnapshot().context.config.tools.approval, original)) {
        return errorResult(owner, original, deniedMessage(name, owner));
      }
      if (await onDemand.start(owner, callOptions?.signal)) {
        const started = mount.get(name);
        if (started) return started.execute(args, callOptions);
      }
    }
    if (owner) {
      const state = own(projected().servers, owner)!;
      // `details.tool` is the server's own name of it, as a call's result says it: known from its last listing.
      const original = state.known_tools?.find((tool) => tool.name === name)?.original ?? name;
      // Ready, yet without the tool: the server dropped it (list_changed) or the filter hides it now.
      if (state.state === 'ready') {
        return errorResult(owner, original, `tool "${name}" is unavailable: server "${owner}" no longer offers it`);
      }
      const why = `state: ${state.state}${state.error ? ` — ${state.error}` : ''}`;
      return errorResult(owner, original, `tool "${name}" is unavailable: server "${owner}" is not ready (${why})`);
    }
    return errorResult('', name, `unknown tool "${name}"`);
  }

  /** A tool of a per_user server no session has listed yet: its call connects the caller's session. */
  function perUserTool(server: string, original: string): AgentTool {
    return toAgentTool(server, { name: original, inputSchema: { type: 'object' } }, (tool, args, executeOptions) =>
      sessions.call(server, tool, args, executeOptions),
    );
  }

  async function callTool(name: string, args: Record<string, unknown>, given: ExecuteOptions | undefined): Promise<AgentToolResult> {
    // A name a model made up may be anything in plain JavaScript: it is a missing tool, not a throw.
    if (typeof name !== 'string') return errorResult('', String(name), `unknown tool ${JSON.stringify(name) ?? String(name)}`);
    // So may the options be: null is none, and a signal that is not one is said so, not failed on deep inside.
    const callOptions = given ?? {};
    if (callOptions.signal !== undefined && !(callOptions.signal instanceof AbortSignal)) {
      return errorResult('', name, 'callTool: options.signal must be an AbortSignal');
    }
    let principal: Principal | undefined;
    try {
      principal = principalOf(callOptions.principal);
    } catch (error) {
      // A malformed principal is the caller's mistake, answered as a result like every other.
      return errorResult('', name, `callTool: options.${(error as Error).message}`);
    }
    // Never a server's tool: those are all `{server}__{tool}`.
    if (name === READ_RESULT_TOOL) return readResult().execute(args, callOptions);
    if (name === SEARCH_TOOLS_NAME) return deferredTools.searchTool(principal).execute(args, callOptions);
    // A tool the principal may not see answers as a missing one would: its name tells them nothing.
    if (!mayCall(name, principal)) return errorResult('', name, `unknown tool "${name}"`);
    return journaled(name, args, callOptions, principal);
  }

  /** The tools handed out, by the tool they call and the principal they were listed for (none: the admin). */
  const forAdmin = new WeakMap<AgentTool, AgentTool>();
  const forPrincipal = new WeakMap<PrincipalInput, WeakMap<AgentTool, AgentTool>>();
  /**
   * A tool as the embedder gets it: its `execute` is `callTool` (access rules,
   * quota, journal, the caller's own session), as the principal it was listed
   * for unless the call names another. The mount's own tool would reach the
   * server directly, past all of them.
   */
  function handedOut(tool: AgentTool, listedFor: PrincipalInput | undefined): AgentTool {
    // One per tool and principal given: a tool unchanged between two listings is the same object in both.
    let made = listedFor === undefined ? forAdmin : forPrincipal.get(listedFor);
    if (made === undefined) forPrincipal.set(listedFor!, (made = new WeakMap()));
    let out = made.get(tool);
    if (out === undefined) {
      out = {
        ...tool,
        execute: (args, executeOptions) =>
          callTool(tool.name, args, listedFor === undefined || executeOptions?.principal !== undefined ? executeOptions : { ...executeOptions, principal: listedFor }),
      };
      made.set(tool, out);
    }
    return out;
  }

  return {
    meterAppCall: (server, name, principal, run) =>
      metered(name, principal, run, {
        server: () => server,
        isError: (result) => result.isError === true,
        refused: ({ message }) => ({ content: [{ type: 'text', text: message }], isError: true }),
      }),

    tools(toolOptions) {
      checkOptions('tools', ToolsOptionsSchema, toolOptions);
      freshenSoon();
      const principal = principalOf(toolOptions?.principal);
      const tools = deferredTools.marked(
        visibleTo(projected(), [...mount.list().filter((tool) => modelVisible(tool.ui)), ...sessions.tools(principal?.id)], principal),
      );
      const listed = withReadResult(toolOptions?.loading === 'deferred' ? deferredTools.deferred(tools, principal) : tools, principal);
      return listed.map((tool) => handedOut(tool, toolOptions?.principal));
    },

    allTools(allOptions) {
      checkOptions('allTools', AllToolsOptionsSchema, allOptions);
      freshenSoon();
      const principal = principalOf(allOptions?.principal);
      return visibleTo(projected(), [...mount.list(), ...sessions.tools(principal?.id)], principal).map((tool) => handedOut(tool, allOptions?.principal));
    },

    searchTools(query, searchOptions) {
      freshenSoon();
      return fleetSearch.search(query, searchOptions);
    },

    hasTool(name, hasOptions) {
      if (name === SEARCH_TOOLS_NAME || name === READ_RESULT_TOOL) return true;
      if (!mayCall(name, principalOf(hasOptions?.principal))) return false;
      if (mount.get(name) !== undefined || sessions.owner(name) !== undefined) return true;
      const owner = ownerByName(name);
      return owner !== undefined && current(owner)?.getSnapshot().context.config.start === 'on_demand' && onDemand.knows(owner, name);
    },

    tool(name, toolOptions) {
      const principal = principalOf(toolOptions?.principal);
      const registered = mount.get(name);
      const owner = registered === undefined ? sessions.owner(name, principal?.id) : undefined;
      const tool =
        registered === undefined
          ? owner && sessions.learnt(owner.server, principal?.id)?.find((learnt) => learnt.name === name)
          : modelVisible(registered.ui) && mount.offered(registered) ? registered : undefined;
      return tool !== undefined && mayCall(name, principal) ? handedOut(tool, toolOptions?.principal) : undefined;
    },

    toolServer(name, ownerOptions) {
      const principal = principalOf(ownerOptions?.principal);
      const tool = mount.get(name);
      const server = tool === undefined ? sessions.owner(name, principal?.id)?.server : modelVisible(tool.ui) && mount.offered(tool) ? tool.server : undefined;
      return server !== undefined && mayCall(name, principal) ? server : undefined;
    },

    callTool,
  };
}
