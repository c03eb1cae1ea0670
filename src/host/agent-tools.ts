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
import { createReadResultTool, READ_RESULT_TOOL } from '../catalog/tools/read-result-tool.js';
import type { ResultSpill } from '../catalog/tools/result-spill.js';
import { SEARCH_TOOLS_NAME } from '../catalog/tools/search-tools-tool.js';
import type { ProjectionContext } from '../journal/projection.js';
import type { Selectors } from '../journal/selectors.js';
import { modelVisible } from '../apps/tool-meta.js';

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
}

export type AgentTools = Pick<McpHost, 'tools' | 'allTools' | 'searchTools' | 'hasTool' | 'callTool'>;

/** The answer to a model's call of an app-only tool: it exists, and only its app may call it. */
export function appOnlyMessage(name: string, server: string): string {
  return `tool "${name}" is app-only: only the app of server "${server}" may call it (through its app bridge), never a model`;
}

export function createAgentTools(options: AgentToolsOptions): AgentTools {
  const { mount, spill, selectors, projected, current, freshenSoon } = options;
  const readResult = createReadResultTool(spill);
  /** `read_result` is listed only while a result is kept: a model needs it once a spill note has named it. */
  const withReadResult = (tools: AgentTool[]): AgentTool[] => (spill.hasResults() ? [...tools, readResult] : tools);
  /** The server a tool name belongs to (see `toolOwner`). */
  const ownerByName = (tool: string): string | undefined => selectors.toolOwner(projected(), tool);
  const onDemand = createOnDemand({ current, projected, stopping: options.stopping });
  const fleetSearch = createFleetSearch(projected, selectors);
  const deferredTools = createDeferredTools({ servers: options.servers, search: fleetSearch, onDemand });

  return {
    tools(toolOptions) {
      freshenSoon();
      const tools = deferredTools.marked(mount.list().filter((tool) => modelVisible(tool.ui)));
      return withReadResult(toolOptions?.loading === 'deferred' ? deferredTools.deferred(tools) : tools);
    },

    allTools() {
      freshenSoon();
      return mount.list();
    },

    searchTools(query, searchOptions) {
      freshenSoon();
      return fleetSearch.search(query, searchOptions);
    },

    hasTool(name) {
      if (mount.get(name) !== undefined || name === SEARCH_TOOLS_NAME || name === READ_RESULT_TOOL) return true;
      const owner = ownerByName(name);
      return owner !== undefined && current(owner)?.getSnapshot().context.config.start === 'on_demand' && onDemand.knows(owner, name);
    },

    async callTool(name, args, callOptions) {
      // Never a server's tool: those are all `{server}__{tool}`.
      if (name === READ_RESULT_TOOL) return readResult.execute(args, callOptions);
      const tool = mount.get(name);
      if (tool && !modelVisible(tool.ui)) return errorResult(tool.server, tool.originalName, appOnlyMessage(name, tool.server));
      if (tool) return tool.execute(args, callOptions);
      if (name === SEARCH_TOOLS_NAME) return deferredTools.searchTool.execute(args, callOptions);
      const owner = ownerByName(name);
      if (owner && onDemand.knows(owner, name)) {
        // A tool its policy denies is refused here, without starting its server for nothing.
        const known = projected().servers[owner]?.known_tools?.find((tool) => tool.name === name);
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
        const state = projected().servers[owner]!;
        // Ready, yet without the tool: the server dropped it (list_changed) or the filter hides it now.
        if (state.state === 'ready') {
          return errorResult(owner, name, `tool "${name}" is unavailable: server "${owner}" no longer offers it`);
        }
        const why = `state: ${state.state}${state.error ? ` — ${state.error}` : ''}`;
        return errorResult(owner, name, `tool "${name}" is unavailable: server "${owner}" is not ready (${why})`);
      }
      return errorResult('', name, `unknown tool "${name}"`);
    },
  };
}
