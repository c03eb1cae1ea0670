import _mitt from 'mitt';
import type { Emitter } from 'mitt';
import type { AgentTool } from './agent-tool.js';

// mitt ships CJS-typed declarations; under NodeNext the default import is typed as the namespace.
const mitt = _mitt as unknown as typeof _mitt.default;

/** Events of the registry; names are the agent-facing (namespaced) tool names. */
export type ToolRegistryEvents = {
  /** `server` now offers exactly `tools` (a replace, not an addition). */
  registered: { server: string; tools: string[] };
  /** All of `server`'s tools are gone. */
  unregistered: { server: string; tools: string[] };
  /** `server`'s `tool` replaced `shadowed_server`'s tool of the same name (last wins). */
  shadowed: { tool: string; server: string; shadowed_server: string };
};

/** What `register` did: the names now offered, and the tools it hid. */
export interface RegisterOutcome {
  registered: string[];
  /** Tools that were visible before this call and are hidden now; `server` is the loser. */
  shadowed: Array<{ tool: string; server: string }>;
}

/** Every tool of every ready server, by agent-facing name. */
export interface ToolRegistry {
  /** Replaces all tools of `server` in one step; it wins every name it offers. */
  register(server: string, tools: AgentTool[]): RegisterOutcome;
  /** Removes all tools of `server`; returns their names. Tools it shadowed become visible again. */
  unregister(server: string): string[];
  /** The visible tool of that name. */
  get(name: string): AgentTool | undefined;
  /** The server and original MCP tool name behind a visible name. */
  resolve(name: string): { server: string; tool: string } | undefined;
  /** Visible tools: servers in first-registration order, each server's tools in its own order. */
  list(): AgentTool[];
  /** All tools `server` registered, including those currently shadowed. */
  forServer(server: string): AgentTool[];
  /** Names of `server`'s tools currently hidden by another server's tool. */
  shadowed(server: string): string[];
  readonly events: Emitter<ToolRegistryEvents>;
}

interface ServerSlot {
  /** When this server last registered: the highest wins a shared name. */
  seq: number;
  tools: Map<string, AgentTool>;
}

/**
 * Creates an empty registry.
 *
 * Collisions: the server that registered last wins a name; the loser's tool
 * is kept, hidden, and reported (`shadowed`). When the winner unregisters or
 * stops offering that name, the most recently registered remaining server's
 * tool becomes visible again. No event announces that: `unregistered` /
 * `registered` of the winner imply it, and `shadowed(server)` is the live truth.
 * A re-register keeps the server's position in `list()` (stable prompts).
 */
export function createToolRegistry(): ToolRegistry {
  const servers = new Map<string, ServerSlot>();
  /** name → winning server; kept in step with `servers`. */
  const visible = new Map<string, string>();
  const events = mitt<ToolRegistryEvents>();
  let seq = 0;

  function winnerOf(name: string): string | undefined {
    let best: { server: string; seq: number } | undefined;
    for (const [server, slot] of servers) {
      if (slot.tools.has(name) && (best === undefined || slot.seq > best.seq)) best = { server, seq: slot.seq };
    }
    return best?.server;
  }

  function refresh(names: Iterable<string>): void {
    for (const name of names) {
      const winner = winnerOf(name);
      if (winner === undefined) visible.delete(name);
      else visible.set(name, winner);
    }
  }

  function register(server: string, tools: AgentTool[]): RegisterOutcome {
    const shadowed: RegisterOutcome['shadowed'] = [];
    const next = new Map<string, AgentTool>();
    for (const tool of tools) {
      // Two originals of one server can namespace alike (`a.b`, `a_b`): the later wins here too.
      if (next.has(tool.name)) shadowed.push({ tool: tool.name, server });
      next.set(tool.name, tool);
    }
    const previous = servers.get(server)?.tools;

    // The whole state changes before any listener runs: no reader sees a gap.
    servers.set(server, { seq: ++seq, tools: next });
    // The newest registration wins every name it offers: no need to look for another winner.
    for (const name of next.keys()) {
      const owner = visible.get(name);
      if (owner !== undefined && owner !== server) shadowed.push({ tool: name, server: owner });
      visible.set(name, server);
    }
    // A name it stopped offering goes back to the most recent other server offering it, if any.
    if (previous) refresh([...previous.keys()].filter((name) => !next.has(name)));

    const registered = [...next.keys()];
    events.emit('registered', { server, tools: registered });
    for (const loss of shadowed) events.emit('shadowed', { tool: loss.tool, server, shadowed_server: loss.server });
    return { registered, shadowed };
  }

  function unregister(server: string): string[] {
    const slot = servers.get(server);
    if (!slot) return [];
    servers.delete(server);
    const removed = [...slot.tools.keys()];
    refresh(removed);
    events.emit('unregistered', { server, tools: removed });
    return removed;
  }

  function get(name: string): AgentTool | undefined {
    const server = visible.get(name);
    return server === undefined ? undefined : servers.get(server)?.tools.get(name);
  }

  function resolve(name: string): { server: string; tool: string } | undefined {
    const server = visible.get(name);
    const tool = get(name);
    return server === undefined || tool === undefined ? undefined : { server, tool: tool.originalName };
  }

  function list(): AgentTool[] {
    const out: AgentTool[] = [];
    for (const [server, slot] of servers) {
      for (const [name, tool] of slot.tools) if (visible.get(name) === server) out.push(tool);
    }
    return out;
  }

  function forServer(server: string): AgentTool[] {
    return [...(servers.get(server)?.tools.values() ?? [])];
  }

  function shadowedOf(server: string): string[] {
    return [...(servers.get(server)?.tools.keys() ?? [])].filter((name) => visible.get(name) !== server);
  }

  return { register, unregister, get, resolve, list, forServer, shadowed: shadowedOf, events };
}

/** A tool in OpenAI's Chat Completions `tools` format. */
export interface OpenAITool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown>; strict?: boolean };
}

/** A tool in Anthropic's Messages API `tools` format. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/**
 * Tools in OpenAI's format, schemas verbatim. `strict` is only forwarded when
 * given: it is not validated here, the provider enforces it (and rejects
 * schemas that do not meet its strict-mode rules).
 */
export function toOpenAITools(tools: AgentTool[], options: { strict?: boolean } = {}): OpenAITool[] {
  return tools.map((tool) => {
    const fn: OpenAITool['function'] = { name: tool.name, description: tool.description, parameters: tool.parameters };
    if (options.strict !== undefined) fn.strict = options.strict;
    return { type: 'function', function: fn };
  });
}

/** Tools in Anthropic's format, schemas verbatim. */
export function toAnthropicTools(tools: AgentTool[]): AnthropicTool[] {
  return tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameters }));
}
