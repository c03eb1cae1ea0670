import { isDeepStrictEqual } from 'node:util';
import { createActor, fromPromise, waitFor, type Subscription } from 'xstate';
import { registryMachine, type ServerActorRef } from './machines/registry.machine.js';
import type { Reread } from './machines/registry.events.js';
import { serverMachine } from './machines/server.machine.js';
import { leftPending, reconnected, retriesAfterReconnect, topState } from './machines/server.queries.js';
import { toAgentTool } from './services/tools/adapter.js';
import { errorResult, type AgentTool, type AgentToolResult, type ExecuteOptions } from './services/tools/agent-tool.js';
import { computeDiff, type ConfigDiff } from './services/catalog/config-diff.js';
import { mergePatch, secretValues, toResponse } from './services/config/credentials.js';
import type { ServerConfig, ServerConfigInput, ToolFilter } from './services/config/schema.js';
import { filterTools } from './services/connection/connection.js';
import { createConfigStore, type ConfigStore } from './services/config/store.js';
import { watchFile } from './services/config/watch.js';
import { parseServerConfig } from './services/config/validate.js';
import { ConflictError, NotFoundError, StartFailedError } from './services/support/errors.js';
import type { JournalEvent } from './services/journal/events.js';
import { createJournal, type Journal } from './services/journal/journal.js';
import { createProjection, serverViews } from './services/journal/projection.js';
import { openLiveConnection, type LiveConnection } from './services/connection/live-connection.js';
import { createServerAuth, type AuthBegun } from './services/oauth/server-auth.js';
import { journalPath, resolveStateDir } from './services/config/paths.js';
import type { ServerView } from './services/journal/server-view.js';
import { resourceAgentTools } from './services/capabilities/resources.js';
import { createPromptRegistry, type PromptEntry, type RenderedPrompt } from './services/capabilities/prompts.js';
import { startServerSession, type ServerSession } from './services/catalog/session.js';
import { createToolRegistry } from './services/tools/registry.js';
import { createClientHandlers } from './services/capabilities/client-handlers.js';
import type { ElicitationHandler } from './services/capabilities/elicitation.js';
import { parseRoots, type Root } from './services/capabilities/roots.js';
import type { HostModel } from './services/agent/host-model.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

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
  /** Append the journal to `<state_dir>/events.jsonl` (default true). */
  persistJournal?: boolean;
  /**
   * Watch `mcp_servers.json` and apply hand edits (default true): only the
   * servers whose entry changed restart; a changed tool filter applies without one.
   */
  watchConfig?: boolean;
  /**
   * `startup_concurrency`: how many servers of the startup queue connect at once (default 1:
   * one at a time, in file order, as SPEC §4 says). Each is still re-read from the file when dequeued.
   */
  startupConcurrency?: number;
  /** How long an OAuth consent waits for the browser before it fails (default 10 minutes). */
  consentTimeoutMs?: number;
  /** The host's model: answers servers' `sampling/createMessage` (sampling is declared only with one). */
  hostModel?: HostModel;
  /** Answers servers' `elicitation/create` (form and URL mode); without it every request is declined. */
  elicitation?: ElicitationHandler;
  /** `file://` roots served on `roots/list`; roots are declared only when given (`[]` declares an empty list). */
  roots?: Root[];
}

/** One server in the catalog: its view plus what it offers. */
/** Agent tools built on one connection with one result bound, by the listing item they wrap. */
interface BuiltTools {
  maxResultBytes: number;
  tools: WeakMap<Tool, AgentTool>;
}

export interface CatalogEntry extends ServerView {
  tools: Array<{ name: string; original: string; description: string; parameters: Record<string, unknown> }>;
  resources: Array<{ uri: string; name: string; description?: string; mimeType?: string }>;
  prompts: Array<{ name: string; description?: string; arguments?: unknown[] }>;
}

export type { ConfigDiff as CatalogDiff } from './services/catalog/config-diff.js';

/** The MCP host: the library's main object (SPEC §7). */
export interface McpHost {
  readonly stateDir: string;
  /** Starts connecting in the background; resolves as soon as startup is under way. */
  start(): Promise<void>;
  /**
   * Resolves when startup has gone through the whole queue: every enabled
   * server has left `pending` (or hit its timeout). Call after `start()`.
   */
  settled(): Promise<void>;
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
  /**
   * Starts OAuth consent for a server in `needs_reauth` (it moves to
   * `authenticating`); resolves with the URL the user opens. Once the browser
   * comes back to the loopback callback, the server connects and becomes ready.
   */
  beginAuth(name: string): Promise<AuthBegun>;
  catalog(): CatalogEntry[];
  /** Every prompt of every ready server, as slash commands `/server:prompt`. */
  prompts(): PromptEntry[];
  /**
   * Renders a prompt through its server's live connection. `command` is `server:prompt`
   * (a leading `/` is allowed); `args` are the prompt's string arguments.
   */
  renderPrompt(command: string, args?: Record<string, unknown>, options?: { signal?: AbortSignal }): Promise<RenderedPrompt>;
  catalogDiff(): Promise<ConfigDiff>;
  /** Every secret value of every running server, for redacting logs. */
  secrets(): string[];
  /** The roots served on `roots/list` (empty when the host declared none). */
  roots(): Root[];
  /**
   * Replaces the roots and sends `notifications/roots/list_changed` to every connected
   * server; resolves once sent. Needs the `roots` option (the capability is declared at connect).
   */
  setRoots(roots: Root[]): Promise<void>;
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
  const store: ConfigStore = createConfigStore({ stateDir: () => stateDir, logger });
  const journal: Journal = createJournal({
    file: () => (options.persistJournal === false ? null : journalPath(stateDir)),
    onWriteError: (error) => logger.warn(`journal: cannot append: ${error.message}`),
  });
  const projection = createProjection();
  journal.subscribe((event) => projection.apply(event));
  const registry = createToolRegistry();
  registry.events.on('shadowed', ({ tool, server, shadowed_server }) =>
    journal.append({ type: 'tool.shadowed', server, tool, shadowed_server }),
  );

  /** Every tool name a server ever offered, so a call to a server that is down can say why. */
  const lastOwner = new Map<string, string>();
  const builtTools = new WeakMap<LiveConnection, BuiltTools>();
  /** What runs beside each ready actor's connection: catalog sync, prompt commands, server log. */
  const sessions = new Map<ServerActorRef, ServerSession>();
  const prompts = createPromptRegistry();
  /** Connections being closed and handshakes being abandoned: shutdown waits for both. */
  const settling = new Map<Promise<unknown>, string>();
  const attached = new Map<ServerActorRef, Subscription[]>();
  const locks = new Map<string, Promise<unknown>>();
  let actor: ReturnType<typeof createRegistryActor> | null = null;
  let stopping: Promise<void> | null = null;
  let stopWatching = () => {};

  /** Remembers a child's closing (or abandoned handshake) of server `name` until it settles. */
  function track<T>(name: string, promise: Promise<T>): Promise<T> {
    const settled: Promise<unknown> = promise.then(
      () => settling.delete(settled),
      () => settling.delete(settled),
    );
    settling.set(settled, name);
    return promise;
  }

  /** Resolves when every child of `name` (or of every server) being closed has exited. */
  async function childrenGone(name?: string): Promise<void> {
    const pending = () => [...settling].filter(([, owner]) => name === undefined || owner === name).map(([p]) => p);
    for (let waiting = pending(); waiting.length > 0; waiting = pending()) await Promise.allSettled(waiting);
  }

  const oauth = createServerAuth({ stateDir, consentTimeoutMs: options.consentTimeoutMs });
  const clientHandlers = createClientHandlers({
    hostModel: options.hostModel,
    elicitation: options.elicitation,
    roots: options.roots === undefined ? undefined : parseRoots(options.roots, 'createMcpHost'),
    onNotifyError: (error) => logger.warn(`roots: could not notify a server: ${error.message}`),
  });
  const connect = fromPromise<LiveConnection, { name: string; config: ServerConfig }>(({ input, signal }) =>
    track(
      input.name,
      oauth
        .providerFor(input.name, input.config)
        .then((provider) =>
          openLiveConnection(input.name, input.config, signal, provider, clientHandlers.setup(input.name)),
        ),
    ),
  );

  async function reread(name: string): Promise<Reread> {
    const loaded = await store.load();
    // A typo in the entry is not a deletion: keep the config it was queued with.
    if (loaded.broken || loaded.invalidNames.includes(name)) return { status: 'unreadable' };
    const entry = loaded.servers.find(([candidate]) => candidate === name);
    return entry ? { status: 'found', config: entry[1] } : { status: 'deleted' };
  }

  function createRegistryActor(servers: Array<{ name: string; config: ServerConfig }>) {
    const machine = registryMachine.provide({
      actors: {
        server: serverMachine.provide({ actors: { connect } }),
        rereadConfig: fromPromise(({ input }: { input: { name: string } }) => reread(input.name)),
      },
    });
    return createActor(machine, { input: { servers, startupConcurrency } });
  }

  function current(name: string): ServerActorRef | undefined {
    return actor?.getSnapshot().context.servers[name];
  }

  function attach(ref: ServerActorRef): void {
    const { name } = ref.getSnapshot().context;
    let configured: ServerConfig | null = null;
    let last: ReturnType<typeof topState> | null = null;
    const observe = () => {
      const snapshot = ref.getSnapshot();
      // The registry hands a queued server the config it re-read from the file: the view shows that one.
      if (snapshot.context.config !== configured) {
        configured = snapshot.context.config;
        journal.append({ type: 'server.configured', server: name, actor: ref.id, config: toResponse(configured) });
      }
      const state = topState(snapshot);
      if (state === last) return;
      const { error, errorKind } = snapshot.context;
      const failed = state === 'error' || state === 'needs_reauth';
      journal.append({
        type: 'server.transitioned',
        server: name,
        actor: ref.id,
        from: last,
        to: state,
        error: failed ? error : null,
        error_kind: failed ? errorKind : null,
      });
      if (failed) logger.warn(`server ${name}: ${state} (${errorKind}): ${error}`);
      if (last === 'authenticating') oauth.left(ref);
      last = state;
      if (state === 'stopped') detach(ref, name);
    };
    attached.set(ref, [
      ref.on('tools.register', ({ live, filter }) => registerTools(ref, name, live, filter)),
      ref.on('tools.unregister', () => unregisterTools(ref, name)),
      ref.on('connection.release', ({ live }) => void track(name, live.connection.close())),
      ref.subscribe({ next: observe, complete: observe }),
    ]);
    observe();
  }

  function detach(ref: ServerActorRef, name: string): void {
    for (const subscription of attached.get(ref) ?? []) subscription.unsubscribe();
    attached.delete(ref);
    endSession(ref);
    // A replaced actor leaves the name to its successor, and shutdown leaves every
    // server visible as `stopped`; only a real removal ends the view.
    if (!current(name)) journal.append({ type: 'server.removed', server: name });
  }

  function registerTools(ref: ServerActorRef, name: string, live: LiveConnection, filter: ToolFilter): void {
    const built = builtToolsOf(live, ref.getSnapshot().context.config.max_result_bytes);
    const tools = filterTools(live.connection.allTools, filter).map((tool) => {
      const kept = built.tools.get(tool);
      if (kept !== undefined) return kept;
      const agentTool = toAgentTool(name, tool, async (original, args, callOptions) => {
        const snapshot = ref.getSnapshot();
        if (!snapshot.matches('ready')) {
          throw new Error(`server "${name}" is not ready (state: ${topState(snapshot)})`);
        }
        try {
          return await live.connection.callTool(original, args, callOptions);
        } catch (failure) {
          if (!retriesAfterReconnect(tool, failure, callOptions.signal)) throw failure;
          const again = await reconnected(ref, live, snapshot.context.config.call_timeout_seconds * 1000);
          if (!again) throw failure;
          return again.connection.callTool(original, args, callOptions);
        }
      }, { maxResultBytes: built.maxResultBytes });
      built.tools.set(tool, agentTool);
      return agentTool;
    });
    const config = ref.getSnapshot().context.config;
    tools.push(
      ...resourceAgentTools(name, live.connection.client, {
        filter,
        ownTools: live.connection.allTools,
        timeoutMs: config.call_timeout_seconds * 1000,
        maxResultBytes: config.max_result_bytes,
        secrets: secretValues(config),
        ensureReady() {
          const snapshot = ref.getSnapshot();
          if (!snapshot.matches('ready')) throw new Error(`server "${name}" is not ready (state: ${topState(snapshot)})`);
        },
      }),
    );
    registry.register(name, tools);
    for (const tool of tools) lastOwner.set(tool.name, name);
    journal.append({
      type: 'tools.registered',
      server: name,
      tools: tools.map((tool) => ({ name: tool.name, original: tool.originalName, description: tool.description })),
    });
    // A re-registration on the same connection (changed filter or tool list) keeps its session.
    if (sessions.get(ref)?.live !== live) {
      endSession(ref);
      sessions.set(ref, startServerSession({
        server: name,
        config,
        live,
        owner: ref,
        journal,
        prompts,
        logger,
        retool: () => ref.send({ type: 'server.retool', config: ref.getSnapshot().context.config }),
      }));
    }
  }

  function endSession(ref: ServerActorRef): void {
    sessions.get(ref)?.stop();
    sessions.delete(ref);
  }

  function unregisterTools(ref: ServerActorRef, name: string): void {
    endSession(ref);
    // A successor actor may already have registered under this name.
    if (current(name) !== ref && current(name)?.getSnapshot().matches('ready')) return;
    const removed = registry.unregister(name);
    journal.append({ type: 'tools.unregistered', server: name, tools: removed });
  }

  /**
   * The agent tools built on a connection, by listing item: a re-sync keeps the
   * items that did not change (catalog-sync), so only changed tools are built
   * again. A new `max_result_bytes` builds them all anew.
   */
  function builtToolsOf(live: LiveConnection, maxResultBytes: number): BuiltTools {
    let built = builtTools.get(live);
    if (built?.maxResultBytes !== maxResultBytes) {
      built = { maxResultBytes, tools: new WeakMap() };
      builtTools.set(live, built);
    }
    return built;
  }

  /** Serializes management operations per server name. */
  function withLock<T>(name: string, task: () => Promise<T>): Promise<T> {
    const previous = locks.get(name) ?? Promise.resolve();
    const run = previous.then(task, task);
    const tail = run.catch(() => undefined);
    locks.set(name, tail);
    void tail.then(() => locks.get(name) === tail && locks.delete(name));
    return run;
  }

  function requireRunning(): NonNullable<typeof actor> {
    if (!actor) throw new Error('the host is not started: call start() first');
    if (stopping) throw new Error('the host is shutting down');
    return actor;
  }

  /** Installs `config` under `name` and waits until it leaves `pending`. */
  /** Installs `config` under `name`; resolves once it left `pending` and the replaced child has exited. */
  async function install(name: string, config: ServerConfig): Promise<ServerActorRef> {
    const running = requireRunning();
    running.send({ type: 'server.install', name, config });
    const ref = current(name)!;
    await leftPending(ref, config.timeout_seconds * 1000);
    await childrenGone(name);
    return ref;
  }

  /** Stops and forgets `name`; resolves once its child has exited. */
  async function uninstall(name: string): Promise<void> {
    const ref = current(name);
    requireRunning().send({ type: 'server.uninstall', name });
    if (ref) await waitFor(ref, (snapshot) => snapshot.status !== 'active');
    await childrenGone(name);
  }

  function view(name: string): ServerView {
    const found = host.server(name);
    if (!found) throw new NotFoundError(name);
    return found;
  }

  /** Applies a hand edit of the config file: only the servers whose entry changed are touched. */
  async function reconcile(): Promise<void> {
    if (!actor || stopping) return;
    const loaded = await store.load();
    if (loaded.broken) {
      logger.warn(
        `config: ignored an edit of ${loaded.broken.file} that does not parse (${loaded.broken.problem}); ` +
          'the running servers are unchanged and the file will not be overwritten',
      );
      return;
    }
    const persisted = new Map(loaded.servers);
    const names = new Set([...persisted.keys(), ...Object.keys(actor.getSnapshot().context.servers)]);
    const edits = [...names].map((name) => {
      // An entry that does not validate was skipped with a warning; it is not a deletion.
      if (loaded.invalidNames.includes(name)) return undefined;
      // A management action on it is under way and persists what it runs.
      if (locks.has(name)) return undefined;
      return withLock(name, () => applyEdit(name, persisted.get(name)));
    });
    await Promise.all(edits);
  }

  async function applyEdit(name: string, config: ServerConfig | undefined): Promise<void> {
    if (stopping) return;
    const ref = current(name);
    if (!config) {
      if (ref) await uninstall(name);
      return;
    }
    if (!ref) {
      await install(name, config);
      return;
    }
    const running = ref.getSnapshot().context.config;
    if (isDeepStrictEqual(running, config)) return;
    // The tool filter and the result bound only shape the registration: re-register, keep the process.
    if (isDeepStrictEqual({ ...running, tools: config.tools, max_result_bytes: config.max_result_bytes }, config)) {
      ref.send({ type: 'server.retool', config });
      return;
    }
    await install(name, config);
  }

  async function persistedConfig(name: string): Promise<ServerConfig | undefined> {
    const loaded = await store.load();
    return loaded.servers.find(([candidate]) => candidate === name)?.[1];
  }

  const host: McpHost = {
    stateDir,

    async start() {
      if (actor) return;
      const loaded = await store.load();
      actor = createRegistryActor(loaded.servers.map(([name, config]) => ({ name, config })));
      const seen = new Set<ServerActorRef>();
      actor.subscribe((snapshot) => {
        for (const ref of Object.values(snapshot.context.servers)) {
          if (!seen.has(ref)) {
            seen.add(ref);
            attach(ref);
          }
        }
      });
      actor.start();
      for (const ref of Object.values(actor.getSnapshot().context.servers)) {
        if (!seen.has(ref)) {
          seen.add(ref);
          attach(ref);
        }
      }
      if (options.watchConfig !== false) {
        // Edits are applied one after another; a burst of saves is debounced by the watcher.
        let applying = Promise.resolve();
        stopWatching = watchFile(store.file(), () => {
          applying = applying
            .then(reconcile)
            .catch((failure: Error) => logger.warn(`config: could not apply an edit: ${failure.message}`));
        });
      }
    },

    async settled() {
      const running = requireRunning();
      await waitFor(running, (snapshot) => !snapshot.matches('starting'), { timeout: Infinity });
    },

    tools: () => registry.list(),

    async callTool(name, args, callOptions) {
      const tool = registry.get(name);
      if (tool) return tool.execute(args, callOptions);
      const owner = lastOwner.get(name);
      if (owner) {
        const state = projection.context.servers[owner];
        // Ready, yet without the tool: the server dropped it (list_changed) or the filter hides it now.
        if (state?.state === 'ready') {
          return errorResult(owner, name, `tool "${name}" is unavailable: server "${owner}" no longer offers it`);
        }
        const why = state ? `state: ${state.state}${state.error ? ` — ${state.error}` : ''}` : 'it was removed';
        return errorResult(owner, name, `tool "${name}" is unavailable: server "${owner}" is not ready (${why})`);
      }
      return errorResult('', name, `unknown tool "${name}"`);
    },

    status: () => serverViews(projection.context),
    server: (name) => serverViews(projection.context).find((view) => view.name === name),
    events: (since) => journal.since(since),
    subscribe: (listener) => journal.subscribe(listener),

    addServer(name, input) {
      return withLock(name, async () => {
        const config = parseServerConfig(name, input);
        if (current(name) || (await persistedConfig(name))) throw new ConflictError(name);
        const ref = await install(name, config);
        const { error, errorKind } = ref.getSnapshot().context;
        if (ref.getSnapshot().matches('error')) {
          await uninstall(name);
          throw new StartFailedError(name, errorKind ?? 'protocol', error ?? 'unknown error');
        }
        try {
          await store.update((servers, { invalidNames }) => {
            // A hand-written entry of that name that does not validate is still the user's.
            if (name in servers || invalidNames.includes(name)) throw new ConflictError(name);
            return { ...servers, [name]: config };
          });
        } catch (failure) {
          await uninstall(name);
          throw failure;
        }
        return view(name);
      });
    },

    updateServer(name, patch) {
      return withLock(name, async () => {
        const previous = (await persistedConfig(name)) ?? current(name)?.getSnapshot().context.config;
        if (!previous) throw new NotFoundError(name);
        const next = mergePatch(previous, patch);
        const ref = await install(name, next);
        if (ref.getSnapshot().matches('error')) {
          const { error, errorKind } = ref.getSnapshot().context;
          await install(name, previous);
          throw new StartFailedError(name, errorKind ?? 'protocol', error ?? 'unknown error');
        }
        await store.update((servers) => ({ ...servers, [name]: next }));
        return view(name);
      });
    },

    removeServer(name) {
      return withLock(name, async () => {
        const persisted = await persistedConfig(name);
        if (!current(name) && !persisted) throw new NotFoundError(name);
        await uninstall(name);
        if (persisted) {
          await store.update((servers) => {
            delete servers[name];
            return servers;
          });
        }
        // Its tokens must not outlive it (a later server of that name is a new one).
        await oauth.forget(name);
      });
    },

    restartServer(name) {
      return withLock(name, async () => {
        const config = (await persistedConfig(name)) ?? current(name)?.getSnapshot().context.config;
        if (!config) throw new NotFoundError(name);
        await install(name, config);
        return view(name);
      });
    },

    async beginAuth(name) {
      requireRunning();
      const ref = current(name);
      if (!ref) throw new NotFoundError(name);
      return oauth.begin(ref, {
        name,
        config: ref.getSnapshot().context.config,
        state: () => topState(ref.getSnapshot()),
        send: (event) => ref.send(event),
      });
    },

    catalog() {
      const servers = actor?.getSnapshot().context.servers ?? {};
      return host.status().map((status) => {
        const ref = servers[status.name];
        const offer = (ref && sessions.get(ref)?.offer()) ?? { resources: [], prompts: [] };
        const tools = registry.forServer(status.name).map((tool) => ({
          name: tool.name,
          original: tool.originalName,
          description: tool.description,
          parameters: tool.parameters,
        }));
        return { ...status, tools, resources: offer.resources, prompts: offer.prompts };
      });
    },

    prompts: () => prompts.list(),
    renderPrompt: (command, args, renderOptions) => prompts.render(command, args, renderOptions),

    async catalogDiff() {
      const loaded = await store.load();
      const running = Object.entries(actor?.getSnapshot().context.servers ?? {}).map(
        ([name, ref]) => [name, ref.getSnapshot().context.config] as [string, ServerConfig],
      );
      return computeDiff(loaded.servers, running);
    },

    secrets() {
      return Object.values(actor?.getSnapshot().context.servers ?? {}).flatMap((ref) =>
        secretValues(ref.getSnapshot().context.config),
      );
    },

    roots: () => clientHandlers.roots?.list() ?? [],

    async setRoots(roots) {
      if (clientHandlers.roots === null) {
        throw new Error('setRoots: this host declared no roots; create it with a `roots` option (e.g. `roots: []`)');
      }
      await clientHandlers.roots.set(parseRoots(roots, 'setRoots'));
    },

    shutdown() {
      if (stopping) return stopping;
      stopping = (async () => {
        stopWatching();
        if (!actor) return;
        const refs = Object.values(actor.getSnapshot().context.servers);
        actor.send({ type: 'registry.shutdown' });
        await Promise.all(refs.map((ref) => waitFor(ref, (snapshot) => snapshot.status !== 'active')));
        // Closing connections and abandoned handshakes end their children before settling.
        await childrenGone();
        actor.stop();
      })();
      return stopping;
    },
  };
  return host;
}
