import type { AgentTool, AgentToolResult, ExecuteOptions } from './services/agent-tool.js';
import type { ServerConfigInput } from './services/config/schema.js';
import type { JournalEvent } from './services/journal/events.js';
import type { ServerView } from './services/status.js';

/** One server in the catalog: its view plus what it offers. */
export interface CatalogEntry extends ServerView {
  tools: Array<{ name: string; original: string; description: string; parameters: Record<string, unknown> }>;
  resources: Array<{ uri: string; name: string; description?: string; mimeType?: string }>;
  prompts: Array<{ name: string; description?: string; arguments?: unknown[] }>;
}

/** Persisted config against running config (SPEC §6 catalog/diff). */
export interface CatalogDiff {
  added: string[];
  removed: string[];
  /** Per server, the dotted field paths that differ; secrets appear as paths only. */
  changed: Array<{ name: string; fields: string[] }>;
}

/** The MCP host: the library's main object (SPEC §7). */
export interface McpHost {
  readonly stateDir: string;
  /** Starts connecting in the background; resolves as soon as startup is under way. */
  start(): Promise<void>;
  tools(): AgentTool[];
  callTool(name: string, args: Record<string, unknown>, options?: ExecuteOptions): Promise<AgentToolResult>;
  status(): ServerView[];
  server(name: string): ServerView | undefined;
  events(since?: number): JournalEvent[];
  /** Live journal; returns the unsubscribe function. */
  subscribe(listener: (event: JournalEvent) => void): () => void;
  /** Adds, starts and (unless it ends in `error`) persists a server. */
  addServer(name: string, config: ServerConfigInput): Promise<ServerView>;
  /** SPEC §3 PATCH semantics; persisted only when the restart does not end in `error`. */
  updateServer(name: string, patch: Record<string, unknown>): Promise<ServerView>;
  removeServer(name: string): Promise<void>;
  restartServer(name: string): Promise<ServerView>;
  catalog(): CatalogEntry[];
  catalogDiff(): Promise<CatalogDiff>;
  /** Resolves when every child process is gone. */
  shutdown(): Promise<void>;
}
