import { join } from 'node:path';
import { createActor, fromPromise, waitFor } from 'xstate';
import { registryMachine, type ServerActorRef } from './machines/registry.machine.js';
import type { Reread } from './machines/registry.events.js';
import { createManagement, type UpdateOptions } from './host/management.js';
import { bridgeServer } from './host/journal-bridge.js';
import { reconcile } from './host/reconcile.js';
import { eraVerdictsPath, fileEraVerdicts, memoryEraVerdicts } from './services/era/verdicts.js';
import { hostServerMachine } from './host/server-actors.js';
import { createLifecycles } from './services/telemetry/lifecycle.js';
import { createOnDemand } from './host/on-demand.js';
import { createToolMount } from './host/tool-mount.js';
import { createResultSpill } from './services/results/result-spill.js';
import { createReadResultTool, READ_RESULT_TOOL } from './services/results/read-result-tool.js';
import { createFleetSearch, waitsOnDemand, type SearchOptions, type ToolSearchResult } from './host/tool-search.js';
import { SEARCH_TOOLS_NAME } from './services/tools/search-tools-tool.js';
import { createDeferredTools } from './host/deferred-tools.js';
import { errorResult, type AgentToolResult, type ExecuteOptions, type AgentTool } from './services/tools/agent-tool.js';
import { computeDiff, type ConfigDiff } from './services/catalog/config-diff.js';
import { createCatalogFreshness } from './services/catalog/freshness.js';
import { secretValues } from './services/config/masking.js';
import type { ServerConfig, ServerConfigInput } from './services/config/schema.js';
import { createConfigStore, type ConfigStore } from './services/config/store.js';
import type { CredentialsStore } from './services/oauth/credentials-store.js';
import { clientMetadataDocument, type ClientMetadataDocument } from './services/oauth/client-metadata-document.js';
import type { PendingConsents } from './services/oauth/pending-consents.js';
import { HostNotRunningError, NotFoundError, NotReadyError } from './services/support/errors.js';
import { createDrain } from './services/support/drain.js';
import type { JournalEvent } from './services/journal/events.js';
import { createJournal, type Journal } from './services/journal/journal.js';
import { createMemoryEventStore, type EventStore } from './services/journal/event-store.js';
import { createFileEventStore } from './services/journal/file-event-store.js';
import { createSelectors } from './services/journal/selectors.js';
import { createServerAuth, type AuthBegun } from './services/oauth/server-auth.js';
import { resolveStateDir } from './services/config/paths.js';
import type { ServerView } from './services/journal/server-view.js';
import { createPromptRegistry, type PromptEntry, type RenderedPrompt } from './services/capabilities/prompts.js';
import { createClientHandlers } from './services/capabilities/client-handlers.js';
import type { ElicitationHandler } from './services/capabilities/elicitation.js';
import { parseRoots, type Root } from './services/capabilities/roots.js';
import type { HostModel } from './services/agent/host-model.js';
import {
  createApprovals,
  type ApprovalDecision,
  type ApproveCallback,
  type PendingApproval,
} from './services/approvals/approvals.js';
import { deniedMessage, isDenied } from './services/approvals/policy.js';
import { statesByServer, type Presence } from './services/fleet/presence.js';

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
  /** The host's model: answers servers' `sampling/createMessage` (sampling is declared only with one). */
  hostModel?: HostModel;
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
}

/** One server in the catalog: its view plus what it offers. */
export interface CatalogEntry extends ServerView {
  tools: Array<{ name: string; original: string; description: string; parameters: Record<string, unknown> }>;
  resources: Array<{ uri: string; name: string; description?: string; mimeType?: string }>;
  /** The server's resource templates (`uriTemplate`), listed with its resources. */
  resource_templates: Array<{ uriTemplate: string; name: string; description?: string; mimeType?: string }>;
  prompts: Array<{ name: string; description?: string; arguments?: unknown[] }>;
}

export type { ConfigDiff as CatalogDiff } from './services/catalog/config-diff.js';

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
   * Resolves when startup has gone through the whole queue: every enabled
   * server has left `pending` (or hit its timeout). Call after `start()`.
   */
  settled(): Promise<void>;
  /**
   * The agent tools. `loading: 'deferred'` gives the `search_tools` meta tool
   * and the always-loaded tools (`tools.always_load`) instead of all: the
   * model finds the rest through search (`runAgentTurn` with `loading:
   * 'deferred'` adds what it found to its next request). Eager tools carry
   * `alwaysLoad` for the provider exports' own deferred formats.
   */
  tools(options?: { loading?: 'eager' | 'deferred' }): AgentTool[];
  /**
   * Whether `callTool(name)` would reach a tool: a registered one, a meta tool
   * (`search_tools`, `read_result`), or a published tool of an `on_demand`
   * server (calling it starts the server).
   */
  hasTool(name: string): boolean;
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
   * when the events after `since` were compacted into a snapshot.
   */
  readEvents(since: number, limit?: number): Promise<JournalEvent[] | { gone: number }>;
  /** Live journal; returns the unsubscribe function. */
  subscribe(listener: (event: JournalEvent) => void): () => void;
  /** Adds, starts and (unless it ends in `error`) persists a server. */
  addServer(name: string, config: ServerConfigInput): Promise<ServerView>;
  /** PATCH semantics (docs/credentials.md); persisted only when the restart does not end in `error`. */
  updateServer(name: string, patch: Record<string, unknown>, options?: UpdateOptions): Promise<ServerView>;
  removeServer(name: string): Promise<void>;
  restartServer(name: string): Promise<ServerView>;
  /**
   * Starts OAuth consent for a server in `needs_reauth` (it moves to
   * `authenticating`); resolves with the URL the user opens. Once the browser
   * comes back to the loopback callback, the server connects and becomes ready.
   */
  beginAuth(name: string): Promise<AuthBegun>;
  catalog(): CatalogEntry[];
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
   */
  refreshCatalog(name: string): Promise<CatalogCounts>;
  /** Every prompt of every ready server, as slash commands `/server:prompt`. */
  prompts(): PromptEntry[];
  /**
   * Renders a prompt through its server's live connection. `command` is `server:prompt`
   * (a leading `/` is allowed); `args` are the prompt's string arguments.
   */
  renderPrompt(command: string, args?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<RenderedPrompt>;
  catalogDiff(): Promise<ConfigDiff>;
  /**
   * Answers the browser's return from a consent at `<publicUrl>/oauth/callback`
   * (the query it came with): exchanges the code of the pending consent its
   * `state` names, stores the tokens, and moves the server on here (every
   * other worker learns from the shared credentials). Resolves with the
   * server's name; rejects with `CallbackRefusedError`.
   */
  answerConsentCallback(query: URLSearchParams): Promise<string>;
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
  decideApproval(id: string, decision: ApprovalDecision, by: 'page' | 'api'): boolean;
  /** Resolves when every child process is gone. */
  shutdown(): Promise<void>;
}

/** Creates a host on a state dir. Nothing runs until `start()`. */
export function createMcpHost(options: McpHostOptions = {}): McpHost {
  const stateDir = options.stateDir ?? resolveStateDir();
  const startupConcurrency = options.startupConcurrency ?? 1;
  if (!Number.isInteger(startupConcurrency) || startupConcurrency < 1) {
    throw new RangeError(`startupConcurrency must be an integer >= 1, got ${startupConcurrency}`);
  }
  const logger: HostLogger = options.logger ?? { info: () => {}, warn: (message) => console.warn(message) };
  const store: ConfigStore = options.configStore ?? createConfigStore({ stateDir: () => stateDir, logger });
  const onWriteError = (error: Error) => logger.warn(`journal: cannot write: ${error.message}`);
  const journal: Journal = createJournal({
    store:
      options.eventStore ??
      (options.persistJournal === false ? createMemoryEventStore() : createFileEventStore({ stateDir, onWriteError })),
    onWriteError,
    ...(options.workerId === undefined ? {} : { ownWorker: options.workerId }),
  });
  const append = journal.append.bind(journal);
  // Kept results are files by design, also when the journal lives in memory only.
  const spill = createResultSpill({
    dir: join(stateDir, 'results'),
    onError: (error) => logger.warn(`results: ${error instanceof Error ? error.message : String(error)}`),
  });
  const readResult = createReadResultTool(spill);
  /** `read_result` is listed only while a result is kept: a model needs it once a spill note has named it. */
  const withReadResult = (tools: AgentTool[]): AgentTool[] => (spill.hasResults() ? [...tools, readResult] : tools);
  const approvals = createApprovals({ append, approve: options.approve });
  // This host's own: what it derives from its journal is kept for it alone.
  const selectors = createSelectors({ stored: (name) => store.stored(name) });
  const mount = createToolMount({ append, projected: () => journal.projection.context, selectors, spill, approvals });
  const prompts = createPromptRegistry();
  const catalogs = createCatalogFreshness();
  /** A read of the catalog: expired listings are re-listed in the background; the read answers what is there now. */
  const freshenSoon = () => void catalogs.freshen();
  const auth = createServerAuth({
    ...(options.credentialsStore ? { credentials: options.credentialsStore } : { stateDir }),
    consentTimeoutMs: options.consentTimeoutMs,
    ...(options.publicUrl === undefined ? {} : { publicUrl: options.publicUrl }),
    ...(options.pendingConsents === undefined ? {} : { pendingConsents: options.pendingConsents }),
    ...(options.workerId === undefined ? {} : { workerId: options.workerId }),
  });
  const leftovers = createDrain();
  const eras =
    options.persistJournal === false
      ? memoryEraVerdicts()
      : fileEraVerdicts(eraVerdictsPath(stateDir), (error) => logger.warn(`eras.json: cannot write: ${String(error)}`));
  const clientHandlers = createClientHandlers({
    hostModel: options.hostModel,
    elicitation: options.elicitation,
    roots: options.roots === undefined ? undefined : parseRoots(options.roots, 'createMcpHost'),
    onNotifyError: (error) => logger.warn(`roots: could not notify a server: ${error.message}`),
  });
  // This host's own: another host in the process may run a server of the same name.
  const lifecycles = createLifecycles();
  const server = hostServerMachine({
    auth,
    clientHandlers,
    prompts,
    append,
    logger,
    leftovers,
    eras,
    knowsCatalog: (name) => (journal.projection.context.servers[name]?.known_tools ?? null) !== null,
    catalogs,
    lifecycles,
  });

  let actor: ReturnType<typeof createRegistryActor> | null = null;
  let starting: Promise<void> | null = null;
  let stopping: Promise<void> | null = null;
  let stopWatching = () => {};
  let stopWatchingTokens = () => {};
  let stopAnnouncing = () => {};
  let announced = false;

  /** Servers whose tokens came while a connect or refresh was under way: watched until that attempt ends. */
  const tokensAwaitingOutcome = new Map<string, { unsubscribe(): void }>();

  /** Tokens were stored for `name` (here or by another worker): a server waiting for them goes on. */
  function tokensArrived(name: string): void {
    const ref = current(name);
    if (!ref || stopping) return;
    const snapshot = ref.getSnapshot();
    if (snapshot.matches({ authenticating: 'consenting' })) ref.send({ type: 'auth.completed' });
    // needs_reauth, or waiting for the authorization server that another worker reached: no need to wait out the backoff.
    else if (snapshot.hasTag('awaitsTokens')) ref.send({ type: 'server.restart' });
    else if ((snapshot.matches('pending') || snapshot.matches('authenticating')) && !tokensAwaitingOutcome.has(name)) {
      // An attempt that read the credentials before these tokens were stored may still end in needs_reauth:
      // then it goes on with them, rather than wait for a consent nobody needs.
      const forget = () => {
        if (tokensAwaitingOutcome.get(name) === subscription) tokensAwaitingOutcome.delete(name);
      };
      const subscription = ref.subscribe({
        next(next) {
          if (next.matches('pending') || (next.matches('authenticating') && !next.matches({ authenticating: 'consenting' }))) return;
          subscription.unsubscribe();
          forget();
          const waits = next.hasTag('awaitsTokens');
          if (waits && !stopping) ref.send({ type: 'server.restart' });
        },
        // A removed server's actor stops without another snapshot: a server added again by that name is watched afresh.
        complete: forget,
      });
      tokensAwaitingOutcome.set(name, subscription);
    }
  }

  async function reread(name: string): Promise<Reread> {
    let loaded: Awaited<ReturnType<ConfigStore['load']>>;
    try {
      loaded = await store.load();
    } catch (error) {
      // A store that cannot be read (a database away) is no deletion: keep the config it was queued with.
      logger.warn(`config: cannot re-read server ${name} (${(error as Error).message}); using the config it was queued with`);
      return { status: 'unreadable' };
    }
    // A typo in the entry is not a deletion: keep the config it was queued with.
    if (loaded.broken || loaded.invalidNames.includes(name)) return { status: 'unreadable' };
    const entry = loaded.servers.find(([candidate]) => candidate === name);
    return entry ? { status: 'found', config: entry[1] } : { status: 'deleted' };
  }

  function createRegistryActor(servers: Array<{ name: string; config: ServerConfig }>) {
    const machine = registryMachine.provide({
      actors: {
        server,
        rereadConfig: fromPromise(({ input }: { input: { name: string } }) => reread(input.name)),
      },
    });
    return createActor(machine, { input: { servers, startupConcurrency } });
  }

  const servers = (): Record<string, ServerActorRef> => actor?.getSnapshot().context.servers ?? {};
  const current = (name: string): ServerActorRef | undefined => servers()[name];

  function running(): NonNullable<typeof actor> {
    if (!actor) throw new HostNotRunningError('not_started');
    if (stopping) throw new HostNotRunningError('shutting_down');
    return actor;
  }

  const management = createManagement({
    store,
    registry: running,
    current,
    async view(name) {
      await journal.flushed();
      const found = host.server(name);
      if (!found) throw new NotFoundError(name);
      return found;
    },
    forgetCredentials: (name) => auth.forget(name),
  });

  /** Observes every actor the registry publishes, once, through the journal bridge. */
  function bridgeNewActors(): void {
    for (const ref of Object.values(servers())) {
      if (bridged.has(ref)) continue;
      bridged.add(ref);
      bridgeServer(ref, {
        append,
        mount,
        current,
        onFailure: (name, state, kind, error) => logger.warn(`server ${name}: ${state} (${kind}): ${error}`),
        lifecycles,
      });
    }
  }
  const bridged = new WeakSet<ServerActorRef>();

  /** Lists this host among the fleet's workers, its states rewritten soon after each of its own transitions. */
  function announce(presence: Presence): void {
    presence.start(options.publicUrl ?? null, () => statesByServer(host.status()));
    announced = true;
    stopAnnouncing = journal.subscribe((event) => {
      const own = event.worker === undefined || event.worker === options.workerId;
      if (own && (event.type === 'server.transitioned' || event.type === 'server.removed')) presence.changed();
    });
  }

  const projected = () => journal.projection.context;

  /** The server a tool name belongs to (see `toolOwner`). */
  const ownerByName = (tool: string): string | undefined => selectors.toolOwner(projected(), tool);

  const onDemand = createOnDemand({ current, projected, stopping: () => stopping !== null });
  const fleetSearch = createFleetSearch(projected, selectors);
  const deferredTools = createDeferredTools({ servers, search: fleetSearch, onDemand });

  const host: McpHost = {
    stateDir,

    start() {
      starting ??= (async () => {
        // The projection is rebuilt from the store before any actor reports.
        await journal.open();
        const loaded = await store.load();
        // Servers the previous run knew that the file no longer has are gone.
        const configured = new Set(loaded.servers.map(([name]) => name));
        for (const name of Object.keys(projected().servers)) {
          if (!configured.has(name)) append({ type: 'server.removed', server: name });
        }
        actor = createRegistryActor(loaded.servers.map(([name, config]) => ({ name, config })));
        actor.subscribe(bridgeNewActors);
        actor.start();
        bridgeNewActors();
        stopWatchingTokens = options.credentialsStore?.watchTokens?.(tokensArrived) ?? (() => {});
        // The views show this run's states once start resolves, also with a store that tells its events only
        // once stored (a local store has told them already: no wait on its writes).
        if (journal.behind) await journal.flushed();
        if (options.watchConfig !== false) {
          // Edits are applied one after another; a burst of saves is debounced by the watcher.
          let applying = Promise.resolve();
          const apply = (): void => {
            applying = applying
              .then(() => reconcile({ store, registry: () => (stopping ? null : actor), servers, busy: management.busy, warn: logger.warn }))
              .then((busy) => {
                // Left alone while a transaction ran on them: read again once it is over (a write after its own may be missed).
                if (busy.length > 0) void Promise.all(busy.map((name) => management.idle(name))).then(apply);
              })
              .catch((failure: Error) => logger.warn(`config: could not apply an edit: ${failure.message}`));
          };
          stopWatching = store.watch(apply);
        }
        if (options.presence) announce(options.presence);
      })();
      return starting;
    },

    async settled() {
      const registry = running();
      await waitFor(registry, (snapshot) => !snapshot.matches('starting'), { timeout: Infinity });
      // The registry knows before the views do when a shared store tells its events only once stored.
      if (journal.behind) await journal.flushed();
    },

    tools(toolOptions) {
      freshenSoon();
      const tools = deferredTools.marked(mount.list());
      return withReadResult(toolOptions?.loading === 'deferred' ? deferredTools.deferred(tools) : tools);
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
      if (tool) return tool.execute(args, callOptions);
      if (name === SEARCH_TOOLS_NAME) return deferredTools.searchTool.execute(args, callOptions);
      const owner = ownerByName(name);
      if (owner && onDemand.knows(owner, name)) {
        // A tool its policy denies is refused here, without starting its server for nothing.
        const original = projected().servers[owner]?.known_tools?.find((tool) => tool.name === name)?.original;
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

    status: () => selectors.status(projected()),
    server: (name) => selectors.server(projected(), name),
    events: (since) => journal.since(since),
    readEvents: (since, limit) => journal.read(since, limit),
    subscribe: (listener) => journal.subscribe(listener),

    addServer: (name, input) => management.add(name, input),
    updateServer: (name, patch, updateOptions) => management.update(name, patch, updateOptions),
    removeServer: (name) => management.remove(name),
    restartServer: (name) => management.restart(name),
    beginAuth(name) {
      running();
      return management.beginAuth(name);
    },

    catalog() {
      freshenSoon();
      const context = projected();
      return host.status().map((status) => {
        const server = context.servers[status.name];
        const mounted = mount.forServer(status.name);
        // An on-demand server waiting for a call publishes its last run's catalog.
        const tools =
          mounted.length === 0 && server !== undefined && waitsOnDemand(server)
            ? (server.known_tools ?? []).map(({ name, original, description, parameters }) => ({
                name,
                original,
                description,
                parameters: parameters ?? {},
              }))
            : mounted.map((tool) => ({
                name: tool.name,
                original: tool.originalName,
                description: tool.description,
                parameters: tool.parameters,
              }));
        return {
          ...status,
          tools,
          resources: server?.resources ?? [],
          resource_templates: server?.templates ?? [],
          prompts: server?.prompts ?? [],
        };
      });
    },

    prompts() {
      freshenSoon();
      return prompts.list();
    },

    freshen: () => catalogs.freshen(),

    async refreshCatalog(name) {
      running();
      const view = host.server(name);
      if (!view) throw new NotFoundError(name);
      const handle = catalogs.get(name);
      if (!handle) throw new NotReadyError(name, view.state);
      const offer = await handle.refresh();
      return { tools: mount.forServer(name).length, resources: offer.resources.length, prompts: offer.prompts.length };
    },
    renderPrompt: (command, args, renderOptions) => prompts.render(command, args, renderOptions),

    async catalogDiff() {
      const loaded = await store.load();
      const runningConfigs = Object.entries(servers()).map(
        ([name, ref]) => [name, ref.getSnapshot().context.config] as [string, ServerConfig],
      );
      return computeDiff(loaded.servers, runningConfigs);
    },

    async answerConsentCallback(query) {
      running();
      const name = await auth.answerCallback(query, (candidate) => current(candidate)?.getSnapshot().context.config);
      tokensArrived(name);
      return name;
    },

    clientMetadataDocument: () => (options.publicUrl === undefined ? null : clientMetadataDocument(options.publicUrl)),

    secrets() {
      return Object.values(servers()).flatMap((ref) => secretValues(ref.getSnapshot().context.config));
    },

    roots: () => clientHandlers.roots?.list() ?? [],

    approvals: () => approvals.pending(),
    decideApproval: (id, decision, by) => approvals.decide(id, decision, by),

    async setRoots(roots) {
      if (clientHandlers.roots === null) {
        throw new Error('setRoots: this host declared no roots; create it with a `roots` option (e.g. `roots: []`)');
      }
      await clientHandlers.roots.set(parseRoots(roots, 'setRoots'));
    },

    shutdown() {
      stopping ??= (async () => {
        stopWatching();
        stopWatchingTokens();
        for (const subscription of tokensAwaitingOutcome.values()) subscription.unsubscribe();
        tokensAwaitingOutcome.clear();
        // Calls waiting for a decision are not made: their callers are answered now, not at their timeout.
        approvals.close();
        await starting?.catch(() => undefined);
        if (actor) {
          const refs = Object.values(servers());
          actor.send({ type: 'registry.shutdown' });
          // Each actor is done once its process is gone (it closes in its own `closing` state).
          await Promise.all(refs.map((ref) => waitFor(ref, (snapshot) => snapshot.status !== 'active', { timeout: Infinity })));
          // Handshakes abandoned mid-way close their children in the background.
          await leftovers.empty();
          actor.stop();
        }
        stopAnnouncing();
        // Off the fleet's list once every server here has stopped.
        if (announced) await options.presence?.stop();
        spill.close();
        await eras.flushed();
        await journal.close();
      })();
      return stopping;
    },
  };
  return host;
}
