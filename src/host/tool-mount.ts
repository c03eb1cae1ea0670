/**
 * Turns a ready server's tool listing into agent tools and mounts them: what
 * the server machine's `tools.register` / `tools.unregister` ask for. Each
 * (un)registration is journaled, and which tools an agent sees is derived
 * from the journal's projection (`visibleTools`: the one place that decides
 * who wins a shared name, kept by the host's selectors); the mount only holds
 * the executable behind each name.
 *
 * A registration does what the journal needs and no more: one entry (name,
 * original, description) per tool, kept from the previous registration for
 * every listing item that did not change (catalog-sync keeps the unchanged
 * items' objects, in their places). Agent tools are built when first asked
 * for, and the index by name when first looked up: a re-sync of 5,000 tools
 * in which one changed makes one entry and allocates little more than the
 * event's list, so it neither builds 5,000 agent tools nor wakes the garbage
 * collector while the new listing is still alive.
 */
import type { Tool } from '@modelcontextprotocol/client';
import type { ServerActorRef } from '../machines/registry.machine.js';
import { reconnected, retriesAfterReconnect } from '../machines/call-retry.js';
import { topState } from '../machines/server.queries.js';
import { resourceAgentTools } from '../connection/capabilities/resources.js';
import { secretValues } from '../config/masking.js';
import type { ServerConfig, ToolFilter } from '../config/index.js';
import { filterTools } from '../connection/connection.js';
import type { LiveConnection } from '../connection/index.js';
import type { JournalEventInput, ToolEntry } from '../journal/index.js';
import { shadowedByRegistration, type ProjectionContext, type RegisteredServer } from '../journal/projection.js';
import { createSelectors, type Selectors } from '../journal/selectors.js';
import type { ResultSpill } from '../catalog/index.js';
import type { Approvals } from '../approvals/index.js';
import { approvalPolicy, deniedMessage } from '../approvals/policy.js';
import {
  MAX_DESCRIPTION_BYTES,
  namespaceToolName,
  toAgentTool,
  type AgentToolOptions,
  type CallFunction,
} from '../catalog/tools/adapter.js';
import type { AgentTool } from '../catalog/index.js';
import { toolUiRef } from '../apps/tool-meta.js';
import { own } from '../records.js';

/**
 * One registration of a server's tools on one connection with one way of
 * treating results. Per listing item, by its place in the listing: the item, its journal
 * entry, its agent tool once built. mcp-fleet's resource tools follow the
 * items (their entries after the items' entries), built at once.
 */
interface Registration {
  /** The config fields its agent tools treat results by (see `resultOptions`), as one comparable key. */
  resultPolicy: string;
  /** Builds the agent tool of a listing item. */
  build(tool: Tool): AgentTool;
  items: readonly Tool[];
  /** The items' entries, then the resource tools'. */
  entries: ToolEntry[];
  agents: Array<AgentTool | undefined>;
  resourceAgents: AgentTool[];
  /** Places of the items the filter shows, in order; null when it shows every item. */
  shown: number[] | null;
  /** What was journaled: the shown items' entries, then the resource tools' (`entries` itself when every item is shown). */
  journaled: ToolEntry[];
  /**
   * Agent-facing name → place (a resource tool's place is -1 - its index),
   * made when first looked up. Last wins a repeated name, in the place the
   * name first appeared, as a Map of the tools by name would have it.
   */
  byName: Map<string, number> | null;
  /** Whether the listing repeats a name (null: not known yet). */
  repeats: boolean | null;
  /** When it was mounted, by the mount's count of registrations: later registrations win shared names. */
  at: number;
}

/** The config fields a registration's agent tools treat results by, as one comparable key. */
function resultPolicyOf(config: ServerConfig): string {
  // Approvals too: a changed `tools.approval` is a retool, whose agent tools must be built again.
  return [
    config.max_result_bytes,
    config.large_results,
    config.results_ttl_seconds,
    config.results_max_bytes,
    JSON.stringify(config.tools?.approval ?? {}),
    config.approval_from_annotations,
  ].join(' ');
}

/** Fills the resource tools' entries, after the items'; says whether each has the name it had in `previous`. */
function fillResourceEntries(registration: Registration, previous: Registration | undefined): boolean {
  const { items, entries } = registration;
  let samePlaces = true;
  registration.resourceAgents.forEach((agent, index) => {
    const entry = { name: agent.name, original: agent.originalName, description: agent.description, parameters: agent.parameters };
    entries[items.length + index] = entry;
    samePlaces &&= entry.name === previous?.entries[items.length + index]?.name;
  });
  return samePlaces;
}

/** Sets which of a registration's items its filter shows, and journals only those (and the resource tools). */
function showFiltered(registration: Registration, filter: ToolFilter): void {
  const { items, entries } = registration;
  const shown = new Set(filterTools(items, filter));
  const places: number[] = [];
  for (let place = 0; place < items.length; place += 1) if (shown.has(items[place] as Tool)) places.push(place);
  registration.shown = places;
  registration.journaled = [...places.map((place) => entries[place] as ToolEntry), ...entries.slice(items.length)];
}

export interface ToolMount {
  /** Mounts `live`'s tools (through `filter`) as `ref`'s server's: replaces what it had in one step. */
  register(ref: ServerActorRef, live: LiveConnection, filter: ToolFilter): void;
  /** Unmounts the server's tools, unless a successor actor of the same name mounted its own. */
  unregister(ref: ServerActorRef, isCurrent: boolean): void;
  /** Every visible agent tool. */
  list(): AgentTool[];
  /** The registered tool of that name, a `deny` one too (a call of it is refused): see `offered`. */
  get(name: string): AgentTool | undefined;
  /** Whether a model is offered the tool: every one but a `deny` one. */
  offered(tool: AgentTool): boolean;
  /** Every tool the server mounted, shadowed ones too. */
  forServer(server: string): AgentTool[];
  /** How many of the server's tools are registered: not shadowed by a later registration of the name (read from this mount, not the projection). */
  registeredCount(server: string): number;
  /**
   * The call of `server`'s listed tool `original` (its name there) that an app
   * of that server makes: through the same approval gate as the agent tool,
   * answering the server's own result (not converted nor bounded for a model).
   * Undefined when the server mounted no such tool (or its filter hides it).
   */
  appCall(server: string, original: string): CallFunction | undefined;
}

export interface ToolMountOptions {
  append(event: JournalEventInput): void;
  /**
   * The projection now. It may not hold the mount's latest appends yet (a
   * shared store folds an event in once stored): what a registration hides
   * is decided by what this mount registered, and the tools an agent sees
   * follow once the projection does.
   */
  projected(): ProjectionContext;
  /** The host's selectors (who wins a name, the visible tools); absent: the mount's own. */
  selectors?: Pick<Selectors, 'visibleTools' | 'toolOwner'>;
  /** Where results above `max_result_bytes` are kept for servers with `large_results: "spill"`; absent: they are truncated. */
  spill?: ResultSpill;
  /** The gate of `ask` tools (`tools.approval`); absent: every `ask` call is denied. */
  approvals?: Approvals;
}

export function createToolMount({ append, projected, selectors = createSelectors(), spill, approvals }: ToolMountOptions): ToolMount {
  /** Agent tools whose approval is `deny`: never offered (`list`), and a call is refused. */
  const denied = new WeakSet<AgentTool>();
  /** Per agent tool, the call behind it (approvals included) that answers the server's own `CallToolResult`. */
  const gatedCalls = new WeakMap<AgentTool, CallFunction>();
  /** Per server, its mounted registration; in the order they registered (a re-registration moves to the end). */
  const mounted = new Map<string, Registration>();
  /** Per connection, its latest registration: what a re-sync or a filter change keeps from. */
  const latest = new WeakMap<LiveConnection, Registration>();
  /**
   * Per journaled tool name, the servers whose mounted registration has it:
   * what a registration may hide is looked up by its own names, so a start
   * does not walk every mounted server (n servers starting cost n² before).
   */
  const holders = new Map<string, Set<string>>();
  let registrations = 0;

  function agentAt(registration: Registration, place: number): AgentTool {
    if (place < 0) return registration.resourceAgents[-1 - place] as AgentTool;
    let agent = registration.agents[place];
    if (agent === undefined) {
      agent = registration.build(registration.items[place] as Tool);
      registration.agents[place] = agent;
    }
    return agent;
  }

  function byNameOf(registration: Registration): Map<string, number> {
    if (registration.byName === null) {
      const byName = new Map<string, number>();
      const { entries, shown } = registration;
      const { length } = registration.items;
      if (shown === null) for (let place = 0; place < length; place += 1) byName.set((entries[place] as ToolEntry).name, place);
      else shown.forEach((place) => byName.set((entries[place] as ToolEntry).name, place));
      for (let index = 0; index < registration.resourceAgents.length; index += 1) {
        byName.set((entries[length + index] as ToolEntry).name, -1 - index);
      }
      registration.byName = byName;
    }
    return registration.byName;
  }

  /**
   * What this mount registered, as the projection will hold it once it has
   * folded in every registration appended, of the servers that matter to a
   * registration of `tools` by `server`: itself and those holding one of the
   * names (no other can lose a name to it).
   */
  function registeredBefore(server: string, tools: readonly ToolEntry[]): Record<string, RegisteredServer> {
    const servers: Record<string, RegisteredServer> = {};
    const add = (name: string): void => {
      const registration = mounted.get(name);
      if (registration !== undefined && own(servers, name) === undefined) {
        servers[name] = { name, registered_at: registration.at, tools: registration.journaled };
      }
    };
    add(server);
    tools.forEach((tool) => holders.get(tool.name)?.forEach(add));
    return servers;
  }

  /** Keeps `holders` to `server`'s mounted tools: `next` replaces `previous` (either may be none). */
  function hold(server: string, previous: readonly ToolEntry[], next: readonly ToolEntry[]): void {
    for (const tool of previous) holders.get(tool.name)?.delete(server);
    for (const tool of next) {
      let holding = holders.get(tool.name);
      if (holding === undefined) holders.set(tool.name, (holding = new Set()));
      holding.add(server);
    }
    for (const tool of previous) if (holders.get(tool.name)?.size === 0) holders.delete(tool.name);
  }

  /** The agent tool mounted under a name by a server, if it mounted one. */
  function mountedAs(server: string, name: string): AgentTool | undefined {
    const registration = mounted.get(server);
    const place = registration === undefined ? undefined : byNameOf(registration).get(name);
    return registration === undefined || place === undefined ? undefined : agentAt(registration, place);
  }

  /** The visible tools (the projection decides who wins a name) as the agent tools mounted now; a denied one is never offered. */
  function visibleList(): AgentTool[] {
    const found: AgentTool[] = [];
    for (const tool of selectors.visibleTools(projected())) {
      const agent = mountedAs(tool.server, tool.name);
      if (agent !== undefined && !denied.has(agent)) found.push(agent);
    }
    return found;
  }

  function ensureReady(ref: ServerActorRef, name: string) {
    const snapshot = ref.getSnapshot();
    if (!snapshot.hasTag('callable')) throw new Error(`server "${name}" is not ready (state: ${topState(snapshot)})`);
    return snapshot;
  }

  /** How a server's agent tools treat results: bounded by `max_result_bytes`, a bigger one spilled when `large_results` says so. */
  function resultOptions(config: ServerConfig): AgentToolOptions {
    const options: AgentToolOptions = { maxResultBytes: config.max_result_bytes };
    if (spill !== undefined && config.large_results === 'spill') {
      options.spill = { store: spill, limits: { ttlSeconds: config.results_ttl_seconds, maxBytes: config.results_max_bytes } };
    }
    return options;
  }

  /** The call of a listing item on `live`, as it was before approvals: what an `auto` tool runs, and an allowed `ask` one. */
  function directCall(ref: ServerActorRef, name: string, live: LiveConnection, tool: Tool): CallFunction {
    // Returned, not bound to a name: under tsx, esbuild's keepNames gives every named
    // function created per tool a defineProperty of its name.
    return async (original, args, callOptions) => {
      const snapshot = ensureReady(ref, name);
      // An on-demand server stops once idle: it counts its calls (an eager one is spared the events).
      const counted = snapshot.context.config.start === 'on_demand';
      if (counted) ref.send({ type: 'call.started' });
      try {
        return await live.connection.callTool(original, args, callOptions);
      } catch (failure) {
        if (!retriesAfterReconnect(tool, failure, callOptions.signal)) throw failure;
        const again = await reconnected(ref, live, snapshot.context.config.call_timeout_seconds * 1000);
        if (!again) throw failure;
        // The new connection's idle watch has not seen this call: it runs on there.
        if (counted) ref.send({ type: 'call.started' });
        return again.connection.callTool(original, args, callOptions);
      } finally {
        if (counted) ref.send({ type: 'call.finished' });
      }
    };
  }

  /**
   * The agent tool of a listing item. Its approval (`tools.approval`) is
   * decided once, here: an `auto` tool calls straight through, as if there
   * were no approvals; an `ask` tool waits at the gate first; a `deny` tool is
   * never called. Every call passes here — `callTool`, the API, an agent loop
   * holding the tool — so this is the one place the gate needs to be.
   */
  function agentTool(
    ref: ServerActorRef,
    name: string,
    live: LiveConnection,
    tool: Tool,
    results: AgentToolOptions,
    config: ServerConfig,
  ): AgentTool {
    const policy = approvalPolicy(config, tool.name, tool.annotations);
    /** The agent tool of `gated`, which an app's bridge may also call for the server's own result. */
    const wrap = (gated: CallFunction): AgentTool => {
      const agent = toAgentTool(name, tool, gated, results);
      gatedCalls.set(agent, gated);
      return agent;
    };
    if (policy === 'auto') return wrap(directCall(ref, name, live, tool));
    const agentName = namespaceToolName(name, tool.name);
    if (policy === 'deny') {
      const refused = wrap(async () => ({
        content: [{ type: 'text', text: deniedMessage(agentName, name) }],
        isError: true,
      }));
      denied.add(refused);
      return refused;
    }
    const call = directCall(ref, name, live, tool);
    return wrap(
      async (original, args, callOptions) => {
        if (approvals === undefined) {
          return { content: [{ type: 'text', text: `tool "${agentName}" needs approval and this host has no way to ask` }], isError: true };
        }
        const current = ref.getSnapshot().context.config;
        const verdict = await approvals.ask({
          server: name,
          tool: agentName,
          original,
          arguments: args,
          secrets: secretValues(current),
          timeoutSeconds: current.approval_timeout_seconds,
          principal: callOptions.principal?.id,
          signal: callOptions.signal,
          onWaiting: callOptions.onApproval,
        });
        if (!verdict.allowed) return { content: [{ type: 'text', text: verdict.message }], isError: true };
        return call(original, args, callOptions);
      },
    );
  }

  /**
   * Whether a registration's listing repeats a name. Read from its index by
   * name when it has one and every item is shown (fewer names than entries;
   * an agent-facing name shared by two originals also counts, which only
   * costs a lookup), else counted once.
   */
  function repeats(registration: Registration): boolean {
    if (registration.repeats === null) {
      registration.repeats =
        registration.byName !== null && registration.shown === null
          ? registration.byName.size < registration.entries.length
          : new Set(registration.items.map((tool) => tool.name)).size < registration.items.length;
    }
    return registration.repeats;
  }

  /**
   * Fills `next`'s entries and agent tools: an item that `previous` (the same
   * connection and result policy) mounted keeps its entry and agent tool, looked up
   * in its place first and, if the listing moved, wherever it was; any other
   * item gets a new entry. Says whether every place has the name it had in
   * `previous` (then an index by name of `previous` serves `next` as well).
   */
  function fill(next: Registration, server: string, previous: Registration | undefined): boolean {
    const { items, entries, agents } = next;
    let samePlaces = previous !== undefined && previous.items.length === items.length;
    /** Where `previous` had each item, once the listing moved. */
    let moved: Map<Tool, number> | null = null;
    for (let place = 0; place < items.length; place += 1) {
      const tool = items[place] as Tool;
      if (previous !== undefined) {
        const there = previous.items[place];
        let from = there === tool ? place : -1;
        // Another name in this place: the listing moved, find where the item was (also for a
        // changed item when names repeat: the same item may sit in another place of its name).
        if (from === -1 && (there?.name !== tool.name || repeats(previous))) {
          if (moved === null) {
            moved = new Map();
            for (let at = 0; at < previous.items.length; at += 1) moved.set(previous.items[at] as Tool, at);
          }
          from = moved.get(tool) ?? -1;
        }
        if (from !== -1) {
          const entry = previous.entries[from] as ToolEntry;
          entries[place] = entry;
          agents[place] = previous.agents[from];
          samePlaces &&= from === place;
          continue;
        }
      }
      const description = tool.description ?? tool.title ?? '';
      // At most 3 UTF-8 bytes per UTF-16 unit: such a description is within the adapter's bound and
      // kept as is; a longer one may be cut by the adapter, so its agent tool says how.
      let entry: ToolEntry;
      if (typeof description === 'string' && description.length * 3 <= MAX_DESCRIPTION_BYTES) {
        // A changed tool in the place of one of the same name: the same agent-facing name.
        const same = previous?.items[place]?.name === tool.name ? previous.entries[place] : undefined;
        entry = { name: same?.name ?? namespaceToolName(server, tool.name), original: tool.name, description, parameters: tool.inputSchema };
      } else {
        const agent = next.build(tool);
        agents[place] = agent;
        entry = { name: agent.name, original: agent.originalName, description: agent.description, parameters: agent.parameters };
      }
      const title = tool.title ?? tool.annotations?.title;
      if (title !== undefined) entry.title = title;
      const ui = toolUiRef(tool);
      if (ui !== undefined) entry.ui = ui;
      entries[place] = entry;
      samePlaces &&= entry.name === (previous as Registration).entries[place]?.name;
    }
    return samePlaces;
  }

  return {
    register(ref, live, filter) {
      const { name, config } = ref.getSnapshot().context;
      const maxResultBytes = config.max_result_bytes;
      const results = resultOptions(config);
      const resultPolicy = resultPolicyOf(config);
      const items = live.connection.allTools;
      const kept = latest.get(live);
      const previous = kept?.resultPolicy === resultPolicy ? kept : undefined;
      const resourceAgents = resourceAgentTools(name, live.connection.client, {
        filter,
        ownTools: items,
        timeoutMs: config.call_timeout_seconds * 1000,
        maxResultBytes,
        secrets: secretValues(config),
        ensureReady: () => void ensureReady(ref, name),
      });
      const registration: Registration = {
        resultPolicy,
        build: previous?.build ?? ((tool) => agentTool(ref, name, live, tool, results, config)),
        items,
        entries: new Array<ToolEntry>(items.length + resourceAgents.length),
        agents: new Array<AgentTool | undefined>(items.length),
        resourceAgents,
        shown: null,
        journaled: [],
        byName: null,
        repeats: null,
        at: 0,
      };
      // Every listed item, filtered or not: a tool the filter shows again keeps its agent tool.
      let samePlaces = fill(registration, name, previous);
      if (resourceAgents.length > 0) samePlaces = fillResourceEntries(registration, previous) && samePlaces;
      samePlaces &&= previous?.entries.length === registration.entries.length;
      if (filter.include === null && filter.exclude.length === 0) {
        registration.journaled = registration.entries;
        // The same names in the same places: the same index by name.
        if (samePlaces && previous?.shown === null) registration.byName = previous.byName;
      } else {
        showFiltered(registration, filter);
      }
      latest.set(live, registration);
      // Last registered wins a shared name; the loss is journaled (`tool.shadowed`). What it hides is decided by
      // what this mount registered before, which the projection holds only once it has folded every append in.
      const shadowed = shadowedByRegistration({ servers: registeredBefore(name, registration.journaled) }, name, registration.journaled);
      hold(name, mounted.get(name)?.journaled ?? [], registration.journaled);
      registration.at = registrations += 1;
      mounted.delete(name);
      mounted.set(name, registration);
      // An unchanged tool's entry is the object journaled before.
      append({ type: 'tools.registered', server: name, tools: registration.journaled });
      shadowed.forEach(({ tool, shadowed_server }) => append({ type: 'tool.shadowed', server: name, tool, shadowed_server }));
    },

    unregister(ref, isCurrent) {
      if (!isCurrent) return;
      const { name } = ref.getSnapshot().context;
      const registration = mounted.get(name);
      const removed = registration === undefined ? [] : [...byNameOf(registration).keys()];
      if (registration !== undefined) hold(name, registration.journaled, []);
      mounted.delete(name);
      append({ type: 'tools.unregistered', server: name, tools: removed });
    },

    list: visibleList,
    get(name) {
      // The winner of a name, without resolving every visible tool (a call right after a re-sync of 5,000 tools).
      const owner = selectors.toolOwner(projected(), name);
      return owner === undefined ? undefined : mountedAs(owner, name);
    },
    offered: (tool) => !denied.has(tool),
    forServer(server) {
      const registration = mounted.get(server);
      if (registration === undefined) return [];
      return [...byNameOf(registration).values()].map((place) => agentAt(registration, place));
    },
    registeredCount(server) {
      const registration = mounted.get(server);
      if (registration === undefined) return 0;
      const later = [...mounted.values()].filter((other) => other.at > registration.at);
      let count = 0;
      for (const name of byNameOf(registration).keys()) if (!later.some((other) => byNameOf(other).has(name))) count += 1;
      return count;
    },
    appCall(server, original) {
      const registration = mounted.get(server);
      if (registration === undefined) return undefined;
      const { items, shown } = registration;
      const places = shown ?? items.keys();
      let found: number | undefined;
      // The last item of the name, as the server's own tools/call would pick.
      for (const place of places) if ((items[place] as Tool).name === original) found = place;
      return found === undefined ? undefined : gatedCalls.get(agentAt(registration, found));
    },
  };
}
