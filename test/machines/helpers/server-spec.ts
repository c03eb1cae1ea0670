// A reference model of one server's lifecycle, written from the contract
// (docs/contract.md, Lifecycle, with docs/lifecycle.md and
// docs/remote-servers-and-oauth.md where it leaves a detail to them), not
// from the machine: `expected(facts, event)` says which view state a
// server is in after an event, and the facts a test can observe around it
// (where the work is, what config it holds, how often it registered tools,
// why it failed). The model-based test walks the real machine's graph and
// checks the real actor against this at every step.
import type { ServerConfig } from '../../../src/config/schema.js';
import type { ServerState } from '../../../src/journal/events.js';
import type { ErrorKind } from '../../../src/errors.js';
import { FAKE_TOOLS } from './server-world.js';

/**
 * What happens to a server, in the words of the model: management's and the
 * registry's events, and the outcomes of the work the server does (connect,
 * token check and refresh, consent, its connection, closing it, its timers).
 */
export type ModelEvent =
  | { type: 'server.connect'; config?: ServerConfig }
  /** `queued`: a hand edit during startup, which waits for its turn in the startup queue. */
  | { type: 'server.enable'; config: ServerConfig; queued?: boolean }
  | { type: 'server.disable'; config: ServerConfig }
  | { type: 'server.restart' }
  | { type: 'server.configure'; config: ServerConfig; queued?: boolean }
  | { type: 'server.retool'; config: ServerConfig }
  | { type: 'server.stop' }
  | { type: 'auth.begin' }
  /** The token check says: connect with what is stored, refresh first, or cannot tell. */
  | { type: 'check.connect' }
  | { type: 'check.refresh' }
  | { type: 'check.fails' }
  | { type: 'refresh.succeeds' }
  /** The authorization server rejects the refresh: only a consent helps. */
  | { type: 'refresh.fails_auth' }
  /** The refresh fails for another reason (the credentials unreadable): the connect will say the rest. */
  | { type: 'refresh.fails' }
  /** The refresh got no answer (or a 5xx) from the authorization server: unreachable, no consent. */
  | { type: 'refresh.fails_away' }
  | { type: 'consent.url' }
  | { type: 'consent.completes' }
  | { type: 'consent.fails' }
  | { type: 'connect.succeeds' }
  | { type: 'connect.fails' }
  /** No usable token. */
  | { type: 'connect.fails_auth' }
  /** The connect needed a refresh that got no answer from the authorization server. */
  | { type: 'connect.fails_away' }
  /** The ready server's tool listing changed. */
  | { type: 'catalog.changed' }
  | { type: 'connection.lost' }
  /** The ready server's token can no longer be refreshed. */
  | { type: 'connection.auth_lost' }
  /** The ready server's token ran out while the authorization server is away. */
  | { type: 'connection.away_lost' }
  | { type: 'close.done' }
  | { type: 'close.fails' }
  /** The reconnect backoff is over. */
  | { type: 'backoff.elapses' }
  /** The wait for the authorization server is over: try again. */
  | { type: 'away_backoff.elapses' }
  /** The server stayed ready long enough for its earlier losses not to count. */
  | { type: 'stable.elapses' }
  /** One of an `on_demand` server's tools is called or loaded through search. */
  | { type: 'server.demand' }
  /** A call to the ready server begins, or ends (the host counts the calls of an `on_demand` server). */
  | { type: 'call.started' }
  | { type: 'call.finished' }
  /** `idle_timeout_seconds` pass (with no call in flight, an `on_demand` server goes back to waiting). */
  | { type: 'idle.elapses' };

/** Where the server is, finer than its SPEC state: says which piece of work runs. */
export type Phase =
  | 'disabled'
  /** pending, waiting for its turn in the startup queue: no process. */
  | 'queued'
  /** pending, `start: on_demand`: waits with no process until one of its tools is called or loaded. */
  | 'on_demand'
  /** pending, OAuth: is the stored token fresh enough? */
  | 'checking'
  /** pending, spawning / opening, initialize, list tools. */
  | 'connecting'
  /** authenticating: refreshing the token before connecting. */
  | 'refreshing'
  /** authenticating: a consent runs, waiting for the user. */
  | 'consenting'
  /** authenticating: connecting with the fresh token. */
  | 'auth_connecting'
  | 'ready'
  /** Leaving ready: tools gone, the connection closing; the view shows where it goes. */
  | 'closing'
  | 'needs_reauth'
  /** error, reconnecting by itself after a backoff. */
  | 'backing_off'
  /** error, no automatic reconnect. */
  | 'halted'
  /** error (unreachable), the authorization server away: tried again after a backoff, without limit. */
  | 'awaiting_as'
  | 'stopped';

export type ClosingTo = 'pending' | 'disabled' | 'error' | 'needs_reauth' | 'stopped';

export interface ServerFacts {
  phase: Phase;
  /** Where a closing server goes once its connection is closed. */
  closingTo: ClosingTo | null;
  /** The config the server holds (the very object an event brought). */
  config: ServerConfig;
  queued: boolean;
  /** Lost connections and failed reconnects in a row. */
  failures: number;
  /** The error_kind a failed server shows. */
  errorKind: ErrorKind | null;
  /** The circuit opened: no more automatic reconnects. */
  gaveUp: boolean;
  /** Tool registrations so far (each entry into ready, each catalog or filter change while ready). */
  registrations: number;
  /** Connections established so far. */
  connections: number;
  /** Consents begun so far. */
  consents: number;
  /** The running consent has told where the user must go. */
  authorizationUrl: boolean;
  /** One of its tools was called or loaded through search since it last went idle (or was disabled). */
  demanded: boolean;
  /** Its catalog is known (from an earlier run, or once it was ready): an `on_demand` server can wait with it. */
  catalogKnown: boolean;
  /** Calls in flight on the ready connection. */
  calls: number;
  /** The closing server lost its connection to the authorization server's absence: it waits for it, not a person. */
  authServerAway: boolean;
}

const PHASE_STATE: Record<Exclude<Phase, 'closing'>, ServerState> = {
  disabled: 'disabled',
  queued: 'pending',
  on_demand: 'pending',
  checking: 'pending',
  connecting: 'pending',
  refreshing: 'authenticating',
  consenting: 'authenticating',
  auth_connecting: 'authenticating',
  ready: 'ready',
  needs_reauth: 'needs_reauth',
  backing_off: 'error',
  halted: 'error',
  awaiting_as: 'error',
  stopped: 'stopped',
};

/** The SPEC §4 state; a closing server already shows where it goes (a restart reads `ready → pending`). */
export function specState(facts: ServerFacts): ServerState {
  return facts.phase === 'closing' ? facts.closingTo! : PHASE_STATE[facts.phase];
}

export const usesOAuth = (config: ServerConfig): boolean => config.type === 'remote' && config.auth.kind === 'oauth';

/** The agent tools a ready server of this config mounts. */
export function expectedTools(name: string, config: ServerConfig): string[] {
  const { include, exclude } = config.tools;
  return FAKE_TOOLS.map((tool) => tool.name)
    .filter((tool) => (include === null || include.includes(tool)) && !exclude.includes(tool))
    .map((tool) => `${name}__${tool}`);
}

/** `catalogKnown`: the host knows the server's catalog from an earlier run. */
export function initialFacts(config: ServerConfig, queued: boolean, catalogKnown = true): ServerFacts {
  const facts: ServerFacts = {
    phase: 'disabled',
    closingTo: null,
    config,
    queued,
    failures: 0,
    errorKind: null,
    gaveUp: false,
    registrations: 0,
    connections: 0,
    consents: 0,
    authorizationUrl: false,
    demanded: false,
    catalogKnown,
    calls: 0,
    authServerAway: false,
  };
  // A disabled server is out of the startup queue: enabling it later connects it (or re-queues a hand edit).
  if (!config.enabled) return { ...facts, queued: false };
  return queued ? { ...facts, phase: 'queued' } : start(facts);
}

/**
 * An `on_demand` server nobody asked for waits (SPEC §4), with the catalog
 * it publishes meanwhile; without one it connects once to learn it.
 */
const waitsForDemand = (facts: ServerFacts, config: ServerConfig): boolean =>
  config.start === 'on_demand' && !facts.demanded && facts.catalogKnown;

/**
 * Connect now (OAuth servers check their token first), wait in the startup
 * queue, or (`on_demand`) wait to be asked for. Errors of a previous run are gone.
 */
function start(facts: ServerFacts, config = facts.config, queued = false): ServerFacts {
  const phase: Phase = queued
    ? 'queued'
    : waitsForDemand(facts, config)
      ? 'on_demand'
      : usesOAuth(config)
        ? 'checking'
        : 'connecting';
  return {
    ...facts,
    config,
    queued,
    phase,
    closingTo: null,
    errorKind: null,
    gaveUp: false,
    authorizationUrl: false,
    authServerAway: false,
  };
}

/** Started by a person (restart, enable, a config change): a failure now is a failure to start, not a reconnect. */
function startByHand(facts: ServerFacts, config = facts.config, queued = false): ServerFacts {
  return start({ ...facts, failures: 0 }, config, queued);
}

function disable(facts: ServerFacts, config: ServerConfig): ServerFacts {
  return {
    ...facts,
    config,
    phase: 'disabled',
    closingTo: null,
    queued: false,
    // Enabled again, an `on_demand` server waits to be asked for afresh.
    demanded: false,
    failures: 0,
    errorKind: null,
    gaveUp: false,
    authorizationUrl: false,
  };
}

function needsReauth(facts: ServerFacts): ServerFacts {
  return { ...facts, phase: 'needs_reauth', closingTo: null, errorKind: 'needs_reauth', authorizationUrl: false };
}

/** In error: reconnect after a backoff while attempts remain; a start that failed is not retried. */
function settleError(facts: ServerFacts): ServerFacts {
  const { failures } = facts;
  const max = facts.config.reconnect.max_attempts;
  if (failures > 0 && failures <= max) return { ...facts, phase: 'backing_off', closingTo: null };
  return { ...facts, phase: 'halted', closingTo: null, gaveUp: failures > 0 };
}

/**
 * The authorization server did not answer a refresh: `unreachable`, tried
 * again after a backoff for as long as it takes (reconnect.max_attempts is
 * for servers that fail, not for a party that is away), the grant kept.
 */
function awaitAuthServer(facts: ServerFacts): ServerFacts {
  return { ...facts, phase: 'awaiting_as', closingTo: null, errorKind: 'unreachable', authServerAway: false, authorizationUrl: false };
}

/** A connect (or reconnect) that failed. */
/** Credentials a person gives (a consent, a pasted bearer token): refusing them waits for that person; a machine's are an `auth` error. */
const signedInByAPerson = (config: ServerConfig): boolean =>
  config.type === 'remote' && (config.auth.kind === 'oauth' || config.auth.kind === 'bearer');

function connectFailed(facts: ServerFacts, kind: ErrorKind): ServerFacts {
  if (kind === 'auth' && signedInByAPerson(facts.config)) return needsReauth(facts);
  const reconnecting = facts.failures > 0;
  return settleError({ ...facts, errorKind: kind, failures: reconnecting ? facts.failures + 1 : 0, authorizationUrl: false });
}

/** Leaving ready: tools gone, the connection closing (its calls end with it). */
function closeTo(facts: ServerFacts, closingTo: ClosingTo, changes: Partial<ServerFacts> = {}): ServerFacts {
  return { ...facts, ...changes, phase: 'closing', closingTo, calls: 0 };
}

/** The closing server's connection is gone: on to where it was going. */
function arrive(facts: ServerFacts): ServerFacts {
  switch (facts.closingTo!) {
    case 'pending':
      return start(facts, facts.config, facts.queued);
    case 'disabled':
      return disable(facts, facts.config);
    case 'needs_reauth':
      return needsReauth(facts);
    case 'error':
      return facts.authServerAway ? awaitAuthServer(facts) : settleError(facts);
    case 'stopped':
      return { ...facts, phase: 'stopped', closingTo: null };
  }
}

const connectingPhases: readonly Phase[] = ['connecting', 'auth_connecting'];
const pendingPhases: readonly Phase[] = ['queued', 'on_demand', 'checking', 'connecting'];

/** The model: the facts after `event`. An event the server cannot take leaves them as they are. */
export function expected(facts: ServerFacts, event: ModelEvent): ServerFacts {
  const { phase } = facts;
  // Stopped is final; a server on its way to stopped stays on its way.
  if (phase === 'stopped') return facts;
  if (phase === 'closing' && facts.closingTo === 'stopped' && event.type !== 'close.done' && event.type !== 'close.fails') {
    return event.type === 'server.retool' ? { ...facts, config: event.config } : facts;
  }

  switch (event.type) {
    case 'server.stop':
      if (phase === 'ready') return closeTo(facts, 'stopped');
      if (phase === 'closing') return { ...facts, closingTo: 'stopped' };
      return { ...facts, phase: 'stopped', closingTo: null, authorizationUrl: false };

    case 'server.retool':
      // Only how the tools are mounted changed: a ready server mounts them again, without reconnecting.
      return { ...facts, config: event.config, registrations: facts.registrations + (phase === 'ready' ? 1 : 0) };

    case 'server.connect':
      // The startup queue reached the server: it connects with the config just re-read (if any).
      if (phase === 'queued') return start(facts, event.config ?? facts.config);
      // Sent back to the queue while closing (a hand edit): it connects once closed. Not if
      // management disabled it meanwhile: management takes precedence over the queue.
      if (phase === 'closing' && facts.closingTo === 'pending' && facts.queued) {
        return { ...facts, queued: false, config: event.config ?? facts.config };
      }
      return facts;

    case 'server.enable':
      if (phase === 'disabled') return startByHand(facts, event.config, event.queued);
      if (pendingPhases.includes(phase)) return { ...facts, config: event.config };
      if (phase === 'closing') {
        return closeTo(facts, 'pending', { config: event.config, failures: 0, queued: event.queued ?? false });
      }
      return facts;

    case 'server.disable':
      if (phase === 'ready') return closeTo(facts, 'disabled', { config: event.config });
      if (phase === 'closing') return closeTo(facts, 'disabled', { config: event.config });
      return disable(facts, event.config);

    case 'server.configure':
      if (!event.config.enabled) return expected(facts, { type: 'server.disable', config: event.config });
      if (phase === 'ready' || phase === 'closing') {
        return closeTo(facts, 'pending', { config: event.config, failures: 0, queued: event.queued ?? false });
      }
      return startByHand(facts, event.config, event.queued);

    case 'server.restart':
      // A disabled server (or one on its way there) is not started by a restart: its config says `enabled: false`.
      if (phase === 'disabled' || facts.closingTo === 'disabled') return facts;
      // Management acts at once, even on a server a hand edit sent back to the startup queue.
      if (phase === 'ready' || phase === 'closing') return closeTo(facts, 'pending', { failures: 0, queued: false });
      return startByHand(facts);

    case 'auth.begin':
      return phase === 'needs_reauth'
        ? { ...facts, phase: 'consenting', consents: facts.consents + 1, authorizationUrl: false }
        : facts;

    case 'check.connect':
    case 'check.fails':
      return phase === 'checking' ? { ...facts, phase: 'connecting' } : facts;
    case 'check.refresh':
      return phase === 'checking' ? { ...facts, phase: 'refreshing' } : facts;

    case 'refresh.succeeds':
    case 'refresh.fails':
      return phase === 'refreshing' ? { ...facts, phase: 'auth_connecting' } : facts;
    case 'refresh.fails_auth':
      return phase === 'refreshing' ? needsReauth(facts) : facts;
    case 'refresh.fails_away':
      return phase === 'refreshing' ? awaitAuthServer(facts) : facts;

    case 'consent.url':
      return phase === 'consenting' ? { ...facts, authorizationUrl: true } : facts;
    case 'consent.completes':
      // The consent's page is known until the server leaves authenticating.
      return phase === 'consenting' ? { ...facts, phase: 'auth_connecting' } : facts;
    case 'consent.fails':
      return phase === 'consenting' ? needsReauth(facts) : facts;

    case 'connect.succeeds':
      if (!connectingPhases.includes(phase)) return facts;
      return {
        ...facts,
        phase: 'ready',
        authorizationUrl: false,
        registrations: facts.registrations + 1,
        connections: facts.connections + 1,
        // Its tools were registered: the host knows its catalog from now on.
        catalogKnown: true,
      };
    case 'connect.fails':
      return connectingPhases.includes(phase) ? connectFailed(facts, 'spawn_failed') : facts;
    case 'connect.fails_auth':
      return connectingPhases.includes(phase) ? connectFailed(facts, 'auth') : facts;
    case 'connect.fails_away':
      return connectingPhases.includes(phase) ? awaitAuthServer(facts) : facts;

    case 'catalog.changed':
      return phase === 'ready' ? { ...facts, registrations: facts.registrations + 1 } : facts;
    case 'connection.lost':
      return phase === 'ready'
        ? closeTo(facts, 'error', { failures: facts.failures + 1, errorKind: 'transport_closed', authServerAway: false })
        : facts;
    case 'connection.away_lost':
      return phase === 'ready' ? closeTo(facts, 'error', { errorKind: 'unreachable', authServerAway: true }) : facts;
    case 'connection.auth_lost':
      if (phase !== 'ready') return facts;
      return signedInByAPerson(facts.config)
        ? closeTo(facts, 'needs_reauth', { errorKind: 'needs_reauth' })
        : closeTo(facts, 'error', { failures: facts.failures + 1, errorKind: 'auth', authServerAway: false });
    case 'stable.elapses':
      return phase === 'ready' ? { ...facts, failures: 0 } : facts;

    case 'close.done':
    case 'close.fails':
      return phase === 'closing' ? arrive(facts) : facts;

    case 'backoff.elapses':
      return phase === 'backing_off' ? start(facts) : facts;
    case 'away_backoff.elapses':
      return phase === 'awaiting_as' ? start(facts) : facts;

    case 'server.demand':
      // Waiting for it: it starts now (an OAuth server checks its token first).
      if (phase === 'on_demand') return start({ ...facts, demanded: true });
      // Still in pending (SPEC §4 state; a server closing on its way back there shows pending too):
      // remembered, so it connects rather than waits once its turn comes or its connection is closed.
      if (pendingPhases.includes(phase) || (phase === 'closing' && facts.closingTo === 'pending')) {
        return { ...facts, demanded: true };
      }
      // Halted (a failed start, or the circuit open): each call of an on_demand server is a new start,
      // as a restart by hand is; a start that fails again halts again, so starts are bounded by the calls.
      if (phase === 'halted' && facts.config.start === 'on_demand') return startByHand({ ...facts, demanded: true });
      // Connected or on its way with a token, failed otherwise, or disabled: nothing to start.
      return facts;

    case 'call.started':
      return phase === 'ready' ? { ...facts, calls: facts.calls + 1 } : facts;
    case 'call.finished':
      return phase === 'ready' ? { ...facts, calls: Math.max(0, facts.calls - 1) } : facts;
    case 'idle.elapses':
      // No call for idle_timeout_seconds: back to waiting, once its connection is closed. An eager server stays.
      if (phase !== 'ready' || facts.config.start !== 'on_demand' || facts.calls > 0) return facts;
      return closeTo(facts, 'pending', { demanded: false });
  }
}

/** Whether a piece of work runs in this phase: the invariants of what lives and dies with a state. */
export const runs = {
  connect: (facts: ServerFacts) => connectingPhases.includes(facts.phase),
  check: (facts: ServerFacts) => facts.phase === 'checking',
  refresh: (facts: ServerFacts) => facts.phase === 'refreshing',
  consent: (facts: ServerFacts) => facts.phase === 'consenting',
  catalog: (facts: ServerFacts) => facts.phase === 'ready',
  /** The connection watch (with the idle watch of an on_demand server) lives with the ready connection. */
  watch: (facts: ServerFacts) => facts.phase === 'ready',
  close: (facts: ServerFacts) => facts.phase === 'closing',
};
