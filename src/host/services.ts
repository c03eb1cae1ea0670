/**
 * The services one host runs on, made from its options: its stores, its
 * journal and what is derived from it, the tool mount, the catalog freshness,
 * OAuth, and its work for the server actors. Every one is
 * this host's own: two hosts in one process share none of them.
 */
import { join } from 'node:path';
import type { HostLogger, McpHostOptions } from './api.js';
import { secretValues } from '../config/masking.js';
import { checkHostOptions } from './options.js';
import { createServerHost } from './server-actors.js';
import { createToolMount } from './tool-mount.js';
import { createDrain } from './drain.js';
import { createApprovals } from '../approvals/approvals.js';
import { createServerAuth } from '../auth/server-auth.js';
import { createCatalogFreshness } from '../catalog/freshness.js';
import { createResultSpill } from '../catalog/tools/result-spill.js';
import { resolveStateDir } from '../config/paths.js';
import { createConfigStore, type ConfigStore } from '../config/store.js';
import { createClientHandlers } from '../connection/capabilities/client-handlers.js';
import { createPromptRegistry } from '../connection/capabilities/prompts.js';
import { parseRoots } from '../connection/capabilities/roots.js';
import { eraVerdictsPath, fileEraVerdicts, memoryEraVerdicts } from '../connection/era-verdicts.js';
import { createMemoryEventStore } from '../journal/event-store.js';
import { createFileEventStore } from '../journal/file-event-store.js';
import { createJournal, type Journal } from '../journal/journal.js';
import { createSelectors } from '../journal/selectors.js';
import { createLifecycles } from '../telemetry/lifecycle.js';
import { own } from '../records.js';

export type HostServices = ReturnType<typeof createHostServices>;

export function createHostServices(options: McpHostOptions) {
  checkHostOptions(options);
  const stateDir = options.stateDir ?? resolveStateDir();
  const startupConcurrency = options.startupConcurrency ?? 1;
  const logger: HostLogger = options.logger ?? { info: () => {}, warn: (message) => console.warn(message) };
  const store: ConfigStore = options.configStore ?? createConfigStore({ stateDir: () => stateDir, logger });
  const onWriteError = (error: Error) => logger.warn(`journal: cannot write: ${error.message}`);
  const journal: Journal = createJournal({
    store:
      options.eventStore ??
      (options.persistJournal === false ? createMemoryEventStore() : createFileEventStore({ stateDir, onWriteError, exclusive: true })),
    onWriteError,
    // A subscriber's own failure, not the journal's: the event was stored.
    onSubscriberError: (error) => logger.warn(`journal: a subscriber threw: ${error.message}`),
    ...(options.workerId === undefined ? {} : { ownWorker: options.workerId }),
  });
  const append = journal.append.bind(journal);
  // Kept results are files by design, also when the journal lives in memory only.
  const spill = createResultSpill({
    dir: join(stateDir, 'results'),
    onError: (error) => logger.warn(`results: ${error instanceof Error ? error.message : String(error)}`),
  });
  const approvals = createApprovals({ append, approve: options.approve });
  // This host's own: what it derives from its journal is kept for it alone.
  const selectors = createSelectors({ stored: (name) => store.stored(name) });
  const mount = createToolMount({ append, projected: () => journal.projection.context, selectors, spill, approvals });
  const catalogs = createCatalogFreshness();
  const prompts = createPromptRegistry({ listed: (server) => catalogs.listed(server) });
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
    ...(options.samplingForCallers === true && { samplingForCallers: true }),
    elicitation: options.elicitation,
    roots: options.roots === undefined ? undefined : parseRoots(options.roots, 'createMcpHost'),
    onNotifyError: (server, error) => logger.warn(`roots: could not tell ${server} of the new roots: ${error.message}`),
  });
  // Every configured server's secrets, redacted from any failure a server tells: its process may print another's.
  // Asked only when a connect or call failed: each stored config's secrets are worked out once (frozen configs).
  const fleetSecrets = () =>
    Object.keys(journal.projection.context.servers).flatMap((name) => {
      const entry = store.stored(name);
      return entry === undefined ? [] : secretValues(entry.config);
    });
  // This host's own: another host in the process may run a server of the same name.
  const lifecycles = createLifecycles();
  const server = createServerHost({
    auth,
    clientHandlers,
    prompts,
    append,
    logger,
    leftovers,
    eras,
    knowsCatalog: (name) => (own(journal.projection.context.servers, name)?.known_tools ?? null) !== null,
    catalogs,
    lifecycles,
    fleetSecrets,
  });

  return {
    stateDir,
    startupConcurrency,
    logger,
    store,
    journal,
    append,
    spill,
    approvals,
    selectors,
    fleetSecrets,
    mount,
    prompts,
    catalogs,
    freshenSoon,
    auth,
    leftovers,
    eras,
    clientHandlers,
    lifecycles,
    server,
  };
}
