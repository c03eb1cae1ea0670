/**
 * The library's host API: the options `createMcpHost` takes and the object it
 * returns (docs/library.md). `src/host.ts` re-exports every name here.
 */
import type { SearchOptions, ToolSearchResult } from './tool-search.js';
import type { UpdateOptions } from './management.js';
import type { AgentToolResult, ExecuteOptions, AgentTool } from '../catalog/index.js';
import type { ConfigDiff } from '../catalog/index.js';
import type { ServerConfigInput } from '../config/index.js';
import type { ConfigStore } from '../config/index.js';
import type { CredentialsStore } from '../auth/index.js';
import type { ClientMetadataDocument } from '../auth/index.js';
import type { PendingConsents } from '../auth/index.js';
import type { JournalEvent } from '../journal/index.js';
import type { EventStore } from '../journal/index.js';
import type { AuthBegun } from '../auth/index.js';
import type { CallbackBrowser } from '../auth/server-auth.js';
import type { ServerView } from '../journal/index.js';
import type { PromptEntry, RenderedPrompt } from '../connection/index.js';
import type { ElicitationHandler } from '../connection/index.js';
import type { Root } from '../connection/index.js';
import type { RequestingClient } from '../connection/index.js';
import type { HostModel } from '../agent/index.js';
import type { ApprovalDecision, ApproveCallback, PendingApproval } from '../approvals/index.js';
import type { Presence } from '../fleet/index.js';
import type { PrincipalInput, Quota, UserInputsStore } from '../users/index.js';
import type { SessionView } from './sessions.js';
import type { ToolUiRef } from '../apps/tool-meta.js';
import type { AppBridgeOptions, AppSession, ToolUi } from '../apps/index.js';
import type { CompleteRequestParams, CompleteResult, ReadResourceResult, Transport } from '@modelcontextprotocol/client';
import type { ServerLink } from './server-link.js';

/** What a caller has set of a per_user server's `user_inputs`: never a value. */
export interface InputsView {
  inputs: Record<string, { set: boolean; secret: boolean; description: string }>;
}

/** Where the host reports what it does; pino's logger fits. */
export interface HostLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface McpHostOptions {
  /** The state dir holding `mcp_servers.json`; default: `MCP_FLEET_STATE_DIR`, else `~/.mcp-fleet` (per profile). */
  stateDir?: string;
  /** Defaults to warnings on stderr. */
  logger?: HostLogger;
  /** Keep the journal under `<state_dir>/journal/` (default true); `false` keeps it in memory only. */
  persistJournal?: boolean;
  /** Where the journal lives instead (overrides `persistJournal`): any {@link EventStore}, e.g. one shared by several workers. */
  eventStore?: EventStore;
  /** Where the servers are configured instead of `<stateDir>/mcp_servers.json`: any {@link ConfigStore}, e.g. PostgreSQL. */
  configStore?: ConfigStore;
  /** Where OAuth credentials live instead of `<stateDir>/oauth/`: any {@link CredentialsStore}, e.g. PostgreSQL. */
  credentialsStore?: CredentialsStore;
  /**
   * This worker's id in a fleet sharing one event store: the journal then
   * folds only this worker's events into its views, while its feed carries
   * every worker's.
   */
  workerId?: string;
  /**
   * Watch the config store and apply changes made by another hand (an edit of
   * `mcp_servers.json`, another worker's write) (default true): only the
   * servers whose entry changed restart; a changed tool filter applies without one.
   */
  watchConfig?: boolean;
  /**
   * `startup_concurrency`: how many servers of the startup queue connect at once (default 1:
   * one at a time, in file order: docs/lifecycle.md, Startup). Each is still re-read from the file when dequeued.
   */
  startupConcurrency?: number;
  /** How long an OAuth consent waits for the browser before it fails (default 10 minutes). */
  consentTimeoutMs?: number;
  /**
   * Where this worker is reached from a browser (`serve --public-url`): OAuth
   * consents come back to `<publicUrl>/oauth/callback` (the management app's
   * route, {@link McpHost.answerConsentCallback}) instead of a loopback port.
   * The management app also serves the client ID metadata document
   * ({@link McpHost.clientMetadataDocument}) at
   * `<publicUrl>/oauth/client-metadata.json`; when the URL is HTTPS, that URL
   * is the client id at authorization servers that take such documents.
   */
  publicUrl?: string;
  /** Consents under way, shared by the workers behind one public URL (default: this process only). */
  pendingConsents?: PendingConsents;
  /** The host's model: answers servers' `sampling/createMessage` (sampling is declared only with one, or with `samplingForCallers`). */
  hostModel?: HostModel;
  /**
   * Declares sampling to every server even without a host model, so a gateway client that
   * declared it can be asked during its calls (`serve` sets it). Any other sampling request
   * gets the host model's answer, or the error that there is none.
   */
  samplingForCallers?: boolean;
  /** Answers servers' `elicitation/create` (form and URL mode); without it every request is declined. */
  elicitation?: ElicitationHandler;
  /** `file://` roots served on `roots/list`; roots are declared only when given (`[]` declares an empty list). */
  roots?: Root[];
  /**
   * Decides calls of `ask` tools (`tools.approval`): `'allow'` runs the call,
   * `'deny'` gives the model an `is_error` result. Without it each such call
   * waits (up to `approval_timeout_seconds`) for a decision through
   * {@link McpHost.decideApproval} — the API, the page, `mcp-fleet approve`.
   */
  approve?: ApproveCallback;
  /**
   * This host's entry in the fleet's list of workers (`openSharedStores(...).presence`):
   * announced once `start()` has published the servers, with each server's state (written
   * again soon after one changes, else every heartbeat), at `publicUrl` if given; taken off
   * the list by `shutdown()`. Without it a host on shared stores is not listed.
   */
  presence?: Presence;
  /**
   * Every user's limits (`serve --user-calls-per-minute`, `--user-max-concurrent-calls`):
   * `calls_per_minute` (calls started in the last 60 s) and `max_concurrent_calls`, for a
   * call naming a principal; a principal's own `quota` overrides them. A call over a limit
   * gets an `is_error` result naming it and the seconds to wait (`details.quota`), and is not
   * made. Counted by this host alone (each worker of a fleet counts its own). Default: no limit;
   * a call naming no principal (the admin) is never limited.
   */
  userQuota?: Quota;
  /** Where each user's inputs of per_user servers live instead of `<stateDir>/user_inputs.json` (sealed): e.g. PostgreSQL. */
  userInputs?: UserInputsStore;
}

/**
 * One server in the catalog: its view plus what it offers. `resources`,
 * `resource_templates` and `prompts` are `null` while not listed (the server
 * is not ready, or its listing has not landed yet), `[]` when it has none.
 */
export interface CatalogEntry extends ServerView {
  /**
   * `ui`: the tool's MCP Apps metadata (null: none); `model_visible`: false
   * for an app-only tool, which a model never sees.
   */
  tools: Array<{
    name: string;
    original: string;
    description: string;
    parameters: Record<string, unknown>;
    ui: ToolUiRef | null;
    model_visible: boolean;
  }>;
  resources: Array<{ uri: string; name: string; description?: string; mimeType?: string }> | null;
  /** The server's resource templates (`uriTemplate`), listed with its resources. */
  resource_templates: Array<{ uriTemplate: string; name: string; description?: string; mimeType?: string }> | null;
  prompts: Array<{ name: string; description?: string; arguments?: unknown[] }> | null;
}

export type { ConfigDiff as CatalogDiff } from '../catalog/config-diff.js';

/** What a server offers after a forced re-list: its registered tools, its resources and its prompts, counted. */
export interface CatalogCounts {
  tools: number;
  resources: number;
  prompts: number;
}

/** The MCP host: the library's main object (docs/library.md). */
export interface McpHost {
  readonly stateDir: string;
  /** Starts connecting in the background; resolves as soon as startup is under way. */
  start(): Promise<void>;
  /**
   * Resolves when startup has gone through the whole queue and the views
   * show it: every enabled server has left `pending` (one the queue left at
   * its timeout, once its own deadline ended its start). Call after `start()`.
   */
  settled(): Promise<void>;
  /**
   * The agent tools. `loading: 'deferred'` gives the `search_tools` meta tool
   * and the always-loaded tools (`tools.always_load`) instead of all: the
   * model finds the rest through search (`runAgentTurn` with `loading:
   * 'deferred'` adds what it found to its next request). Eager tools carry
   * `alwaysLoad` for the provider exports' own deferred formats.
   */
  tools(options?: { loading?: 'eager' | 'deferred'; principal?: PrincipalInput }): AgentTool[];
  /**
   * Every registered tool, app-only ones too (`ui.visibility` without
   * `"model"`): what `GET /api/mcp/tools` lists. Not for a model: `callTool`
   * refuses an app-only tool; its app calls it through {@link McpHost.appBridge}.
   */
  allTools(options?: { principal?: PrincipalInput }): AgentTool[];
  /**
   * Whether `callTool(name)` would reach a tool: a registered one, a meta tool
   * (`search_tools`, `read_result`), or a published tool of an `on_demand`
   * server (calling it starts the server).
   */
  hasTool(name: string, options?: { principal?: PrincipalInput }): boolean;
  /** The agent tool `name` as `tools()` lists it for the principal (registered, or a per_user server's its session listed), without building that list. */
  tool(name: string, options?: { principal?: PrincipalInput }): AgentTool | undefined;
  /** The server of the tool `name` as `tools()` lists it for the principal (a registered tool a model may call, or a per_user server's), without building that list. */
  toolServer(name: string, options?: { principal?: PrincipalInput }): string | undefined;
  /** Every tool of the fleet ranked by relevance to `query` (registered, or of an `on_demand` server waiting to start). */
  searchTools(query: string, options?: SearchOptions): ToolSearchResult[];
  callTool(name: string, args: Record<string, unknown>, options?: ExecuteOptions): Promise<AgentToolResult>;
  status(): ServerView[];
  server(name: string): ServerView | undefined;
  /** Journal events after `since` that are still in memory (a bounded window of the newest). */
  events(since?: number): JournalEvent[];
  /**
   * Stored journal events after `since`, oldest first, at most `limit`; reaches
   * back across worker restarts. `{ gone }` names the oldest readable `seq`
   * when the events after `since` were compacted into a snapshot. `since` and
   * `limit` are whole numbers from 0, else it rejects naming the argument.
   */
  readEvents(since: number, limit?: number): Promise<JournalEvent[] | { gone: number }>;
  /** Live journal; returns the unsubscribe function. */
  subscribe(listener: (event: JournalEvent) => void): () => void;
  /** Adds, starts and (unless it ends in `error`) persists a server. */
  addServer(name: string, config: ServerConfigInput): Promise<ServerView>;
  /** PATCH semantics (docs/credentials.md); persisted only when the restart does not end in `error`. */
  updateServer(name: string, patch: Record<string, unknown>, options?: UpdateOptions): Promise<ServerView>;
  /** Stops and forgets the server, and deletes its entry and credentials; with `ifMatch`, only while its stored config is at that version. */
  removeServer(name: string, options?: UpdateOptions): Promise<void>;
  restartServer(name: string): Promise<ServerView>;
  /**
   * Starts OAuth consent for a server in `needs_reauth` (it moves to
   * `authenticating`); resolves with the URL the user opens. Once the browser
   * comes back to the loopback callback, the server connects and becomes ready.
   */
  beginAuth(name: string, options?: { principal?: PrincipalInput; browserBinding?: string }): Promise<AuthBegun>;
  /**
   * The key the management app signs a user consent's browser binding with
   * (its cookie): derived from the worker's secret key, the same on every
   * worker of the fleet.
   */
  consentBindingKey(): Promise<Buffer>;
  /** How long a user's consent can be answered, in milliseconds (the binding cookie lives as long). */
  consentTtlMs(): number;
  /**
   * Forgets per-user OAuth grants: every grant of `principal` (a removed
   * user), of `server`, or of that principal on that server; their sessions
   * end.
   */
  forgetGrants(of: { server?: string; principal?: PrincipalInput }): Promise<void>;
  /**
   * Forgets what a removed user left: their inputs of every server, their
   * grants, their sessions. A new user of the same name starts with nothing.
   */
  forgetUser(name: string): Promise<void>;
  /**
   * Each server's view with what it offers; with a `principal`, a per_user
   * server's tools are those that principal is shown (their own private
   * listing, else the server's public one). The access policy is the caller's to apply.
   */
  catalog(options?: { principal?: PrincipalInput }): CatalogEntry[];
  /**
   * Re-lists every listing of a ready server that expired (older than its
   * `catalog_max_age_seconds`, or past the `ttlMs` its server gave), one
   * request per listing however many callers wait; resolves once done. The
   * reads (`tools()`, `searchTools()`, `catalog()`, `prompts()`) start this
   * and answer at once; the HTTP routes and `runAgentTurn` wait for it.
   */
  freshen(): Promise<void>;
  /**
   * Re-lists a server's tools, resources and prompts now; a changed tool
   * listing is registered (and journaled as a catalog change) before it
   * resolves. Rejects with NotFoundError (unknown server) or NotReadyError.
   * A per_user server lists through the principal's own session (the admin's
   * without one), opened by it when none is: so its tools are learnt before a first call.
   */
  refreshCatalog(name: string, options?: { principal?: PrincipalInput }): Promise<CatalogCounts>;
  /** Every prompt of every ready server, as slash commands `/server:prompt`. */
  prompts(): PromptEntry[];
  /**
   * Renders a prompt through its server's live connection. `command` is `server:prompt`
   * (a leading `/` is allowed); `args` are the prompt's string arguments.
   */
  renderPrompt(command: string, args?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<RenderedPrompt>;
  /**
   * Reads a resource of a ready server through its live connection (`resources/read`), as the
   * server answers it. With a principal, rejects with NotFoundError for a server they may not
   * see; with NotReadyError while the server is not ready (a per_user server has no shared
   * connection to read through).
   */
  readResource(server: string, uri: string, options?: { principal?: PrincipalInput; signal?: AbortSignal }): Promise<ReadResourceResult>;
  /**
   * Runs `run`, a request a gateway client made of server `server`, so that the server's
   * requests to its client during it (sampling, elicitation, roots) go to `client` when it
   * declared what they need, instead of the host's handlers.
   */
  duringCallOf<T>(server: string, client: RequestingClient, run: () => Promise<T>): Promise<T>;
  /** Asks a ready server for argument completions (`completion/complete`); rejects as {@link McpHost.readResource}. */
  complete(server: string, params: CompleteRequestParams, options?: { principal?: PrincipalInput; signal?: AbortSignal }): Promise<CompleteResult>;
  catalogDiff(): Promise<ConfigDiff>;
  /**
   * Answers the browser's return from a consent at `<publicUrl>/oauth/callback`
   * (the query it came with): exchanges the code of the pending consent its
   * `state` names, stores the tokens, and moves the server on here (every
   * other worker learns from the shared credentials). Resolves with the
   * server's name; rejects with `CallbackRefusedError`.
   */
  answerConsentCallback(query: URLSearchParams, browser?: CallbackBrowser): Promise<string>;
  /**
   * The OAuth client ID metadata document the management app serves at
   * `<publicUrl>/oauth/client-metadata.json` (its own URL as `client_id`);
   * null without a public URL.
   */
  clientMetadataDocument(): ClientMetadataDocument | null;
  /** Every secret value of every running server, for redacting logs. */
  secrets(): string[];
  /** The roots served on `roots/list` (empty when the host declared none). */
  roots(): Root[];
  /**
   * Replaces the roots and sends `notifications/roots/list_changed` to every connected
   * server; resolves once sent. Needs the `roots` option (the capability is declared at connect).
   */
  setRoots(roots: Root[]): Promise<void>;
  /** Calls of `ask` tools waiting for a person's decision (none when an `approve` callback decides). */
  approvals(): PendingApproval[];
  /**
   * Decides a waiting call: `allow` makes it, `deny` gives the model an
   * `is_error` result. `by` is journaled. False when no call waits under `id`.
   */
  decideApproval(id: string, decision: ApprovalDecision, by: 'page' | 'api', options?: { principal?: PrincipalInput }): boolean;
  /**
   * Which of a per_user server's `user_inputs` the principal (the admin
   * without one) has set. Rejects with NotFoundError for a server they may not see.
   */
  inputs(server: string, options?: { principal?: PrincipalInput }): Promise<InputsView>;
  /**
   * Merges the principal's own values (`null` deletes one), sealed at rest;
   * their open session ends, so the next call connects with them. Rejects
   * with ConfigError for a name the server does not declare.
   */
  setInputs(server: string, values: Record<string, string | null>, options?: { principal?: PrincipalInput }): Promise<InputsView>;
  /** The sessions of per_user servers open on this worker: all of them, or the principal's. */
  sessions(options?: { principal?: PrincipalInput }): SessionView[];
  /**
   * The app of a tool with an MCP Apps UI (`_meta.ui.resourceUri`): its HTML
   * and what its resource declares (CSP domains, permissions, border,
   * domain). With a principal, null for a tool they may not see. Read from the server on first use and kept until the server
   * announces a list change, updates the resource or leaves `ready`. Null when
   * no tool of that name names a UI; rejects with NotReadyError while its
   * server is not ready, and with a `protocol` FleetError when the resource
   * is not an app (`text/html;profile=mcp-app`). A per_user server's app is
   * read through the principal's own session of it (opened when none is).
   */
  toolUi(name: string, options?: { principal?: PrincipalInput }): Promise<ToolUi | null>;
  /**
   * Connects an app frame of the tool `name` (a browser frame's
   * `PostMessageTransport`, any MCP SDK `Transport`) to the host. The app may
   * call its own server's tools (app-only ones too, by their names there,
   * through approvals like any call) and read its server's resources; never
   * another server's. Rejects like {@link McpHost.toolUi} for a server not ready.
   * With a principal, the app is theirs: it opens only for a tool they may see,
   * calls only the tools of its server they may see (`tools.access`), reads its
   * server's resources only while they may see the server, and its calls count
   * against their quota and are journaled as theirs (`tool.called`).
   */
  appBridge(name: string, transport: Transport, options?: AppBridgeOptions & { principal?: PrincipalInput }): Promise<AppSession>;
  /**
   * One server whole, as the principal may reach it (what `/mcp/servers/:name`
   * serves): its live client (a per_user server's is the principal's own
   * session), the tools they may see by their own names, and calls made as
   * theirs (access policy, approvals, quota, `tool.called`). Undefined for an
   * unknown server or one they may not see.
   */
  serverLink(name: string, options?: { principal?: PrincipalInput }): ServerLink | undefined;
  /** Resolves when every child process is gone. */
  shutdown(): Promise<void>;
}
