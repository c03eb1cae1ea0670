import { join } from 'node:path';
import { waitFor } from 'xstate';
import type { HostLogger, McpHost, McpHostOptions } from './host/api.js';
import { createManagement } from './host/management.js';
import { bridgeServer } from './host/journal-bridge.js';
import { createHostLifecycle } from './host/lifecycle.js';
import { eraVerdictsPath, fileEraVerdicts, memoryEraVerdicts } from './connection/era-verdicts.js';
import { hostServerMachine } from './host/server-actors.js';
import { createLifecycles } from './telemetry/lifecycle.js';
import { createOnDemand } from './host/on-demand.js';
import { createToolMount } from './host/tool-mount.js';
import { createResultSpill } from './catalog/tools/result-spill.js';
import { createReadResultTool, READ_RESULT_TOOL } from './catalog/tools/read-result-tool.js';
import { createFleetSearch, waitsOnDemand } from './host/tool-search.js';
import { SEARCH_TOOLS_NAME } from './catalog/tools/search-tools-tool.js';
import { createDeferredTools } from './host/deferred-tools.js';
import { errorResult, type AgentTool } from './catalog/tools/agent-tool.js';
import { computeDiff } from './catalog/config-diff.js';
import { createCatalogFreshness } from './catalog/freshness.js';
import { secretValues } from './config/masking.js';
import type { ServerConfig } from './config/index.js';
import { createConfigStore, type ConfigStore } from './config/store.js';
import { clientMetadataDocument } from './auth/client-metadata-document.js';
import { NotFoundError, NotReadyError } from './errors.js';
import { createDrain } from './host/drain.js';
import { createJournal, type Journal } from './journal/journal.js';
import { createMemoryEventStore } from './journal/event-store.js';
import { createFileEventStore } from './journal/file-event-store.js';
import { createSelectors } from './journal/selectors.js';
import { createServerAuth } from './auth/server-auth.js';
import { resolveStateDir } from './config/paths.js';
import { createPromptRegistry } from './connection/capabilities/prompts.js';
import { createClientHandlers } from './connection/capabilities/client-handlers.js';
import { parseRoots } from './connection/capabilities/roots.js';
import { createApprovals } from './approvals/approvals.js';
import { deniedMessage, isDenied } from './approvals/policy.js';

export type { CatalogCounts, CatalogDiff, CatalogEntry, HostLogger, McpHost, McpHostOptions } from './host/api.js';

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

  const lifecycle = createHostLifecycle({
    store,
    journal,
    logger,
    server,
    startupConcurrency,
    watchConfig: options.watchConfig !== false,
    ...(options.credentialsStore && { credentialsStore: options.credentialsStore }),
    ...(options.presence && { presence: options.presence }),
    ...(options.publicUrl !== undefined && { publicUrl: options.publicUrl }),
    ...(options.workerId !== undefined && { workerId: options.workerId }),
    bridge(ref) {
      bridgeServer(ref, {
        append,
        mount,
        current,
        onFailure: (name, state, kind, error) => logger.warn(`server ${name}: ${state} (${kind}): ${error}`),
        lifecycles,
      });
    },
    busy: (name) => management.busy(name),
    idle: (name) => management.idle(name),
    leftoversGone: () => leftovers.empty(),
    closeApprovals: () => approvals.close(),
    async closeOwnStores() {
      spill.close();
      await eras.flushed();
    },
    status: () => host.status(),
  });
  const { servers, current, running } = lifecycle;

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

  const projected = () => journal.projection.context;

  /** The server a tool name belongs to (see `toolOwner`). */
  const ownerByName = (tool: string): string | undefined => selectors.toolOwner(projected(), tool);

  const onDemand = createOnDemand({ current, projected, stopping: lifecycle.stopping });
  const fleetSearch = createFleetSearch(projected, selectors);
  const deferredTools = createDeferredTools({ servers, search: fleetSearch, onDemand });

  const host: McpHost = {
    stateDir,

    start: () => lifecycle.start(),

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
          resources: server?.resources ?? null,
          resource_templates: server?.templates ?? null,
          prompts: server?.prompts ?? null,
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
      lifecycle.tokensStored(name);
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

    shutdown: () => lifecycle.shutdown(),
  };
  return host;
}
