/**
 * The work one host does for its server actors (`ServerHost`, handed to each
 * actor in its input): how it connects (OAuth provider, the host's answers to server requests), checks
 * and refreshes tokens, runs a consent, and what runs beside a ready
 * connection. The machine decides when each runs; nothing here keeps state
 * per server.
 */
import type { ServerHost } from '../machines/server.machine.js';
import type { PromptRegistry } from '../connection/index.js';
import type { ClientHandlers } from '../connection/index.js';
import type { CatalogFreshness } from '../catalog/index.js';
import { startServerSession } from '../catalog/session.js';
import { openLiveConnection } from '../connection/live-connection.js';
import type { JournalEventInput } from '../journal/index.js';
import type { ServerAuth } from '../auth/index.js';
import type { EraVerdicts } from '../connection/index.js';
import type { Lifecycles } from '../telemetry/index.js';
import type { Drain } from './drain.js';
import { isFleetError } from '../errors.js';

export interface ServerActorDeps {
  auth: ServerAuth;
  clientHandlers: ClientHandlers;
  prompts: PromptRegistry;
  append(event: JournalEventInput): void;
  logger: { info(message: string): void; warn(message: string): void };
  /** Connects the machine abandoned (stopped mid-handshake) close their child here; shutdown waits for it. */
  leftovers: Drain;
  /** What is known of each server's protocol era. */
  eras: EraVerdicts;
  /** Whether a server's catalog from an earlier run is known (an `on_demand` server waits with it published). */
  knowsCatalog(name: string): boolean;
  /** The ready servers' catalog syncs, for reads and forced refreshes. */
  catalogs: CatalogFreshness;
  /** This host's lifecycle spans: a server's connect and re-sync spans go under its own. */
  lifecycles: Lifecycles;
  /** Every configured secret of every server: a server's failure may quote another's (its stderr printing a shared key). */
  fleetSecrets(): string[];
}

/** This host's work for its server actors (the machine, shared by every host, is handed it in each actor's input). */
export function createServerHost(deps: ServerActorDeps): ServerHost {
  // Taken apart, not kept: the deps object itself dies once the host is made.
  const { auth, clientHandlers, prompts, append, logger, leftovers, eras, catalogs, lifecycles, fleetSecrets, knowsCatalog } = deps;
  /**
   * What a connection keeps for its life, made where only the server's name
   * is in scope: a closure made inside `connect` would keep the connect's
   * abort signal and work alive with it (~1.5 KiB per ready server).
   */
  const connectionOptions = (name: string) => ({
    setupClient: clientHandlers.setup(name),
    answerInput: (request: Parameters<typeof clientHandlers.answer>[1], signal: AbortSignal) => clientHandlers.answer(name, request, signal),
    eras,
    lifecycle: () => lifecycles.spanOf(name),
    fleetSecrets,
  });
  return {
    knowsCatalog,
    connect: (work, signal) =>
      leftovers.add(
        auth.providerFor(work.name, work.config).then((provider) =>
          openLiveConnection(work.name, work.config, signal, {
            authProvider: provider,
            ...connectionOptions(work.name),
          }).catch((error: unknown) => {
            // Refused or unreachable because the token could not be refreshed: the authorization server is the one away.
            const away = provider?.away ?? null;
            throw away !== null && isFleetError(error) && (error.kind === 'unreachable' || error.kind === 'auth') ? away : error;
          }),
        ),
      ),
    checkAuth: async (work) => ((await auth.needsRefresh(work.name, work.config)) ? 'refresh' : 'connect'),
    refreshToken: (work) => auth.refresh(work.name, work.config),
    consent: (work, sendBack) => auth.consent(work.name, work.config, sendBack),
    catalogSession: (work, sendBack) =>
      startServerSession({
        server: work.name,
        config: work.config,
        live: work.live,
        append,
        prompts,
        logger,
        onToolsChanged: () => sendBack({ type: 'catalog.tools_changed' }),
        catalogs,
        fleetSecrets,
      }),
  };
}
