/**
 * Turns a ready server's tool listing into agent tools and mounts them: what
 * the server machine's `tools.register` / `tools.unregister` ask for. Each
 * (un)registration is journaled, and which tools an agent sees is read from
 * the journal's projection (`visibleTools`: the one place that decides who
 * wins a shared name); the mount only holds the executable behind each name.
 * A re-sync rebuilds only the tools whose listing item changed (catalog-sync
 * keeps the unchanged items' objects).
 */
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ServerActorRef } from '../machines/registry.machine.js';
import { reconnected, retriesAfterReconnect, topState } from '../machines/server.queries.js';
import { resourceAgentTools } from '../services/capabilities/resources.js';
import { secretValues } from '../services/config/credentials.js';
import type { ToolFilter } from '../services/config/schema.js';
import { filterTools } from '../services/connection/connection.js';
import type { LiveConnection } from '../services/connection/live-connection.js';
import type { JournalEventInput } from '../services/journal/events.js';
import { shadowedByRegistration, visibleTools, type ProjectionContext, type VisibleTool } from '../services/journal/projection.js';
import { toAgentTool } from '../services/tools/adapter.js';
import type { AgentTool } from '../services/tools/agent-tool.js';

/** Agent tools built on one connection with one result bound, by the listing item they wrap. */
interface BuiltTools {
  maxResultBytes: number;
  tools: WeakMap<Tool, AgentTool>;
}

export interface ToolMount {
  /** Mounts `live`'s tools (through `filter`) as `ref`'s server's: replaces what it had in one step. */
  register(ref: ServerActorRef, live: LiveConnection, filter: ToolFilter): void;
  /** Unmounts the server's tools, unless a successor actor of the same name mounted its own. */
  unregister(ref: ServerActorRef, isCurrent: boolean): void;
  /** Every visible agent tool. */
  list(): AgentTool[];
  get(name: string): AgentTool | undefined;
  /** Every tool the server mounted, shadowed ones too. */
  forServer(server: string): AgentTool[];
  /** The server that last offered a tool of this name (for telling why a call cannot run). */
  lastOwner(name: string): string | undefined;
}

export interface ToolMountOptions {
  append(event: JournalEventInput): void;
  /** The projection now: it already holds every event appended. */
  projected(): ProjectionContext;
}

/** The agent tools an agent sees, and by name, for one list of visible tools. */
interface Visible {
  list: AgentTool[];
  byName: Map<string, AgentTool>;
}

export function createToolMount({ append, projected }: ToolMountOptions): ToolMount {
  /** Per server, its mounted tools by agent-facing name (a server's later tool of a name wins, as in the projection). */
  const mounted = new Map<string, Map<string, AgentTool>>();
  const builtTools = new WeakMap<LiveConnection, BuiltTools>();
  const owners = new Map<string, string>();
  // The projection's list is shared until the next registration: resolve it to agent tools once.
  const resolved = new WeakMap<readonly VisibleTool[], Visible>();

  function visible(): Visible {
    const tools = visibleTools(projected());
    let found = resolved.get(tools);
    if (found === undefined) {
      const list = tools.flatMap((tool) => mounted.get(tool.server)?.get(tool.name) ?? []);
      found = { list, byName: new Map(list.map((tool) => [tool.name, tool])) };
      resolved.set(tools, found);
    }
    return found;
  }

  /**
   * The agent tools built on a connection, by listing item: a re-sync keeps the
   * items that did not change, so only changed tools are built again. A new
   * `max_result_bytes` builds them all anew.
   */
  function builtToolsOf(live: LiveConnection, maxResultBytes: number): BuiltTools {
    let built = builtTools.get(live);
    if (built?.maxResultBytes !== maxResultBytes) {
      built = { maxResultBytes, tools: new WeakMap() };
      builtTools.set(live, built);
    }
    return built;
  }

  function ensureReady(ref: ServerActorRef, name: string) {
    const snapshot = ref.getSnapshot();
    if (!snapshot.matches('ready')) throw new Error(`server "${name}" is not ready (state: ${topState(snapshot)})`);
    return snapshot;
  }

  function agentTool(ref: ServerActorRef, name: string, live: LiveConnection, tool: Tool, built: BuiltTools): AgentTool {
    const kept = built.tools.get(tool);
    if (kept !== undefined) return kept;
    const made = toAgentTool(
      name,
      tool,
      async function callMountedTool(original, args, callOptions) {
        const snapshot = ensureReady(ref, name);
        try {
          return await live.connection.callTool(original, args, callOptions);
        } catch (failure) {
          if (!retriesAfterReconnect(tool, failure, callOptions.signal)) throw failure;
          const again = await reconnected(ref, live, snapshot.context.config.call_timeout_seconds * 1000);
          if (!again) throw failure;
          return again.connection.callTool(original, args, callOptions);
        }
      },
      { maxResultBytes: built.maxResultBytes },
    );
    built.tools.set(tool, made);
    return made;
  }

  return {
    register(ref, live, filter) {
      const { name, config } = ref.getSnapshot().context;
      const built = builtToolsOf(live, config.max_result_bytes);
      const tools = filterTools(live.connection.allTools, filter).map((tool) => agentTool(ref, name, live, tool, built));
      tools.push(
        ...resourceAgentTools(name, live.connection.client, {
          filter,
          ownTools: live.connection.allTools,
          timeoutMs: config.call_timeout_seconds * 1000,
          maxResultBytes: config.max_result_bytes,
          secrets: secretValues(config),
          ensureReady: () => void ensureReady(ref, name),
        }),
      );
      mounted.set(name, new Map(tools.map((tool) => [tool.name, tool])));
      for (const tool of tools) owners.set(tool.name, name);
      const before = projected();
      append({
        type: 'tools.registered',
        server: name,
        tools: tools.map((tool) => ({ name: tool.name, original: tool.originalName, description: tool.description })),
      });
      // Last registered wins a shared name; the loss is journaled (SPEC §5).
      for (const { tool, shadowed_server } of shadowedByRegistration(before, projected(), name)) {
        append({ type: 'tool.shadowed', server: name, tool, shadowed_server });
      }
    },

    unregister(ref, isCurrent) {
      if (!isCurrent) return;
      const { name } = ref.getSnapshot().context;
      const removed = [...(mounted.get(name)?.keys() ?? [])];
      mounted.delete(name);
      append({ type: 'tools.unregistered', server: name, tools: removed });
    },

    list: () => [...visible().list],
    get: (name) => visible().byName.get(name),
    forServer: (server) => [...(mounted.get(server)?.values() ?? [])],
    lastOwner: (name) => owners.get(name),
  };
}
