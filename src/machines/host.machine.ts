import { assign, fromCallback, fromPromise, sendTo, setup, spawnChild, stopChild, type ActorRefFrom } from 'xstate';
import type { ServerConfig } from '../config/index.js';
import { registryMachine, type RegistryHost, type ServerActorRef } from './registry.machine.js';
import { own } from '../records.js';

export type RegistryRef = ActorRefFrom<typeof registryMachine>;

/** The persisted servers, in file order, as the host publishes them. */
export type PublishedServers = Array<{ name: string; config: ServerConfig }>;

/** Events the host actor accepts. */
export type HostEvent =
  | { type: 'host.start' }
  | { type: 'host.shutdown' }
  /** The config watcher: the store was written (by another hand, or a burst of saves, debounced). */
  | { type: 'config.changed' }
  /** The token watcher, or a consent answered here: tokens were stored for `server`. */
  | { type: 'tokens.stored'; server: string }
  /** The attempt under way when tokens came for `server` ended; `awaitsTokens` when it ended waiting for them. */
  | { type: 'attempt.ended'; server: string; ref: ServerActorRef; awaitsTokens: boolean };

export interface HostInput {
  /** How many servers of the startup queue connect at once. */
  startupConcurrency: number;
  /** Whether edits of the config store by another hand are applied. */
  watchConfig: boolean;
  /** Whether the host lists itself among the fleet's workers once published. */
  listed: boolean;
  /** The work each state invokes; without it, a host that opens nothing and publishes no server. */
  work?: HostWork | null;
}

/**
 * What a host does for its machine: the work its states invoke. Handed in the
 * input, so the machine is built once per process and shared by every host.
 */
export interface HostWork {
  /** Opens the journal and loads the config (journaling the removal of servers the config no longer has). */
  open(): Promise<PublishedServers>;
  /** Observes every server actor the registry publishes (the journal bridge); the returned function stops. */
  bridge(registry: RegistryRef): () => void;
  /** Resolves once the views show this run's states (a store that tells its events only once stored). */
  catchUp(): Promise<void>;
  /** Calls back when the config store was written; the returned function stops watching. */
  watchConfig(changed: () => void): () => void;
  /** Calls back when tokens were stored for a server, here or by another worker. */
  watchTokens(stored: (server: string) => void): () => void;
  /** Applies the stored config to the fleet; resolves with the servers it left alone because they were busy. */
  reconcile(registry: RegistryRef, signal: AbortSignal): Promise<string[]>;
  /** Resolves once no management transaction runs on any of `names`. */
  awaitIdle(names: string[]): Promise<void>;
  /** Lists this host among the fleet's workers; the returned function stops rewriting its states. */
  announce(): () => void;
  /** Resolves once every server actor has stopped, every per-user session has ended and the children abandoned mid-handshake are gone. */
  stopServers(registry: RegistryRef): Promise<void>;
  /** Takes this host off the fleet's list. */
  leaveFleet(): Promise<void>;
  /** Closes the result spill, the era verdicts and the journal. */
  closeStores(): Promise<void>;
  /** Answers the calls waiting for an approval (they are not made). */
  closeApprovals(): void;
  /** A reconcile failed (the store could not be read). */
  reportReconcileFailure(error: unknown): void;
  /** The registry's and its servers' work. */
  registry: RegistryHost;
}

type WorkInput = { work: HostWork | null };
const workOf = ({ context }: { context: HostContext }): WorkInput => ({ work: context.work });

export interface HostContext extends Omit<HostInput, 'work'> {
  work: HostWork | null;
  /** The fleet, once published. */
  registry: RegistryRef | null;
  /** `shutdown()` came while starting: the host stops as soon as startup has an outcome. */
  stopRequested: boolean;
  /** A config change came while a reconcile ran: read again once it is done. */
  rereadDue: boolean;
  /** Servers a reconcile left alone because a management transaction ran on them. */
  busy: string[];
  /** Servers whose connect or refresh under way is watched because tokens came meanwhile. */
  watchedAttempts: string[];
  /** Listed among the fleet's workers (taken off the list on the way down). */
  announced: boolean;
  startError: unknown;
  stopError: unknown;
}

const attemptWatchId = (server: string): string => `tokens:${server}`;

/** The server actor published under `name`, if any. */
function serverOf(context: HostContext, name: string): ServerActorRef | undefined {
  return own(context.registry?.getSnapshot().context.servers, name);
}

type TokensFor = { server: string };

/** The server a `tokens.stored` or `attempt.ended` event is about (the actions taken on those events only). */
const serverNamed = (event: HostEvent): string => ('server' in event ? event.server : '');

/**
 * The host's own life: opens its journal and loads its config, publishes the
 * fleet (the registry actor, observed by the journal bridge), runs while
 * watching the config and the credentials, and on the way down stops every
 * server before it takes itself off the fleet's list and closes its stores.
 * The work is the host's (`HostWork`, in the input); this machine decides when.
 */
export const hostMachine = setup({
  types: {
    input: {} as HostInput,
    context: {} as HostContext,
    events: {} as HostEvent,
  },
  actors: {
    open: fromPromise<PublishedServers, WorkInput>(async ({ input }) => (input.work === null ? [] : input.work.open())),
    /** The fleet. */
    registry: registryMachine,
    bridge: fromCallback<HostEvent, WorkInput & { registry: RegistryRef }>(({ input }) => input.work?.bridge(input.registry)),
    catchUp: fromPromise<void, WorkInput>(async ({ input }) => input.work?.catchUp()),
    /** Sends `config.changed` when the config store was written. */
    configWatcher: fromCallback<HostEvent, WorkInput>(({ input, sendBack }) =>
      input.work?.watchConfig(() => sendBack({ type: 'config.changed' })),
    ),
    /** Sends `tokens.stored` when tokens were stored for a server, here or by another worker. */
    tokenWatcher: fromCallback<HostEvent, WorkInput>(({ input, sendBack }) =>
      input.work?.watchTokens((server) => sendBack({ type: 'tokens.stored', server })),
    ),
    reconcile: fromPromise<string[], WorkInput & { registry: RegistryRef }>(async ({ input, signal }) =>
      input.work === null ? [] : input.work.reconcile(input.registry, signal),
    ),
    awaitIdle: fromPromise<void, WorkInput & { names: string[] }>(async ({ input }) => input.work?.awaitIdle(input.names)),
    announce: fromCallback<HostEvent, WorkInput>(({ input }) => input.work?.announce()),
    stopServers: fromPromise<void, WorkInput & { registry: RegistryRef }>(async ({ input }) => input.work?.stopServers(input.registry)),
    leaveFleet: fromPromise<void, WorkInput>(async ({ input }) => input.work?.leaveFleet()),
    closeStores: fromPromise<void, WorkInput>(async ({ input }) => input.work?.closeStores()),
    /**
     * Watches the attempt under way on a server that tokens came for: tells
     * (`attempt.ended`) when it leaves `pending` / `authenticating` without a
     * consent, or when the actor stops (the server was removed).
     */
    watchAttempt: fromCallback<HostEvent, { server: string; ref: ServerActorRef }>(({ input, sendBack }) => {
      const { server, ref } = input;
      const subscription = ref.subscribe({
        next(next) {
          if (next.matches('pending') || (next.matches('authenticating') && !next.matches({ authenticating: 'consenting' }))) return;
          subscription.unsubscribe();
          sendBack({ type: 'attempt.ended', server, ref, awaitsTokens: next.status === 'active' && next.hasTag('awaitsTokens') });
        },
        complete: () => sendBack({ type: 'attempt.ended', server, ref, awaitsTokens: false }),
      });
      return () => subscription.unsubscribe();
    }),
  },
  guards: {
    stopRequested: ({ context }) => context.stopRequested,
    published: ({ context }) => context.registry !== null,
    announced: ({ context }) => context.announced,
    watchesConfig: ({ context }) => context.watchConfig,
    listed: ({ context }) => context.listed,
    rereadDue: ({ context }) => context.rereadDue,
    leftBusy: (_, busy: string[]) => busy.length > 0,
    /** The server waits in a consent: the tokens complete it. */
    consenting: ({ context }, { server }: TokensFor) => serverOf(context, server)?.getSnapshot().matches({ authenticating: 'consenting' }) ?? false,
    /** `needs_reauth`, or waiting for an authorization server another worker reached: no need to wait out the backoff. */
    awaitsTokens: ({ context }, { server }: TokensFor) => serverOf(context, server)?.getSnapshot().hasTag('awaitsTokens') ?? false,
    /**
     * A connect or refresh under way may have read the credentials before the
     * tokens were stored and still end in `needs_reauth`: it is watched (once).
     */
    attemptUnderWay: ({ context }, { server }: TokensFor) => {
      const snapshot = serverOf(context, server)?.getSnapshot();
      if (snapshot === undefined || context.watchedAttempts.includes(server)) return false;
      return snapshot.matches('pending') || snapshot.matches('authenticating');
    },
    endedAwaitingTokens: (_, params: { awaitsTokens: boolean }) => params.awaitsTokens,
  },
  actions: {
    /** Calls waiting for a decision are not made: their callers are answered now, not at their timeout. Provided by the host. */
    closeApprovals: ({ context }) => context.work?.closeApprovals(),
    /** A reconcile failed (the store could not be read); the event carries the error. Provided by the host. */
    reportReconcileFailure: ({ context, event }) => context.work?.reportReconcileFailure((event as unknown as { error: unknown }).error),
    requestStop: assign({ stopRequested: true }),
    recordStartError: assign({ startError: (_, params: { error: unknown }) => params.error }),
    recordStopError: assign({ stopError: ({ context }, params: { error: unknown }) => context.stopError ?? params.error }),
    /** Publishes the servers: every configured one at once (pending or disabled), under the bridge's eye. */
    publish: assign(({ context, spawn }, servers: PublishedServers) => {
      const registry = spawn('registry', {
        id: 'registry',
        input: { servers, startupConcurrency: context.startupConcurrency, host: context.work?.registry ?? null },
      });
      spawn('bridge', { id: 'bridge', input: { registry, work: context.work } });
      return { registry };
    }),
    // Taken once published only.
    shutdownRegistry: sendTo(({ context }) => context.registry!, { type: 'registry.shutdown' }),
    stopBridge: stopChild('bridge'),
    stopRegistry: stopChild('registry'),
    markAnnounced: assign({ announced: true }),
    markRereadDue: assign({ rereadDue: true }),
    startReread: assign({ rereadDue: false }),
    keepBusy: assign({ busy: (_, busy: string[]) => busy }),
    // The guards that pick these made sure the server is published.
    completeConsent: sendTo(({ context, event }) => serverOf(context, serverNamed(event))!, { type: 'auth.completed' }),
    restartServer: sendTo(({ context, event }) => serverOf(context, serverNamed(event))!, { type: 'server.restart' }),
    /** Taken on `tokens.stored` only: the watch is named after the event's server. */
    watchAttempt: spawnChild('watchAttempt', {
      id: ({ event }) => attemptWatchId(serverNamed(event)),
      input: ({ context, event }) => ({ server: serverNamed(event), ref: serverOf(context, serverNamed(event))! }),
    }),
    noteWatched: assign({ watchedAttempts: ({ context }, params: TokensFor) => [...context.watchedAttempts, params.server] }),
    /** The watched attempt ended waiting for tokens that are there now: it goes on with them. */
    restartWatched: sendTo(({ event }) => (event as Extract<HostEvent, { type: 'attempt.ended' }>).ref, { type: 'server.restart' }),
    stopWatch: stopChild(({ event }) => attemptWatchId(serverNamed(event))),
    forgetAttempt: assign({
      watchedAttempts: ({ context }, params: TokensFor) => context.watchedAttempts.filter((name) => name !== params.server),
    }),
  },
}).createMachine({
  id: 'host',
  context: ({ input }) => ({
    ...input,
    work: input.work ?? null,
    registry: null,
    stopRequested: false,
    rereadDue: false,
    busy: [],
    watchedAttempts: [],
    announced: false,
    startError: undefined,
    stopError: undefined,
  }),
  initial: 'idle',
  on: {
    // Outside running an ended attempt only ends its watch (running decides whether the server goes on).
    'attempt.ended': {
      actions: ['stopWatch', { type: 'forgetAttempt', params: ({ event }) => event }],
    },
  },
  states: {
    idle: {
      description: 'created; nothing runs until start()',
      on: {
        'host.start': { target: 'starting' },
        'host.shutdown': { target: 'stopping' },
      },
    },
    starting: {
      description: 'opens the journal, loads the config and publishes the fleet',
      initial: 'opening',
      on: {
        // Startup is not cut short: the host stops once it has an outcome.
        'host.shutdown': { actions: 'requestStop' },
      },
      states: {
        opening: {
          description: 'the projection is rebuilt from the journal before any actor reports; then the config is read',
          invoke: {
            src: 'open',
            input: workOf,
            onDone: { target: 'catchingUp', actions: { type: 'publish', params: ({ event }) => event.output } },
            onError: [
              { guard: 'stopRequested', target: '#host.stopping', actions: { type: 'recordStartError', params: ({ event }) => event } },
              { target: '#host.failed', actions: { type: 'recordStartError', params: ({ event }) => event } },
            ],
          },
        },
        catchingUp: {
          description: 'the fleet is published; the views catch up with a store that tells its events only once stored',
          invoke: {
            src: 'catchUp',
            input: workOf,
            onDone: [{ guard: 'stopRequested', target: '#host.stopping' }, { target: '#host.running' }],
            onError: [
              { guard: 'stopRequested', target: '#host.stopping', actions: { type: 'recordStartError', params: ({ event }) => event } },
              { target: '#host.failed', actions: { type: 'recordStartError', params: ({ event }) => event } },
            ],
          },
        },
      },
    },
    failed: {
      description: 'startup failed (start() rejected); waits for shutdown()',
      on: { 'host.shutdown': { target: 'stopping' } },
    },
    running: {
      description: 'the servers connect and run; the config and the credentials are watched',
      type: 'parallel',
      on: { 'host.shutdown': { target: 'stopping' } },
      states: {
        config: {
          initial: 'deciding',
          states: {
            deciding: {
              always: [{ guard: 'watchesConfig', target: 'watching' }, { target: 'unwatched' }],
            },
            unwatched: { description: 'edits by another hand are not applied (watchConfig: false)' },
            watching: {
              description: 'applies edits of the config store made by another hand, one after another',
              invoke: { src: 'configWatcher', input: workOf },
              initial: 'idle',
              states: {
                idle: { on: { 'config.changed': { target: 'reconciling' } } },
                reconciling: {
                  description: 'reads the store and applies what changed to the fleet',
                  entry: 'startReread',
                  invoke: {
                    src: 'reconcile',
                    input: ({ context }) => ({ work: context.work, registry: context.registry! }),
                    onDone: [
                      { guard: 'rereadDue', target: 'reconciling', reenter: true },
                      {
                        guard: { type: 'leftBusy', params: ({ event }) => event.output },
                        target: 'awaitingIdle',
                        actions: { type: 'keepBusy', params: ({ event }) => event.output },
                      },
                      { target: 'idle' },
                    ],
                    onError: [
                      {
                        guard: 'rereadDue',
                        target: 'reconciling',
                        reenter: true,
                        actions: 'reportReconcileFailure',
                      },
                      { target: 'idle', actions: 'reportReconcileFailure' },
                    ],
                  },
                  on: { 'config.changed': { actions: 'markRereadDue' } },
                },
                awaitingIdle: {
                  description: 'servers left alone while a transaction ran on them are read again once it is over',
                  invoke: {
                    src: 'awaitIdle',
                    input: ({ context }) => ({ work: context.work, names: context.busy }),
                    // Read again either way: the reconcile finds who is still busy.
                    onDone: { target: 'reconciling' },
                    onError: { target: 'reconciling' },
                  },
                  on: { 'config.changed': { target: 'reconciling' } },
                },
              },
            },
          },
        },
        tokens: {
          description: 'a server waiting for tokens stored here or by another worker goes on with them',
          invoke: { src: 'tokenWatcher', input: workOf },
          on: {
            'tokens.stored': [
              { guard: { type: 'consenting', params: ({ event }) => event }, actions: 'completeConsent' },
              { guard: { type: 'awaitsTokens', params: ({ event }) => event }, actions: 'restartServer' },
              {
                guard: { type: 'attemptUnderWay', params: ({ event }) => event },
                actions: ['watchAttempt', { type: 'noteWatched', params: ({ event }) => event }],
              },
            ],
            'attempt.ended': [
              {
                guard: { type: 'endedAwaitingTokens', params: ({ event }) => event },
                actions: [
                  'stopWatch',
                  { type: 'forgetAttempt', params: ({ event }) => event },
                  'restartWatched',
                ],
              },
              {
                actions: [
                  'stopWatch',
                  { type: 'forgetAttempt', params: ({ event }) => event },
                ],
              },
            ],
          },
        },
        presence: {
          initial: 'deciding',
          states: {
            deciding: {
              always: [{ guard: 'listed', target: 'listed' }, { target: 'unlisted' }],
            },
            unlisted: { description: 'no presence: a host on shared stores is not listed' },
            listed: {
              description: "in the fleet's list of workers",
              entry: 'markAnnounced',
              invoke: { src: 'announce', input: workOf },
            },
          },
        },
      },
    },
    stopping: {
      description: 'stops every server, then leaves the fleet and closes the stores; later calls are refused',
      entry: 'closeApprovals',
      initial: 'deciding',
      states: {
        deciding: {
          always: [{ guard: 'published', target: 'stoppingServers' }, { target: 'closing' }],
        },
        stoppingServers: {
          description: 'startup drained, every server stopped; each is done once its process is gone',
          entry: 'shutdownRegistry',
          invoke: {
            src: 'stopServers',
            input: ({ context }) => ({ work: context.work, registry: context.registry! }),
            onDone: [
              { guard: 'announced', target: 'leavingFleet', actions: ['stopBridge', 'stopRegistry'] },
              { target: 'closing', actions: ['stopBridge', 'stopRegistry'] },
            ],
            // The next steps run all the same: shutdown() reports the error once they are done.
            onError: [
              {
                guard: 'announced',
                target: 'leavingFleet',
                actions: ['stopBridge', 'stopRegistry', { type: 'recordStopError', params: ({ event }) => event }],
              },
              { target: 'closing', actions: ['stopBridge', 'stopRegistry', { type: 'recordStopError', params: ({ event }) => event }] },
            ],
          },
        },
        leavingFleet: {
          description: "off the fleet's list once every server here has stopped",
          invoke: {
            src: 'leaveFleet',
            input: workOf,
            onDone: { target: 'closing' },
            onError: { target: 'closing', actions: { type: 'recordStopError', params: ({ event }) => event } },
          },
        },
        closing: {
          description: 'closes the result spill, the era verdicts and the journal',
          invoke: {
            src: 'closeStores',
            input: workOf,
            onDone: { target: '#host.stopped' },
            onError: { target: '#host.stopped', actions: { type: 'recordStopError', params: ({ event }) => event } },
          },
        },
      },
    },
    stopped: {
      description: 'every child process is gone; the host does not start again',
      type: 'final',
    },
  },
});
