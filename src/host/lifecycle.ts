/**
 * The host machine's actor with this host's work: what opening, publishing,
 * watching and stopping do. The machine (machines/host.machine.ts, built once
 * per process) decides when each runs; this module only binds the work to the
 * host's stores and services and hands it to the actor in its input.
 */
import { createActor, waitFor } from 'xstate';
import { hostMachine, type HostWork, type RegistryRef } from '../machines/host.machine.js';
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { ServerHost } from '../machines/server.machine.js';
import type { Reread } from '../machines/registry.events.js';
import type { ConfigStore } from '../config/index.js';
import type { CredentialsStore } from '../auth/index.js';
import type { Journal } from '../journal/index.js';
import { statesByServer, type Presence } from '../fleet/presence.js';
import type { ServerView } from '../journal/index.js';
import { HostNotRunningError } from '../errors.js';
import type { HostLogger } from './api.js';
import { reconcile } from './reconcile.js';
import { own } from '../records.js';

export interface LifecycleDeps {
  store: ConfigStore;
  journal: Journal;
  logger: HostLogger;
  /** This host's work for its server actors. */
  server: ServerHost;
  startupConcurrency: number;
  watchConfig: boolean;
  credentialsStore?: CredentialsStore;
  presence?: Presence;
  publicUrl?: string;
  workerId?: string;
  /** Observes one server actor (the journal bridge); called once per actor. */
  bridge(ref: ServerActorRef): void;
  /** A management transaction runs on the server; resolves once none does. */
  busy(name: string): boolean;
  idle(name: string): Promise<void>;
  /** Children abandoned mid-handshake are gone. */
  leftoversGone(): Promise<void>;
  /** Every per-user session has ended (its process gone, its HTTP session deleted). */
  endSessions(): Promise<void>;
  /** Answers the calls waiting for an approval (they are not made). */
  closeApprovals(): void;
  /** Closes the result spill and waits for the era verdicts to be written. */
  closeOwnStores(): Promise<void>;
  status(): ServerView[];
}

export interface HostLifecycle {
  start(): Promise<void>;
  shutdown(): Promise<void>;
  /** The registry of a running host; throws HostNotRunningError before start and from shutdown on. */
  running(): RegistryRef;
  /** Shutdown has begun (asked for): nothing starts any more. */
  stopping(): boolean;
  servers(): Record<string, ServerActorRef>;
  current(name: string): ServerActorRef | undefined;
  /** Tokens were stored for a server here (a consent answered by this worker). */
  tokensStored(server: string): void;
}

export function createHostLifecycle(deps: LifecycleDeps): HostLifecycle {
  // Taken apart here, not kept: the deps object itself dies once the host is made.
  const { store, journal, logger, credentialsStore, presence, publicUrl, workerId, busy, idle, leftoversGone, endSessions, closeApprovals, closeOwnStores, status } = deps;
  const bridgeActor = deps.bridge;

  /** A store that cannot be read (a database away) is no deletion: the server keeps the config it was queued with. */
  function unreadable(name: string, error: unknown): Reread {
    logger.warn(`config: cannot re-read server ${name} (${(error as Error).message}); using the config it was queued with`);
    return { status: 'unreadable' };
  }

  async function reread(name: string): Promise<Reread> {
    let loaded: Awaited<ReturnType<ConfigStore['load']>>;
    try {
      loaded = await store.load();
    } catch (error) {
      return unreadable(name, error);
    }
    // A typo in the entry is not a deletion: keep the config it was queued with.
    if (loaded.broken || loaded.invalid.some((entry) => entry.name === name)) return { status: 'unreadable' };
    const entry = loaded.servers.find((server) => server[0] === name);
    return entry ? { status: 'found', config: entry[1] } : { status: 'deleted' };
  }

  const work: HostWork = {
    registry: { server: deps.server, reread },
    async open() {
      // The projection is rebuilt from the store before any actor reports.
      await journal.open();
      const loaded = await store.load();
      // Servers the previous run knew that the file no longer has are gone.
      const configured = new Set(loaded.servers.map((server) => server[0]));
      for (const name of Object.keys(journal.projection.context.servers)) {
        if (!configured.has(name)) journal.append({ type: 'server.removed', server: name });
      }
      return loaded.servers.map((server) => ({ name: server[0], config: server[1] }));
    },
    bridge(registry) {
      // Every actor the registry publishes is observed once.
      const bridged = new WeakSet<ServerActorRef>();
      // The registry's record of servers changes only when one is installed or uninstalled:
      // its other snapshots (two per server starting) need no walk over every server.
      let walked: Record<string, ServerActorRef> | null = null;
      const bridgeAll = () => {
        const { servers } = registry.getSnapshot().context;
        if (servers === walked) return;
        walked = servers;
        for (const ref of Object.values(servers)) {
          if (bridged.has(ref)) continue;
          bridged.add(ref);
          bridgeActor(ref);
        }
      };
      const subscription = registry.subscribe(bridgeAll);
      bridgeAll();
      return () => subscription.unsubscribe();
    },
    // The views show this run's states once start resolves, also with a store that tells its events only
    // once stored (a local store has told them already: no wait on its writes).
    async catchUp() {
      if (journal.behind) await journal.flushed();
    },
    // A burst of saves is debounced by the watcher.
    watchConfig: (changed) => store.watch(changed),
    watchTokens: (stored) => credentialsStore?.watchTokens?.(stored) ?? (() => {}),
    reconcile: (registry, signal) =>
      reconcile({
        store,
        // A reconcile cut short by shutdown applies nothing.
        registry: () => (signal.aborted ? null : registry),
        servers: () => registry.getSnapshot().context.servers,
        busy,
        warn: (message) => logger.warn(message),
      }),
    async awaitIdle(names) {
      await Promise.all(names.map((name) => idle(name)));
    },
    announce() {
      const listed = presence!;
      listed.start(publicUrl ?? null, () => statesByServer(status()));
      // Rewritten soon after each of this host's own transitions.
      return journal.subscribe((event) => {
        const own = event.worker === undefined || event.worker === workerId;
        if (own && (event.type === 'server.transitioned' || event.type === 'server.removed')) listed.changed();
      });
    },
    async stopServers(registry) {
      const refs = Object.values(registry.getSnapshot().context.servers);
      // Each actor is done once its process is gone (it closes in its own `closing` state); the sessions end beside them.
      await Promise.all([
        ...refs.map((ref) => waitFor(ref, (snapshot) => snapshot.status !== 'active', { timeout: Infinity })),
        endSessions(),
      ]);
      // Handshakes abandoned mid-way close their children in the background.
      await leftoversGone();
    },
    async leaveFleet() {
      await presence?.stop();
    },
    async closeStores() {
      await closeOwnStores();
      await journal.close();
    },
    closeApprovals: () => closeApprovals(),
    reportReconcileFailure(error) {
      logger.warn(`config: could not apply an edit: ${(error as Error).message}`);
    },
  };
  const actor = createActor(hostMachine, {
    input: { startupConcurrency: deps.startupConcurrency, watchConfig: deps.watchConfig, listed: presence !== undefined, work },
  });
  actor.start();

  let starting: Promise<void> | null = null;
  let stopping: Promise<void> | null = null;
  const servers = (): Record<string, ServerActorRef> => actor.getSnapshot().context.registry?.getSnapshot().context.servers ?? {};

  return {
    start() {
      // Once shut down, a host starts no more: a start() after shutdown() is refused, not answered from the first.
      if (stopping !== null) return Promise.reject(new HostNotRunningError('shutting_down'));
      starting ??= (async () => {
        // A host shut down before it was started takes nothing any more.
        if (actor.getSnapshot().status === 'active') actor.send({ type: 'host.start' });
        const outcome = await waitFor(actor, (snapshot) => !snapshot.matches('idle') && !snapshot.matches('starting'), { timeout: Infinity });
        if (outcome.context.startError !== undefined) throw outcome.context.startError;
        // Shut down before it was started: nothing was published.
        if (outcome.context.registry === null) throw new HostNotRunningError('shutting_down');
      })();
      return starting;
    },
    shutdown() {
      stopping ??= (async () => {
        actor.send({ type: 'host.shutdown' });
        const outcome = await waitFor(actor, (snapshot) => snapshot.status === 'done', { timeout: Infinity });
        if (outcome.context.stopError !== undefined) throw outcome.context.stopError;
      })();
      return stopping;
    },
    running() {
      const snapshot = actor.getSnapshot();
      if (snapshot.matches('stopping') || snapshot.matches('stopped') || snapshot.context.stopRequested) {
        throw new HostNotRunningError('shutting_down');
      }
      if (snapshot.context.registry === null) throw new HostNotRunningError('not_started');
      return snapshot.context.registry;
    },
    stopping: () => {
      const snapshot = actor.getSnapshot();
      return snapshot.context.stopRequested || snapshot.matches('stopping') || snapshot.matches('stopped');
    },
    servers,
    current: (name) => own(servers(), name),
    tokensStored: (server) => actor.send({ type: 'tokens.stored', server }),
  };
}
