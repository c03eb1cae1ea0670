import { and, assign, enqueueActions, not, emit, fromCallback, fromPromise, sendTo, setup } from 'xstate';
import { watchIdle } from './idle-watch.js';
import type { ServerConfig } from '../config/index.js';
import { FleetError, type ErrorKind } from '../errors.js';
import { networkFailure } from '../connection/reachability.js';
import { isAuthorizationServerAway } from '../auth/away.js';
import { openLiveConnection, watchLiveConnection, type LiveConnection } from '../connection/live-connection.js';
import type { ServerState } from '../journal/index.js';
import type { ServerEmitted, ServerMachineEvent } from './server.events.js';

export interface ServerInput {
  name: string;
  config: ServerConfig;
  /** Wait in `pending.queued` for the registry's `server.connect` instead of connecting at once. */
  queued: boolean;
  /** The host's work for this server's actors; without one, a plain connect and no OAuth. */
  host?: ServerHost | null;
}

/**
 * What a host does for its servers' actors: connects, authenticates, runs the
 * catalog session beside a connection. Handed to each actor in its input, so
 * the machine itself is built once per process and shared by every host.
 */
export interface ServerHost {
  connect(work: ServerWork, signal: AbortSignal): Promise<LiveConnection>;
  checkAuth(work: ServerWork): Promise<AuthCheck>;
  refreshToken(work: ServerWork): Promise<void>;
  /** Sends `auth.url`, then `auth.completed` or `auth.failed`; the returned function cancels the consent. */
  consent(work: ServerWork, sendBack: (event: ServerMachineEvent) => void): () => void;
  /** Runs beside a ready connection; sends `catalog.tools_changed`; the returned function stops it. */
  catalogSession(work: ServerWork & { live: LiveConnection }, sendBack: (event: ServerMachineEvent) => void): () => void;
  /** Whether the server's catalog from an earlier run is known. */
  knowsCatalog(name: string): boolean;
}

/**
 * What views ask of a server, as tags of its states:
 * - `settling`: on its way to an outcome (connecting, authenticating without a
 *   human, closing for anything but a stop); the startup queue and management wait for it;
 * - `cannotStart`: will not become ready without a human or a reconnect (error,
 *   needs_reauth, disabled, a consent under way): a call stops waiting for it;
 * - `callable`: ready, its tools mounted;
 * - `awaitsTokens`: goes on as soon as tokens are stored (needs_reauth, or waiting
 *   for the authorization server).
 */
export type ServerTag = 'settling' | 'cannotStart' | 'callable' | 'awaitsTokens';

/** A `closing` substate's meta: the state the view shows while the connection closes (where it goes next). */
export interface ServerMeta {
  shows?: ServerState;
}

export interface ServerContext {
  name: string;
  host: ServerHost | null;
  config: ServerConfig;
  queued: boolean;
  live: LiveConnection | null;
  error: string | null;
  errorKind: ErrorKind | null;
  /** Connection losses and failed reconnects in a row; 0 once the server stayed ready long enough. */
  failures: number;
  /** The consent's page, once the invoked consent knows it. */
  authorizationUrl: string | null;
  /** That page is of a consent another worker began (`auth.url` `joined`): this one answers it, it did not begin it. */
  consentJoined: boolean;
  /** An `on_demand` server was asked for and connects (until it goes idle). */
  demanded: boolean;
  /** The error recorded is the authorization server's absence: retried without limit, no consent. */
  awaitingAuthServer: boolean;
  /** Retries in a row while the authorization server was away; 0 once ready. */
  authWaits: number;
}

/** What a connect of an OAuth server needs first: nothing, or a refresh of its stored token. */
export type AuthCheck = 'connect' | 'refresh';

/** The inputs of the actors that act for one server. */
export interface ServerWork {
  name: string;
  config: ServerConfig;
  host: ServerHost | null;
}

/** The input of an actor that acts for the server. */
const workOf = ({ context }: { context: ServerContext }): ServerWork => ({ name: context.name, config: context.config, host: context.host });

function asFleetError(error: unknown): FleetError {
  if (error instanceof FleetError) return error;
  const message = error instanceof Error ? error.message : String(error);
  // A request that got no answer at all is not the server breaking the protocol.
  const network = networkFailure(error);
  if (network !== undefined) return new FleetError('unreachable', `${message}: ${network.reason}`, { cause: error });
  return new FleetError('protocol', message, { cause: error });
}

/** Exponential backoff with jitter: the n-th attempt waits about initial·2^(n-1), capped, ±25 %. */
export function backoffMs(config: ServerConfig, failures: number, random: () => number = Math.random): number {
  const { initial_delay_seconds: initial, max_delay_seconds: max } = config.reconnect;
  const base = Math.min(max, initial * 2 ** Math.max(0, failures - 1)) * 1000;
  return Math.round(base * (0.75 + random() / 2));
}

const needsAPerson = { type: 'needsAPerson', params: ({ event }: { event: { error: unknown } }) => ({ error: event.error }) } as const;
/** Whether this config's credentials come from a person (a consent, a pasted token), not from a machine. */
const signedInByAPerson = (config: ServerConfig): boolean =>
  config.type === 'remote' && (config.auth.kind === 'oauth' || config.auth.kind === 'bearer');

const isAuthServerAway = { type: 'isAuthServerAway', params: ({ event }: { event: { error: unknown } }) => ({ error: event.error }) } as const;
const recordError = { type: 'recordError', params: ({ event }: { event: { error: unknown } }) => ({ error: event.error }) } as const;
const takeEventConfig = { type: 'takeConfig', params: ({ event }: { event: { config?: ServerConfig } }) => event.config } as const;
const queueAsEvent = { type: 'queueAs', params: ({ event }: { event: { queued?: boolean } }) => event.queued ?? false } as const;
const disablesIt = { type: 'disablesIt', params: ({ event }: { event: { config: ServerConfig } }) => event.config } as const;

/** The connect, from `pending` or (with a fresh token) from `authenticating`: ready, or why not. */
const connectInvoke = {
  src: 'connect',
  input: workOf,
  onDone: {
    target: '#server.ready',
    actions: { type: 'adoptConnection', params: ({ event }: { event: { output: LiveConnection } }) => event.output },
  },
  onError: [
    { guard: needsAPerson, target: '#server.needs_reauth', actions: recordError },
    { guard: isAuthServerAway, target: '#server.error', actions: recordError },
    { guard: 'isReconnecting', target: '#server.error', actions: [recordError, 'countFailure'] },
    { target: '#server.error', actions: recordError },
  ],
} as const;

/** The config the startup queue's `server.connect` carries (a re-read), else its own. */
const connectConfig = ({ context, event }: { context: ServerContext; event: ServerMachineEvent }) =>
  (event.type === 'server.connect' ? event.config : undefined) ?? context.config;

/**
 * Where a server in `pending` goes: waits its turn, waits for a principal or a
 * call, or connects (checking an OAuth token first). Shared by
 * `pending.choose` and `boot`, so a new actor reaches its state in one
 * eventless hop, not two (each hop costs a microstep and a snapshot per server).
 */
const pendingChoice = [
  { guard: 'isQueued', target: '#server.pending.queued' },
  { guard: 'isPerUser', target: '#server.pending.per_user' },
  { guard: and(['isUnasked', 'knowsCatalog']), target: '#server.pending.on_demand' },
  { guard: 'usesOAuth', target: '#server.pending.checking_auth' },
  { target: '#server.pending.connecting' },
] as const;

/**
 * The startup queue reached a waiting server: the same choice by the config
 * it carries, made by the event itself rather than through `choose` (an
 * eventless hop more per server start).
 */
const takeTurn = { type: 'takeTurn', params: ({ event }: { event: { config?: ServerConfig } }) => event.config } as const;
const connectChoice = [
  { guard: { type: 'isPerUser', params: connectConfig }, target: '#server.pending.per_user', actions: takeTurn },
  // Whether it waits for a call depends on its known catalog too: `choose` asks both.
  { guard: { type: 'isUnasked', params: connectConfig }, target: '#server.pending.choose', actions: takeTurn },
  { guard: { type: 'usesOAuth', params: connectConfig }, target: '#server.pending.checking_auth', actions: takeTurn },
  { target: '#server.pending.connecting', actions: takeTurn },
] as const;

/**
 * What a server that is not connected (authenticating, needs_reauth, error)
 * does when management or a hand edit acts on it: a restart or a new config
 * goes through `pending` again, a disable goes to `disabled`.
 */
const whenIdle = {
  'server.restart': { target: 'pending', actions: 'resetFailures' },
  'server.disable': { target: 'disabled', actions: takeEventConfig },
  'server.configure': [
    { guard: disablesIt, target: 'disabled', actions: takeEventConfig },
    { target: 'pending', actions: [queueAsEvent, 'resetFailures', takeEventConfig] },
  ],
} as const;

/**
 * A `closing` server asked again (the substate it moves to is where it goes
 * next): a disable or a new config change only where it goes, the close runs on.
 */
const reaimedWhileClosing = {
  'server.disable': { target: 'to_disabled', actions: takeEventConfig },
  'server.enable': { target: 'to_pending', actions: [takeEventConfig, queueAsEvent, 'resetFailures'] },
  'server.configure': [
    { guard: disablesIt, target: 'to_disabled', actions: takeEventConfig },
    { target: 'to_pending', actions: [takeEventConfig, queueAsEvent, 'resetFailures'] },
  ],
} as const;

/** A restart of a server closing towards pending or a failure (a disabled or stopped one stays so). */
const restartedWhileClosing = {
  'server.restart': { target: 'to_pending', actions: ['leaveQueue', 'resetFailures'] },
} as const;

/**
 * The connection of a `closing` server is closed: on to `target`. Each
 * substate takes the close's end itself (the close, invoked by `closing`, runs
 * on while a substate changes), so the chart draws where each one leads.
 * close() never leaves a child behind even when it reports a failure.
 */
function closedTo(target: string, then: readonly 'countAuthWait'[] = []): object {
  const onward = { target, actions: ['forgetConnection', ...then] };
  // xstate's types of `on` name only the machine's own events; the invoke's done/error events arrive all the same.
  return { 'xstate.done.actor.closeConnection': onward, 'xstate.error.actor.closeConnection': onward };
}

/**
 * One MCP server's lifecycle (docs/lifecycle.md). The machine owns all of it: the work
 * that lives and dies with a state is invoked there (connect, token refresh,
 * consent, connection watcher with the catalog session, close), so leaving the state
 * cancels it. The host hands its work to the actors in the input (`ServerHost`)
 * and listens to what the machine emits (tool registration) and to its
 * snapshots (the journal).
 */
export const serverMachine = setup({
  types: {
    input: {} as ServerInput,
    context: {} as ServerContext,
    events: {} as ServerMachineEvent,
    emitted: {} as ServerEmitted,
    tags: {} as ServerTag,
    meta: {} as ServerMeta,
  },
  delays: {
    backoff: ({ context }) => backoffMs(context.config, context.failures),
    /** Ready this long: the losses before no longer count toward giving up. */
    stable: ({ context }) => context.config.reconnect.max_delay_seconds * 1000,
    /** The reconnect backoff, counted by the waits for the authorization server. */
    authServerBackoff: ({ context }) => backoffMs(context.config, context.authWaits),
  },
  actors: {
    /** Spawn or open, initialize, list every tool page; bounded by `timeout_seconds`. */
    connect: fromPromise<LiveConnection, ServerWork>(({ input, signal }) =>
      input.host === null ? openLiveConnection(input.name, input.config, signal) : input.host.connect(input, signal),
    ),
    /** Whether an OAuth server's stored token must be refreshed before it can connect. */
    checkAuth: fromPromise<AuthCheck, ServerWork>(async ({ input }) => (input.host === null ? 'connect' : input.host.checkAuth(input))),
    /** Refreshes the stored token; rejects with an `auth` FleetError when only a consent can help. */
    refreshToken: fromPromise<void, ServerWork>(async ({ input }) => input.host?.refreshToken(input)),
    /** A consent: sends `auth.url`, then `auth.completed` or `auth.failed`; stopping it cancels the consent. */
    consent: fromCallback<ServerMachineEvent, ServerWork>(({ input, sendBack }) => {
      if (input.host !== null) return input.host.consent(input, sendBack);
      sendBack({ type: 'auth.failed', error: new FleetError('auth', 'this host cannot run an OAuth consent') });
      return undefined;
    }),
    /**
     * Everything that runs beside a ready connection, in one actor per ready
     * connection rather than three (an actor costs ~2 KiB kept and several
     * of garbage per server start): reports the connection's unexpected end,
     * an unanswered ping or a lost token as `connection.closed`; runs the
     * host's catalog session (catalog sync, prompts, server log), which sends
     * `catalog.tools_changed`; and for an `on_demand` server counts the calls
     * (`call.started` / `call.finished`) and sends `server.idle` once none ran
     * for `idle_timeout_seconds`.
     */
    watchConnection: fromCallback<ServerMachineEvent, ServerWork & { live: LiveConnection }>(({ input, sendBack, receive }) => {
      const { config } = input;
      const stopWatch = watchLiveConnection(
        input.live,
        { pingIntervalMs: config.ping_interval_seconds * 1000, pingTimeoutMs: config.timeout_seconds * 1000 },
        (error) => sendBack({ type: 'connection.closed', error }),
      );
      const stopSession = input.host?.catalogSession(input, sendBack);
      const stopIdle =
        config.start === 'on_demand' ? watchIdle(config.idle_timeout_seconds * 1000, () => sendBack({ type: 'server.idle' }), receive) : undefined;
      return () => {
        stopIdle?.();
        stopSession?.();
        stopWatch();
      };
    }),
    /** Ends the connection; resolves once the process is gone. */
    closeConnection: fromPromise<void, { live: LiveConnection; why: FleetError | undefined }>(({ input }) => input.live.connection.close(input.why)),
  },
  guards: {
    isEnabled: ({ context }) => context.config.enabled,
    isQueued: ({ context }) => context.queued,
    /** An `on_demand` server nobody has asked for (since it last went idle). */
    isUnasked: ({ context }, config?: ServerConfig) => (config ?? context.config).start === 'on_demand' && !context.demanded,
    /** An `on_demand` server: a call starts it, even after a start that failed. */
    isOnDemand: ({ context }) => context.config.start === 'on_demand',
    /** A `per_user` server: only its principals' sessions connect (session.machine.ts), never this actor. */
    isPerUser: ({ context }, config?: ServerConfig) => (config ?? context.config).scope === 'per_user',
    /**
     * Whether this server's catalog from an earlier run is known, to publish
     * while it waits; the host answers from the journal. An `on_demand`
     * server without one connects once to learn it.
     */
    knowsCatalog: ({ context }) => context.host?.knowsCatalog(context.name) ?? true,
    usesOAuth: ({ context }, config?: ServerConfig) => {
      const chosen = config ?? context.config;
      return chosen.type === 'remote' && chosen.auth.kind === 'oauth';
    },
    needsRefresh: (_, check: AuthCheck) => check === 'refresh',
    /**
     * Refused credentials that a person replaces: a consent (OAuth) or a new
     * token (bearer). Machine credentials (client_credentials, workload
     * identity, enterprise) and a server with no auth configured get an
     * `auth` error instead: signing in is not the fix.
     */
    needsAPerson: ({ context }, params: { error: unknown }) =>
      params.error instanceof FleetError && params.error.kind === 'auth' && signedInByAPerson(context.config),
    /** A refresh (or the connect that needed one) got no answer from the authorization server: `unreachable`, no consent. */
    isAuthServerAway: (_, params: { error: unknown }) => isAuthorizationServerAway(params.error),
    awaitsAuthServer: ({ context }) => context.awaitingAuthServer,
    isReconnecting: ({ context }) => context.failures > 0,
    mayReconnect: ({ context }) => context.failures > 0 && context.failures <= context.config.reconnect.max_attempts,
    disablesIt: (_, config: ServerConfig | undefined) => config !== undefined && !config.enabled,
  },
  actions: {
    registerTools: emit(({ context }) => ({
      type: 'tools.register' as const,
      server: context.name,
      live: context.live!,
      filter: context.config.tools,
    })),
    unregisterTools: emit(({ context }) => ({ type: 'tools.unregister' as const, server: context.name })),
    reportConsentFailure: emit(({ context, event }) => ({
      type: 'consent.failed' as const,
      server: context.name,
      error: asFleetError((event as { error?: unknown }).error),
    })),
    /**
     * Keeps the connection of a server becoming ready. The authorization server answered (or was not needed):
     * a later absence waits from the start of the backoff. One assign, not two (each clones the snapshot).
     */
    adoptConnection: assign({ live: (_, live: LiveConnection) => live, authWaits: 0 }),
    forgetConnection: assign({ live: null }),
    recordError: assign((_, params: { error: unknown }) => {
      const failure = asFleetError(params.error);
      return { error: failure.message, errorKind: failure.kind, awaitingAuthServer: isAuthorizationServerAway(failure) };
    }),
    /** A human must act: the view says so with its own kind, `needs_reauth`. */
    markNeedsReauth: assign({ errorKind: 'needs_reauth' as const }),
    /**
     * Only when there is one to clear: an assign clones the snapshot, and a
     * server's first entry into `pending` (every start) has none.
     */
    clearError: enqueueActions(({ context, enqueue }) => {
      if (context.error !== null || context.errorKind !== null || context.awaitingAuthServer) {
        enqueue.assign({ error: null, errorKind: null, awaitingAuthServer: false });
      }
    }),
    countFailure: assign({ failures: ({ context }) => context.failures + 1 }),
    resetFailures: assign({ failures: 0, authWaits: 0 }),
    countAuthWait: assign({ authWaits: ({ context }) => context.authWaits + 1 }),
    openCircuit: assign({
      error: ({ context }) =>
        `${context.error} — gave up after ${context.failures - 1} reconnect attempt(s); ${context.config.start === 'on_demand' ? 'the next call starts it again' : 'restart it by hand'}`,
    }),
    leaveQueue: assign({ queued: false }),
    /** The startup queue reached it: it leaves the queue with the config the turn carries (one assign, not two). */
    takeTurn: assign({ queued: false, config: ({ context }, config: ServerConfig | undefined) => config ?? context.config }),
    /** A hand edit during startup sends the server back to the queue; anything else connects at once. */
    queueAs: assign({ queued: (_, queued: boolean) => queued }),
    /** Takes the config an event carries, if it carries one (a re-read that found the entry). */
    takeConfig: assign({ config: ({ context }, config: ServerConfig | undefined) => config ?? context.config }),
    markDemanded: assign({ demanded: true }),
    forgetDemand: assign({ demanded: false }),
    keepAuthorizationUrl: assign((_, params: { url: string; joined?: boolean }) => ({
      authorizationUrl: params.url,
      consentJoined: params.joined ?? false,
    })),
    forgetAuthorizationUrl: assign({ authorizationUrl: null, consentJoined: false }),
  },
}).createMachine({
  id: 'server',
  context: ({ input }) => ({
    name: input.name,
    host: input.host ?? null,
    config: input.config,
    queued: input.queued,
    live: null,
    error: null,
    errorKind: null,
    failures: 0,
    authorizationUrl: null,
    consentJoined: false,
    demanded: false,
    awaitingAuthServer: false,
    authWaits: 0,
  }),
  initial: 'boot',
  on: {
    'server.stop': { target: '.stopped' },
    'server.retool': { actions: takeEventConfig },
  },
  states: {
    boot: {
      always: [{ guard: not('isEnabled'), target: 'disabled' }, ...pendingChoice],
    },
    disabled: {
      description: 'enabled: false — no process, no connection, no tools',
      tags: 'cannotStart',
      // Re-enabled, it starts afresh: earlier losses do not count toward giving up.
      entry: ['clearError', 'resetFailures', 'leaveQueue', 'forgetDemand'],
      on: {
        'server.enable': {
          target: 'pending',
          actions: [queueAsEvent, takeEventConfig],
        },
        'server.configure': [
          {
            guard: disablesIt,
            actions: takeEventConfig,
          },
          { target: 'pending', actions: [queueAsEvent, takeEventConfig] },
        ],
      },
    },
    pending: {
      description: 'published (ready=false, no tools); connecting: spawn/open, initialize, list every tool page',
      entry: 'clearError',
      initial: 'choose',
      on: {
        'server.disable': { target: 'disabled', actions: takeEventConfig },
        // Management acts at once, even on a server still waiting in the startup queue.
        'server.restart': { target: 'pending', reenter: true, actions: ['leaveQueue', 'resetFailures'] },
        // Asked for while queued or connecting: it connects when its turn comes.
        'server.demand': { actions: 'markDemanded' },
        'server.configure': [
          {
            guard: disablesIt,
            target: 'disabled',
            actions: takeEventConfig,
          },
          {
            target: 'pending',
            reenter: true,
            actions: [queueAsEvent, 'resetFailures', takeEventConfig],
          },
        ],
      },
      states: {
        choose: {
          tags: 'settling',
          always: pendingChoice,
        },
        queued: {
          description: 'waiting for its turn in the startup queue; no process yet',
          on: {
            'server.connect': connectChoice,
          },
        },
        on_demand: {
          description: 'start: on_demand — no process; its last catalog is published until a tool is called or loaded through search',
          on: {
            'server.demand': { target: 'choose', actions: 'markDemanded' },
          },
        },
        per_user: {
          description: 'scope: per_user — no shared connection; each principal calls through a session of their own',
        },
        checking_auth: {
          description: 'OAuth: is the stored token fresh enough to connect with?',
          tags: 'settling',
          invoke: {
            src: 'checkAuth',
            input: workOf,
            onDone: [
              {
                guard: { type: 'needsRefresh', params: ({ event }) => event.output },
                target: '#server.authenticating.refreshing',
              },
              { target: 'connecting' },
            ],
            // The credentials could not be read: the connect says what is wrong.
            onError: { target: 'connecting' },
          },
        },
        connecting: {
          tags: 'settling',
          invoke: connectInvoke,
        },
      },
    },
    authenticating: {
      description: 'OAuth in progress: the token refresh a connect needs first, or a consent; leaving cancels it',
      exit: 'forgetAuthorizationUrl',
      on: whenIdle,
      initial: 'refreshing',
      states: {
        refreshing: {
          description: 'refreshing the stored token before connecting',
          tags: 'settling',
          invoke: {
            src: 'refreshToken',
            input: workOf,
            onDone: { target: 'connecting' },
            onError: [
              { guard: needsAPerson, target: '#server.needs_reauth', actions: recordError },
              { guard: isAuthServerAway, target: '#server.error', actions: recordError },
              // Failing for another reason (the credentials could not be read): the connect's answer says the rest.
              { target: 'connecting' },
            ],
          },
        },
        consenting: {
          description: 'waiting for the user to finish the consent in the browser (it holds no startup slot)',
          tags: 'cannotStart',
          invoke: {
            src: 'consent',
            input: workOf,
          },
          on: {
            'auth.url': { actions: { type: 'keepAuthorizationUrl', params: ({ event }) => event } },
            'auth.completed': { target: 'connecting' },
            'auth.failed': { target: '#server.needs_reauth', actions: [recordError, 'reportConsentFailure'] },
            'auth.refused': { target: '#server.needs_reauth', actions: [recordError, 'reportConsentFailure'] },
          },
        },
        connecting: {
          description: 'connecting with the fresh token',
          tags: 'settling',
          invoke: connectInvoke,
        },
      },
    },
    ready: {
      description: 'connected; the connection watcher and the catalog session run here; tools unregistered on exit',
      tags: 'callable',
      // Entered only by a connect's success, whose `adoptConnection` also resets the waits for the authorization server.
      exit: 'unregisterTools',
      invoke: {
        id: 'watchConnection',
        src: 'watchConnection',
        input: ({ context }) => ({ name: context.name, config: context.config, host: context.host, live: context.live! }),
      },
      after: { stable: { actions: 'resetFailures' } },
      initial: 'serving',
      states: {
        serving: {
          description: 'tools registered on entry, only here; a catalog change or a tool-filter edit re-enters',
          entry: 'registerTools',
          // Re-entering only this state (not `ready`) keeps the connection, its watcher and the catalog session.
          on: {
            'catalog.tools_changed': { target: 'serving', reenter: true },
            'server.retool': {
              target: 'serving',
              reenter: true,
              actions: takeEventConfig,
            },
          },
        },
      },
      on: {
        'connection.closed': [
          // The OAuth token can no longer be refreshed: a human must consent, reconnecting will not help.
          { guard: needsAPerson, target: 'closing.to_needs_reauth', actions: [recordError, 'markNeedsReauth'] },
          // The token ran out and the authorization server is away: waits for it, not for a person.
          { guard: isAuthServerAway, target: 'closing.to_awaiting_authorization_server', actions: recordError },
          { target: 'closing.to_error', actions: [recordError, 'countFailure'] },
        ],
        'server.restart': { target: 'closing.to_pending', actions: 'resetFailures' },
        'server.disable': { target: 'closing.to_disabled', actions: takeEventConfig },
        'server.configure': [
          { guard: disablesIt, target: 'closing.to_disabled', actions: takeEventConfig },
          { target: 'closing.to_pending', actions: [takeEventConfig, queueAsEvent, 'resetFailures'] },
        ],
        'server.stop': { target: 'closing.to_stopped' },
        'call.started': { actions: sendTo('watchConnection', ({ event }) => event) },
        'call.finished': { actions: sendTo('watchConnection', ({ event }) => event) },
        'server.idle': { target: 'closing.to_pending', actions: 'forgetDemand' },
      },
    },
    closing: {
      description: 'tools gone; the connection closes and the process exits; the substate is where it goes next, which the view already shows',
      invoke: {
        id: 'closeConnection',
        src: 'closeConnection',
        // Left for a reason (the connection's own loss recorded): the calls it cuts off are told it.
        input: ({ context }) => ({
          live: context.live!,
          why: context.error === null || context.errorKind === null ? undefined : new FleetError(context.errorKind, context.error),
        }),
      },
      on: {
        // Stopped is final: whatever the close was for, a stop wins, and nothing re-aims it after.
        'server.stop': { target: '.to_stopped' },
        // The startup queue reached a server sent back to it while it was still closing.
        'server.connect': { actions: takeTurn },
      },
      // xstate wants one; unused, since every edge into closing names the substate it goes to.
      initial: 'to_stopped',
      states: {
        to_pending: {
          description: 'a restart, a new config, or an on-demand server gone idle',
          tags: 'settling',
          meta: { shows: 'pending' },
          on: {
            ...closedTo('#server.pending'),
            // A call arriving now (an idle on-demand server closing) is remembered.
            'server.demand': { actions: 'markDemanded' },
            ...restartedWhileClosing,
            ...reaimedWhileClosing,
          },
        },
        to_disabled: {
          tags: 'settling',
          meta: { shows: 'disabled' },
          on: {
            ...closedTo('#server.disabled'),
            // Management disabled it meanwhile: it keeps that config and stays out.
            'server.connect': { actions: 'leaveQueue' },
            ...reaimedWhileClosing,
          },
        },
        to_error: {
          description: 'the connection was lost',
          tags: 'settling',
          meta: { shows: 'error' },
          on: { ...closedTo('#server.error'), ...restartedWhileClosing, ...reaimedWhileClosing },
        },
        to_awaiting_authorization_server: {
          description: 'the token ran out while the authorization server is away',
          tags: 'settling',
          meta: { shows: 'error' },
          on: {
            ...closedTo('#server.error.awaiting_authorization_server', ['countAuthWait']),
            ...restartedWhileClosing,
            ...reaimedWhileClosing,
          },
        },
        to_needs_reauth: {
          description: 'the token can no longer be refreshed',
          tags: 'settling',
          meta: { shows: 'needs_reauth' },
          on: { ...closedTo('#server.needs_reauth'), ...restartedWhileClosing, ...reaimedWhileClosing },
        },
        to_stopped: {
          meta: { shows: 'stopped' },
          on: closedTo('#server.stopped'),
        },
      },
    },
    needs_reauth: {
      description: 'no usable token (refresh rejected, none stored): waits for the user to begin a consent',
      tags: ['cannotStart', 'awaitsTokens'],
      entry: 'markNeedsReauth',
      on: {
        'auth.begin': { target: '#server.authenticating.consenting' },
        // Why the last consent's answer did not authorize: the status the callback's page sends the user to says so.
        'auth.refused': { actions: [recordError, 'markNeedsReauth'] },
        ...whenIdle,
      },
    },
    error: {
      description: 'failed, with a one-line error and its error_kind',
      tags: 'cannotStart',
      initial: 'deciding',
      on: whenIdle,
      states: {
        deciding: {
          always: [
            { guard: 'awaitsAuthServer', target: 'awaiting_authorization_server', actions: 'countAuthWait' },
            { guard: 'mayReconnect', target: 'backing_off' },
            { guard: 'isReconnecting', target: 'halted', actions: 'openCircuit' },
            { target: 'halted' },
          ],
        },
        backing_off: {
          description: 'a lost connection: reconnects after exponential backoff with jitter; calls fail fast meanwhile',
          after: { backoff: { target: '#server.pending' } },
        },
        awaiting_authorization_server: {
          tags: 'awaitsTokens',
          description:
            'unreachable: a token refresh got no answer (or a 5xx) from the authorization server; retried after the reconnect backoff without limit, the stored grant kept; calls fail fast meanwhile',
          after: { authServerBackoff: { target: '#server.pending' } },
        },
        halted: {
          description: 'no automatic reconnect: a failed start, or the circuit opened after reconnect.max_attempts',
          on: {
            // Each call of an on_demand server is a new start: one start per demand, never one on its own.
            'server.demand': { guard: 'isOnDemand', target: '#server.pending', actions: ['markDemanded', 'resetFailures'] },
          },
        },
      },
    },
    stopped: {
      description: 'final: process ended, tools gone',
      type: 'final',
    },
  },
});

export type ServerMachine = typeof serverMachine;
