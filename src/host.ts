import { waitFor } from 'xstate';
import type { McpHost, McpHostOptions } from './host/api.js';
import { createAgentTools } from './host/agent-tools.js';
import { createHostApps } from './host/apps.js';
import { catalogEntries } from './host/catalog-entries.js';
import { createManagement } from './host/management.js';
import { bridgeServer, type JournalBridgeOptions } from './host/journal-bridge.js';
import { createHostLifecycle } from './host/lifecycle.js';
import { createHostServices } from './host/services.js';
import { diffWithStore } from './catalog/config-diff.js';
import { secretValues } from './config/masking.js';
import type { ServerConfig } from './config/index.js';
import { clientMetadataDocument } from './auth/client-metadata-document.js';
import { NotFoundError } from './errors.js';
import { SETTLE_MARGIN_MS, settled as serverSettled } from './machines/server.queries.js';
import { parseRoots } from './connection/capabilities/roots.js';
import { createFileInputsStore, createQuotas } from './users/index.js';
import { principalOf } from './host/access.js';
import { createPerUser } from './host/user-inputs.js';
import { createServerLinks } from './host/server-link.js';
import { createConsents } from './host/consents.js';
import { createCatalogRefresh } from './host/catalog-refresh.js';
import { checkReadEvents } from './host/options.js';

export type { CatalogCounts, CatalogDiff, CatalogEntry, HostLogger, InputsView, McpHost, McpHostOptions } from './host/api.js';
export type { SessionView } from './host/sessions.js';
export type { ServerLink } from './host/server-link.js';

/** Creates a host on a state dir. Nothing runs until `start()`. */
export function createMcpHost(options: McpHostOptions = {}): McpHost {
  const services = createHostServices(options);
  const { stateDir, logger, store, journal, append, spill, approvals, selectors, mount, prompts, catalogs, freshenSoon } = services;
  const { auth, leftovers, eras, clientHandlers, lifecycles, server } = services;

  let bridging: JournalBridgeOptions | undefined;
  const lifecycle = createHostLifecycle({
    store,
    journal,
    logger,
    server,
    startupConcurrency: services.startupConcurrency,
    watchConfig: options.watchConfig !== false,
    ...(options.credentialsStore && { credentialsStore: options.credentialsStore }),
    ...(options.presence && { presence: options.presence }),
    ...(options.publicUrl !== undefined && { publicUrl: options.publicUrl }),
    ...(options.workerId !== undefined && { workerId: options.workerId }),
    bridge(ref) {
      // One options object for every server's bridge: each keeps it for the server's life.
      bridging ??= { append, mount, current, onFailure: (name, state, kind, error) => logger.warn(`server ${name}: ${state} (${kind}): ${error}`), lifecycles };
      bridgeServer(ref, bridging);
    },
    busy: (name) => management.busy(name),
    idle: (name) => management.idle(name),
    leftoversGone: () => leftovers.empty(),
    endSessions: () => sessions.shutdown(),
    closeApprovals: () => approvals.close(),
    async closeOwnStores() {
      spill.close();
      await eras.flushed();
    },
    status: () => host.status(),
  });
  const { servers, current, running } = lifecycle;

  const inputsStore = options.userInputs ?? createFileInputsStore({ stateDir });
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
    // A removed server's grants and its users' inputs go with it: a new server of the name starts with none.
    forgetCredentials: async (name) => {
      await auth.forget(name);
      await inputsStore.forget({ server: name });
    },
  });

  const projected = () => journal.projection.context;
  const { sessions, hostInputs } = createPerUser({
    store: inputsStore,
    append,
    current,
    projected,
    subscribe: (listener) => journal.subscribe(listener),
    grantProvider: (name, principal, config) => auth.grantProvider(name, principal, config),
    setupClient: (name) => clientHandlers.setupForCallers(name), // a session's server asks the gateway client it serves
    fleetSecrets: services.fleetSecrets,
    forgetGrants: (principal) => auth.forgetGrants({ principal }),
    workerId: options.workerId,
  });

  const { meterAppCall, ...agentTools } = createAgentTools({
    ...{ mount, spill, selectors, projected, servers, current, freshenSoon, append },
    stopping: lifecycle.stopping,
    quotas: createQuotas(options.userQuota),
    sessions,
  });

  const links = createServerLinks({ mount, sessions, projected, current, running, meter: meterAppCall });

  const apps = createHostApps({ mount, selectors, projected, current, sessions, serverLink: links.serverLink, meter: meterAppCall, subscribe: (listener) => journal.subscribe(listener) });

  const consents = createConsents({ auth, management, sessions, append, current, servers, running, tokensStored: (name) => lifecycle.tokensStored(name) });

  const host: McpHost = {
    stateDir,

    start: () => lifecycle.start(),

    async settled() {
      const registry = running();
      await waitFor(registry, (snapshot) => !snapshot.matches('starting'), { timeout: Infinity });
      // The queue moves on at a server's timeout_seconds, maybe just before the server's own deadline ends its start.
      await Promise.all(Object.values(servers()).map((ref) => serverSettled(ref, ref.getSnapshot().context.config.timeout_seconds * 1000 + SETTLE_MARGIN_MS)));
      // The registry knows before the views do when a shared store tells its events only once stored.
      if (journal.behind) await journal.flushed();
    },

    ...agentTools,
    toolUi: apps.toolUi,
    appBridge: apps.appBridge,
    ...links,

    status: () => selectors.status(projected()),
    server: (name) => selectors.server(projected(), name),
    events: (since) => journal.since(since),
    async readEvents(since, limit) {
      checkReadEvents(since, limit); // refused as a rejection, as the read's own failures are
      return journal.read(since, limit);
    },
    subscribe: (listener) => journal.subscribe(listener),

    addServer: (name, input) => management.add(name, input),
    updateServer: (name, patch, updateOptions) => management.update(name, patch, updateOptions),
    removeServer: (name, removeOptions) => management.remove(name, removeOptions),
    restartServer: (name) => management.restart(name),
    ...consents,

    catalog(catalogOptions) {
      freshenSoon();
      return catalogEntries(host.status(), projected(), mount, sessions, principalOf(catalogOptions?.principal)?.id);
    },

    prompts() {
      freshenSoon();
      return prompts.list();
    },

    freshen: () => catalogs.freshen(),

    refreshCatalog: createCatalogRefresh({ running, server: (name) => host.server(name), catalogs, mount, sessions }),
    renderPrompt: (command, args, renderOptions) => prompts.render(command, args, renderOptions),

    catalogDiff: () => diffWithStore(store, Object.entries(servers()).map(([name, ref]): [string, ServerConfig] => [name, ref.getSnapshot().context.config])),

    clientMetadataDocument: () => (options.publicUrl === undefined ? null : clientMetadataDocument(options.publicUrl)),

    secrets() {
      return [...Object.values(servers()).flatMap((ref) => secretValues(ref.getSnapshot().context.config)), ...sessions.secrets()];
    },

    roots: () => clientHandlers.roots?.list() ?? [],
    duringCallOf: (server, client, run) => clientHandlers.forwarding.during(server, client, run),

    approvals: () => approvals.pending(),
    // Journaled with who decided (`decided_by`): the principal, else the admin.
    decideApproval: (id, decision, by, decideOptions) => approvals.decide(id, decision, by, principalOf(decideOptions?.principal)?.id),

    async setRoots(roots) {
      if (clientHandlers.roots === null) {
        throw new Error('setRoots: this host declared no roots; create it with a `roots` option (e.g. `roots: []`)');
      }
      await clientHandlers.roots.set(parseRoots(roots, 'setRoots'));
    },

    ...hostInputs,

    async shutdown() {
      try {
        await lifecycle.shutdown();
      } finally {
        apps.close();
      }
    },
  };
  return host;
}
