// The real server machine as a graph for `xstate/graph`, driven by the
// model's events: an invoked actor's outcome becomes the synthetic
// `xstate.done.actor.<id>` / `xstate.error.actor.<id>` event the machine
// would receive, a delay becomes its `xstate.after.<delay>.<state>` event,
// and `idle_timeout_seconds` passing becomes the idle watch's `server.idle`
// when it would send one (`createTestModel` refuses machines that invoke or
// delay; the path functions only need a transition function).
import { createEmptyActor, type ActorLogic, type ActorScope, type AnyEventObject, type SnapshotFrom } from 'xstate';
import type { StatePath } from 'xstate/graph';
import { serverMachine, type ServerInput } from '../../../src/machines/server.machine.js';
import type { ServerMachineEvent } from '../../../src/machines/server.events.js';
import { ServerConfig, type ServerConfigInput } from '../../../src/config/schema.js';
import type { ModelEvent } from './server-spec.js';
import { failures, type FakeConnection } from './server-world.js';

export type ServerSnapshot = SnapshotFrom<typeof serverMachine>;

/** The configs one path may hand a server: the same server as first configured, edited, disabled, retooled, switched. */
export interface ConfigSet {
  base: ServerConfig;
  edited: ServerConfig;
  disabled: ServerConfig;
  /** Only the tool filter differs (`server.retool`). */
  retooled: ServerConfig;
  retooledDisabled: ServerConfig;
  /** Of an `on_demand` server: the same, but eager (management switches it; its `edited` switches it back). */
  switched?: ServerConfig;
}

export type StartMode = ServerConfig['start'];

export function configSet(kind: 'local' | 'oauth', maxAttempts: number, start: StartMode = 'eager'): ConfigSet {
  const base: ServerConfigInput =
    kind === 'local'
      ? { type: 'local', command: ['node', 'server.js'] }
      : { type: 'remote', url: 'https://mcp.example.com/mcp', auth: { kind: 'oauth' } };
  const make = (extra: Partial<ServerConfigInput>) =>
    ServerConfig.parse({ ...base, ping_interval_seconds: 0, reconnect: { max_attempts: maxAttempts }, start, ...extra });
  return {
    base: make({}),
    edited: make({ timeout_seconds: 7 }),
    disabled: make({ enabled: false }),
    retooled: make({ tools: { include: null, exclude: ['add'] } }),
    retooledDisabled: make({ enabled: false, tools: { include: null, exclude: ['add'] } }),
    ...(start === 'on_demand' ? { switched: make({ start: 'eager' }) } : {}),
  };
}

/** A name per config of the set, for serializing states and printing paths. */
export function configLabel(configs: ConfigSet, config: ServerConfig): string {
  const found = Object.entries(configs).find(([, candidate]) => candidate === config);
  return found ? found[0] : 'other';
}

/**
 * The events a path may take in a state; `server.retool` keeps `enabled` as
 * it is (only the filter changes), and is not sent to a server whose `start`
 * was switched (that edit is a configure).
 */
export function modelEvents(configs: ConfigSet, snapshot: ServerSnapshot): ModelEvent[] {
  const { enabled, start } = snapshot.context.config;
  const retool: ModelEvent[] =
    start === configs.base.start ? [{ type: 'server.retool', config: enabled ? configs.retooled : configs.retooledDisabled }] : [];
  return [
    { type: 'server.connect' },
    { type: 'server.connect', config: configs.edited },
    { type: 'server.enable', config: configs.base },
    // A hand edit during startup: back to the end of the startup queue.
    { type: 'server.enable', config: configs.base, queued: true },
    { type: 'server.disable', config: configs.disabled },
    { type: 'server.restart' },
    { type: 'server.configure', config: configs.edited },
    { type: 'server.configure', config: configs.edited, queued: true },
    { type: 'server.configure', config: configs.disabled },
    // Management makes an `on_demand` server eager (and its `edited` config on demand again).
    ...(configs.switched ? [{ type: 'server.configure' as const, config: configs.switched }] : []),
    ...retool,
    { type: 'server.stop' },
    { type: 'auth.begin' },
    { type: 'check.connect' },
    { type: 'check.refresh' },
    { type: 'check.fails' },
    { type: 'refresh.succeeds' },
    { type: 'refresh.fails_auth' },
    { type: 'refresh.fails' },
    { type: 'refresh.fails_away' },
    { type: 'consent.url' },
    { type: 'consent.completes' },
    { type: 'consent.fails' },
    { type: 'connect.succeeds' },
    { type: 'connect.fails' },
    { type: 'connect.fails_auth' },
    { type: 'connect.fails_away' },
    { type: 'catalog.changed' },
    { type: 'connection.lost' },
    { type: 'connection.auth_lost' },
    { type: 'connection.away_lost' },
    { type: 'close.done' },
    { type: 'close.fails' },
    { type: 'backoff.elapses' },
    { type: 'away_backoff.elapses' },
    { type: 'stable.elapses' },
    { type: 'server.demand' },
    { type: 'call.started' },
    { type: 'call.finished' },
    { type: 'idle.elapses' },
  ];
}

const invokeOf = (stateId: string, index = 0): string => serverMachine.getStateNodeById(stateId).invoke[index]!.id;
const done = (id: string, output?: unknown): AnyEventObject => ({ type: `xstate.done.actor.${id}`, output, actorId: id });
const failed = (id: string, error: unknown): AnyEventObject => ({ type: `xstate.error.actor.${id}`, error, actorId: id });

/** The machine's delayed events, fired by name instead of waited for. */
export const afterEvents = {
  backoff: 'xstate.after.backoff.server.error.backing_off',
  authServerBackoff: 'xstate.after.authServerBackoff.server.error.awaiting_authorization_server',
  stable: 'xstate.after.stable.server.ready',
} as const;

/** What a synthetic `connect.succeeds` hands the machine; only its presence matters to a pure transition. */
const graphLive = { connection: {} as FakeConnection, lost: new Promise<never>(() => {}), lossHandled: () => {} };

function connectInvoke(snapshot: ServerSnapshot): string {
  return snapshot.matches('authenticating') ? invokeOf('server.authenticating.connecting') : invokeOf('server.pending.connecting');
}

/**
 * Whether the ready server's idle watch sends `server.idle` once
 * `idle_timeout_seconds` pass: only an `on_demand` server's, with no call in flight.
 */
const goesIdle = (snapshot: ServerSnapshot): boolean =>
  snapshot.matches('ready') && snapshot.context.config.start === 'on_demand' && countersOf(snapshot).calls === 0;

/** Time passes and nothing happens: an event no state of the machine takes. */
const nothing: AnyEventObject = { type: 'model.nothing' };

/** The event the machine receives for a model event in this state. */
function toMachineEvent(snapshot: ServerSnapshot, event: ModelEvent): AnyEventObject {
  switch (event.type) {
    case 'check.connect':
      return done(invokeOf('server.pending.checking_auth'), 'connect');
    case 'check.refresh':
      return done(invokeOf('server.pending.checking_auth'), 'refresh');
    case 'check.fails':
      return failed(invokeOf('server.pending.checking_auth'), new Error('credentials file unreadable'));
    case 'refresh.succeeds':
      return done(invokeOf('server.authenticating.refreshing'));
    case 'refresh.fails_auth':
      return failed(invokeOf('server.authenticating.refreshing'), failures.auth());
    case 'refresh.fails':
      return failed(invokeOf('server.authenticating.refreshing'), failures.refresh());
    case 'refresh.fails_away':
      return failed(invokeOf('server.authenticating.refreshing'), failures.away());
    case 'consent.url':
      return { type: 'auth.url', url: 'https://auth.example.com/authorize?state=x' };
    case 'consent.completes':
      return { type: 'auth.completed' };
    case 'consent.fails':
      return { type: 'auth.failed', error: failures.consent() };
    case 'connect.succeeds':
      return done(connectInvoke(snapshot), graphLive);
    case 'connect.fails':
      return failed(connectInvoke(snapshot), failures.spawn());
    case 'connect.fails_auth':
      return failed(connectInvoke(snapshot), failures.auth());
    case 'connect.fails_away':
      return failed(connectInvoke(snapshot), failures.away());
    case 'catalog.changed':
      return { type: 'catalog.tools_changed' };
    case 'connection.lost':
      return { type: 'connection.closed', error: failures.lost() };
    case 'connection.auth_lost':
      return { type: 'connection.closed', error: failures.auth() };
    case 'connection.away_lost':
      return { type: 'connection.closed', error: failures.away() };
    case 'close.done':
      return done(invokeOf('server.closing'));
    case 'close.fails':
      return failed(invokeOf('server.closing'), new Error('kill failed'));
    case 'backoff.elapses':
      return { type: afterEvents.backoff };
    case 'away_backoff.elapses':
      return { type: afterEvents.authServerBackoff };
    case 'stable.elapses':
      return { type: afterEvents.stable };
    case 'idle.elapses':
      return goesIdle(snapshot) ? { type: 'server.idle' } : nothing;
    default:
      return event;
  }
}

/** Bounds that keep the simple paths few enough to run: connect attempts, and re-registrations in ready. */
export interface Bounds {
  /** Entries into a state that starts connecting (pending or authenticating, not queued or waiting to be asked for). */
  attempts: number;
  /** Catalog changes taken while ready (the state is the same before and after one). */
  catalogChanges: number;
  /** Calls in flight at once on a ready `on_demand` server (default 2). */
  calls?: number;
}

/** What the graph keeps of a path besides the machine's snapshot (a transition function sees only the snapshot). */
interface Counters {
  attempts: number;
  catalogChanges: number;
  /** Calls in flight, as the ready server's idle watch counts them (0 outside ready: they ended with the connection). */
  calls: number;
  /** The host knows the server's catalog (what the machine's `knowsCatalog` guard asks): from an earlier run, or once it registered tools. */
  catalog: boolean;
}

const counters = new WeakMap<object, Counters>();
const connectingNow = (snapshot: ServerSnapshot): boolean =>
  snapshot.status === 'active' &&
  ((snapshot.matches('pending') && !snapshot.matches({ pending: 'queued' }) && !snapshot.matches({ pending: 'on_demand' })) ||
    (snapshot.matches('authenticating') && !snapshot.matches({ authenticating: 'consenting' })));
// Every snapshot of a `serverGraph` is in the map (its initial one too); a bare one counts as just started.
const countersOf = (snapshot: ServerSnapshot): Counters =>
  counters.get(snapshot) ?? { attempts: connectingNow(snapshot) ? 1 : 0, catalogChanges: 0, calls: 0, catalog: true };

/** Events a bound refused (the same event objects are used throughout a traversal). */
const refused = new WeakSet<ModelEvent>();

/**
 * The real machine's transition function, driven by model events, within
 * `bounds`. `knowsCatalog`: whether the host knows the server's catalog from
 * an earlier run; the machine's guard is provided as the host provides it
 * (known from the start, or once the server registered its tools).
 */
export function serverGraph(
  bounds: Bounds,
  knowsCatalog = true,
  /** The machine whose graph is walked (a deliberately broken one, to see the model test fail). */
  walked: typeof serverMachine = serverMachine,
): ActorLogic<ServerSnapshot, ModelEvent, ServerInput> {
  const maxCalls = bounds.calls ?? 2;
  /** What the guard answers during the transition being computed (transitions are synchronous). */
  let catalogNow = knowsCatalog;
  const machine = walked.provide({ guards: { knowsCatalog: () => catalogNow } });
  const logic = Object.create(machine) as ActorLogic<ServerSnapshot, ModelEvent, ServerInput>;
  return Object.assign(logic, {
    getInitialSnapshot(scope: ActorScope<ServerSnapshot, ModelEvent>, input: ServerInput) {
      catalogNow = knowsCatalog;
      const initial = machine.getInitialSnapshot.call(logic, scope as never, input) as ServerSnapshot;
      counters.set(initial, { attempts: connectingNow(initial) ? 1 : 0, catalogChanges: 0, calls: 0, catalog: knowsCatalog });
      return initial;
    },
    transition(snapshot: ServerSnapshot, event: ModelEvent, scope: ActorScope<ServerSnapshot, ModelEvent>) {
      const before = countersOf(snapshot);
      catalogNow = before.catalog;
      const next = machine.transition(snapshot, toMachineEvent(snapshot, event) as ServerMachineEvent, scope as never);
      // A macrostep from a non-connecting state into a connecting one is a new attempt (so is re-entering pending).
      const reentered = event.type === 'server.restart' || event.type === 'server.configure';
      const attempt = connectingNow(next) && (!connectingNow(snapshot) || reentered);
      const stillReady = snapshot.matches('ready') && next.matches('ready');
      const callChange = event.type === 'call.started' ? 1 : event.type === 'call.finished' ? -1 : 0;
      const after: Counters = {
        attempts: before.attempts + (attempt ? 1 : 0),
        catalogChanges: before.catalogChanges + (event.type === 'catalog.changed' && next.matches('ready') ? 1 : 0),
        calls: stillReady ? Math.max(0, before.calls + callChange) : 0,
        catalog: before.catalog || next.matches('ready'),
      };
      // Past a bound the event is refused: the graph sees a self-loop, which no path takes.
      if (after.attempts > bounds.attempts || after.catalogChanges > bounds.catalogChanges || after.calls > maxCalls) {
        refused.add(event);
        return snapshot;
      }
      // A step the machine takes without a change (a call forwarded to the idle watch) still changes the counts:
      // the counts belong to a snapshot object, so that step gets one of its own.
      const changed = after.calls !== before.calls || after.catalog !== before.catalog;
      const own = next === snapshot && changed ? ({ ...next } as ServerSnapshot) : next;
      counters.set(own, after);
      return own;
    },
  });
}

/** Whether the model event can happen at all in this state (the others are no-ops the paths need not try). */
export function canHappen(snapshot: ServerSnapshot, event: ModelEvent): boolean {
  if (snapshot.status !== 'active') return false;
  const prefix = event.type.split('.')[0];
  switch (prefix) {
    case 'check':
      return snapshot.matches({ pending: 'checking_auth' });
    case 'refresh':
      return snapshot.matches({ authenticating: 'refreshing' });
    case 'consent':
      return snapshot.matches({ authenticating: 'consenting' });
    case 'connect':
      return snapshot.matches({ pending: 'connecting' }) || snapshot.matches({ authenticating: 'connecting' });
    case 'catalog':
    case 'connection':
      return snapshot.matches('ready');
    case 'close':
      return snapshot.matches('closing');
    case 'backoff':
      return snapshot.matches({ error: 'backing_off' });
    case 'away_backoff':
      return snapshot.matches({ error: 'awaiting_authorization_server' });
    case 'stable':
      return snapshot.matches('ready') && snapshot.context.failures > 0;
    case 'idle':
      // Time passes while ready; only an `on_demand` server's idle watch acts on it.
      return snapshot.matches('ready');
    case 'call':
      // The host counts calls only for `on_demand` servers, and ends only a call it started.
      if (!snapshot.matches('ready') || snapshot.context.config.start !== 'on_demand') return false;
      return event.type === 'call.started' || countersOf(snapshot).calls > 0;
    case 'server':
      // Only the startup queue sends it, and only to a server waiting in it.
      // A stopping actor has left the registry already.
      if (event.type === 'server.connect') return snapshot.context.queued && !snapshot.matches({ closing: 'to_stopped' });
      // Sent when only `enabled` flips (src/host/config-change.ts): enable to a disabled config, disable to an enabled one.
      if (event.type === 'server.enable') return !snapshot.context.config.enabled;
      if (event.type === 'server.disable') return snapshot.context.config.enabled;
      // The host asks for `on_demand` servers: a call to one of their tools, or a search that loaded one.
      if (event.type === 'server.demand') return snapshot.context.config.start === 'on_demand';
      return true;
    default:
      return true;
  }
}

export interface TraversalChoice {
  /** Only these events (as `describeEvent` names them). */
  only?: ReadonlySet<string>;
  /** States differ by the config they hold, not only by `enabled` (more states: every config change is a transition). */
  fine?: boolean;
}

/** Traversal options for `getShortestPaths` / `getSimplePaths` / `getTransitionPaths`. */
export function traversal(input: ServerInput, configs: ConfigSet, { only, fine = false }: TraversalChoice = {}) {
  return {
    input,
    events: (snapshot: ServerSnapshot) =>
      modelEvents(configs, snapshot).filter((event) => !only || only.has(describeEvent(configs, event))),
    filterEvents: canHappen,
    serializeState: (snapshot: ServerSnapshot) =>
      JSON.stringify({
        value: snapshot.value,
        status: snapshot.status,
        queued: snapshot.context.queued,
        errorKind: snapshot.context.errorKind,
        gaveUp: /gave up/.test(snapshot.context.error ?? ''),
        failures: snapshot.context.failures,
        live: snapshot.context.live !== null,
        config: fine ? configLabel(configs, snapshot.context.config) : snapshot.context.config.enabled,
        start: snapshot.context.config.start,
        url: snapshot.context.authorizationUrl !== null,
        demanded: snapshot.context.demanded,
        ...countersOf(snapshot),
      }),
  };
}

/** How a path reads in a failure message. */
export function describeEvent(configs: ConfigSet, event: ModelEvent): string {
  if (!('config' in event) || !event.config) return event.type;
  const queued = 'queued' in event && event.queued ? ',queued' : '';
  return `${event.type}(${configLabel(configs, event.config)}${queued})`;
}

/** Whether a bound refused this event (the graph saw a self-loop that is not the machine's). */
export const wasRefused = (event: ModelEvent): boolean => refused.has(event);

/** A scope for pure transitions, as `xstate/graph` makes one. */
function mockScope(): ActorScope<ServerSnapshot, ModelEvent> {
  const self = createEmptyActor();
  const noop = () => {};
  return { self, logger: noop, id: '', sessionId: 'model', defer: noop, system: self.system, stopChild: noop, emit: noop, actionExecutor: noop } as never;
}

/** The path a sequence of model events takes through the graph (no walk). */
export function pathOf(logic: ActorLogic<ServerSnapshot, ModelEvent, ServerInput>, input: ServerInput, events: readonly ModelEvent[]): StatePath<ServerSnapshot, ModelEvent> {
  const scope = mockScope();
  let state = logic.getInitialSnapshot(scope, input);
  const steps: StatePath<ServerSnapshot, ModelEvent>['steps'] = [{ state, event: { type: 'xstate.init' } as never }];
  for (const event of events) {
    state = logic.transition(state, event, scope);
    steps.push({ state, event });
  }
  return { state, weight: events.length, steps };
}
