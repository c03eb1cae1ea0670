// Runs a path of the server graph on a real actor: each model event is made
// to happen (through the scripted world, or sent as the event itself), the
// actor is observed the way the host observes it, and the observation is
// compared with what the reference model promises, at every step.
//
// The machine's own idle watch runs (it is what counts the calls of an
// `on_demand` server): its clock is faked, and `idle.elapses` moves it on by
// `idle_timeout_seconds`. The machine's delays are faked with it and never
// come due; paths fire them by name.
import { vi } from 'vitest';
import { createActor, type ActorRefFrom } from 'xstate';
import type { StatePath } from 'xstate/graph';
import { serverMachine, type ServerInput } from '../../../src/machines/server.machine.js';
import { topState } from '../../../src/machines/server.queries.js';
import type { ServerState } from '../../../src/journal/events.js';
import { compare, createMismatches, type Mismatch } from './mismatches.js';
import { createObserver, type Observer } from './observe.js';
import { afterEvents, configLabel, describeEvent, type ConfigSet, type ServerSnapshot } from './server-graph.js';
import {
  expected,
  expectedTools,
  initialFacts,
  runs,
  specState,
  type ModelEvent,
  type Phase,
  type ServerFacts,
} from './server-spec.js';
import { createWorldSlot, failures, type ServerWorld } from './server-world.js';

export type ServerPath = StatePath<ServerSnapshot, ModelEvent>;
type ServerRef = ActorRefFrom<typeof serverMachine>;

/** The server's name in every path. */
export const NAME = 'files';

/** The delays never elapse by themselves: paths fire them by name. */
export const noTimers = { delays: { backoff: 2 ** 30, stable: 2 ** 30, authServerBackoff: 2 ** 30 } };

/** Lets promise settlements and sent-back events reach the machine (no timers are involved). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Makes the model event happen to the real actor: through its scripted work, or as the event itself. */
export function perform(event: ModelEvent, actor: ServerRef, world: ServerWorld): void {
  switch (event.type) {
    case 'check.connect':
      return world.answerCheck('connect');
    case 'check.refresh':
      return world.answerCheck('refresh');
    case 'check.fails':
      return world.failCheck();
    case 'refresh.succeeds':
      return world.succeedRefresh();
    case 'refresh.fails_auth':
      return world.failRefresh(failures.auth());
    case 'refresh.fails':
      return world.failRefresh(failures.refresh());
    case 'refresh.fails_away':
      return world.failRefresh(failures.away());
    case 'consent.url':
      return world.consentSends({ type: 'auth.url', url: 'https://auth.example.com/authorize?state=x' });
    case 'consent.completes':
      return world.consentSends({ type: 'auth.completed' });
    case 'consent.fails':
      return world.consentSends({ type: 'auth.failed', error: failures.consent() });
    case 'connect.succeeds':
      return world.succeedConnect();
    case 'connect.fails':
      return world.failConnect(failures.spawn());
    case 'connect.fails_auth':
      return world.failConnect(failures.auth());
    case 'connect.fails_away':
      return world.failConnect(failures.away());
    case 'catalog.changed':
      return world.catalogChanged();
    // The connection ends; the machine's own watcher must notice.
    case 'connection.lost':
      return world.lose(failures.lost());
    case 'connection.auth_lost':
      return world.lose(failures.auth());
    case 'connection.away_lost':
      return world.lose(failures.away());
    case 'close.done':
      return world.finishClose();
    case 'close.fails':
      return world.finishClose(new Error('kill failed'));
    case 'backoff.elapses':
      return actor.send({ type: afterEvents.backoff } as never);
    case 'away_backoff.elapses':
      return actor.send({ type: afterEvents.authServerBackoff } as never);
    case 'stable.elapses':
      return actor.send({ type: afterEvents.stable } as never);
    // The ready server's idle watch sees `idle_timeout_seconds` go by (on the faked clock).
    case 'idle.elapses':
      return void vi.advanceTimersByTime(actor.getSnapshot().context.config.idle_timeout_seconds * 1000);
    default:
      return actor.send(event);
  }
}

/** The model's phase of a real snapshot (its substate, read as an observation). */
export function phaseOf(snapshot: ServerSnapshot): Phase {
  if (snapshot.status !== 'active') return 'stopped';
  const pairs: Array<[Parameters<ServerSnapshot['matches']>[0], Phase]> = [
    ['disabled', 'disabled'],
    [{ pending: 'queued' }, 'queued'],
    [{ pending: 'on_demand' }, 'on_demand'],
    [{ pending: 'checking_auth' }, 'checking'],
    [{ pending: 'connecting' }, 'connecting'],
    [{ authenticating: 'refreshing' }, 'refreshing'],
    [{ authenticating: 'consenting' }, 'consenting'],
    [{ authenticating: 'connecting' }, 'auth_connecting'],
    ['ready', 'ready'],
    ['closing', 'closing'],
    ['needs_reauth', 'needs_reauth'],
    [{ error: 'backing_off' }, 'backing_off'],
    [{ error: 'halted' }, 'halted'],
    [{ error: 'awaiting_authorization_server' }, 'awaiting_as'],
  ];
  return pairs.find(([value]) => snapshot.matches(value))?.[1] ?? (JSON.stringify(snapshot.value) as Phase);
}

const failedState = (state: ServerState) => state === 'error' || state === 'needs_reauth';

/** What the real actor and its surroundings show; computed so that one comparison checks every invariant. */
function observe(actor: ServerRef, step: ServerSnapshot, observer: Observer, world: ServerWorld, configs: ConfigSet) {
  const snapshot = actor.getSnapshot();
  const state = topState(snapshot);
  const view = observer.view(NAME);
  const current = snapshot.status === 'active' && snapshot.matches('ready') ? snapshot.context.live?.connection : undefined;
  return {
    state,
    /** The graph's own step (the pure transition) agrees with the actor and the model. */
    graphState: topState(step),
    graphPhase: phaseOf(step),
    phase: phaseOf(snapshot),
    /** A pending server waits for its turn in the startup queue (or will, once closed) rather than connect at once. */
    queued: state === 'pending' && snapshot.context.queued,
    /** An `on_demand` server was asked for: it connects rather than waits (until it goes idle). */
    demanded: snapshot.context.demanded,
    /** Lost connections and failed reconnects in a row: what is left of reconnect.max_attempts. */
    failures: snapshot.context.failures,
    config: configLabel(configs, snapshot.context.config),
    errorKind: failedState(state) ? snapshot.context.errorKind : null,
    gaveUp: state === 'error' && /gave up/.test(snapshot.context.error ?? ''),
    authorizationUrl: snapshot.context.authorizationUrl !== null,
    mountedTools: observer.tools(NAME).sort(),
    registrations: observer.registrations(actor.id),
    registeredOutsideReady: observer.violations,
    running: {
      connect: world.connects.running().length,
      check: world.checks.running().length,
      refresh: world.refreshes.running().length,
      consent: world.consents.running().length,
      catalog: world.catalogs.running().length,
      watch: snapshot.status === 'active' && snapshot.children['watchConnection'] !== undefined ? 1 : 0,
      close: world.connections.filter((connection) => connection.closeInFlight).length,
    },
    /** Timers waiting on the faked clock: the machine's delays of the state it is in, and an armed idle watch. */
    timers: vi.getTimerCount(),
    consentsBegun: world.consents.all.length,
    /** close() calls per connection ever established. */
    closeCalls: world.connections.map((connection) => connection.closeCalls),
    holdsItsConnection: current === undefined || current === (world.connections.at(-1) as unknown),
    view: view && {
      state: view.state,
      ready: view.ready,
      tool_count: view.tool_count,
      error_kind: view.error_kind,
      enabled: view.config['enabled'],
      timeout_seconds: view.config['timeout_seconds'],
    },
  };
}

/** What the model promises for the same step. */
function promise(facts: ServerFacts, configs: ConfigSet): ReturnType<typeof observe> {
  const state = specState(facts);
  const tools = facts.phase === 'ready' ? expectedTools(NAME, facts.config).sort() : [];
  const errorKind = failedState(state) ? facts.errorKind : null;
  // Each connection is closed once it leaves ready; the ready one is open.
  const closeCalls = Array.from({ length: facts.connections }, (_, index) =>
    index === facts.connections - 1 && facts.phase === 'ready' ? 0 : 1,
  );
  return {
    state,
    graphState: state,
    graphPhase: facts.phase,
    phase: facts.phase,
    queued: state === 'pending' && facts.queued,
    demanded: facts.demanded,
    failures: facts.failures,
    config: configLabel(configs, facts.config),
    errorKind,
    gaveUp: state === 'error' && facts.gaveUp,
    authorizationUrl: facts.authorizationUrl,
    mountedTools: tools,
    registrations: facts.registrations,
    registeredOutsideReady: [],
    running: {
      connect: runs.connect(facts) ? 1 : 0,
      check: runs.check(facts) ? 1 : 0,
      refresh: runs.refresh(facts) ? 1 : 0,
      consent: runs.consent(facts) ? 1 : 0,
      catalog: runs.catalog(facts) ? 1 : 0,
      watch: runs.watch(facts) ? 1 : 0,
      close: runs.close(facts) && facts.connections > 0 ? 1 : 0,
    },
    // `stable` while ready, `backoff` while backing off; the idle timer of an `on_demand` server with no call in flight.
    timers:
      (facts.phase === 'ready' ? 1 : 0) +
      (facts.phase === 'backing_off' || facts.phase === 'awaiting_as' ? 1 : 0) +
      (facts.phase === 'ready' && facts.config.start === 'on_demand' && facts.calls === 0 ? 1 : 0),
    consentsBegun: facts.consents,
    closeCalls,
    holdsItsConnection: true,
    view: {
      state,
      ready: state === 'ready',
      tool_count: tools.length,
      error_kind: errorKind,
      enabled: facts.config.enabled,
      timeout_seconds: facts.config.timeout_seconds,
    },
  };
}

export interface PathRun {
  input: ServerInput;
  configs: ConfigSet;
  /** The host knows the server's catalog from an earlier run (default true); else once it registered tools. */
  knowsCatalog?: boolean;
  /** The machine to run (a deliberately broken one, to see the test fail). */
  machine?: typeof serverMachine;
}

/** Fakes the clock of setTimeout (only), unless it is already: whether this call did. */
function fakeClock(): boolean {
  if (vi.isFakeTimers()) return false;
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  return true;
}

/**
 * The machine provided once for many paths (`provide` rebuilds the whole
 * machine, which costs several times what running a path does): its work
 * acts on the world of the path being run, its guard asks that path's
 * observer.
 */
function createRig(run: PathRun) {
  const { machine = serverMachine, knowsCatalog = true } = run;
  const worlds = createWorldSlot();
  let observer: Observer | undefined;
  // As the host provides it: known from an earlier run, or from the journal once the server registered tools.
  const guards = { knowsCatalog: () => knowsCatalog || (observer?.knowsCatalog(NAME) ?? false) };
  return {
    machine: machine.provide({ actors: worlds.actors, guards, ...noTimers }),
    /** The world's host, handed to the actor in its input (the catalog session). */
    host: worlds.host,
    /** A fresh world and observer for the next path. */
    async next(actor: () => ServerRef | undefined): Promise<{ world: ServerWorld; observer: Observer }> {
      observer = undefined;
      const world = worlds.next();
      observer = await createObserver((name) => (name === NAME ? actor() : undefined));
      return { world, observer };
    },
  };
}
type Rig = ReturnType<typeof createRig>;

/** Runs one path on a real actor, checking it against the model at every step; the first mismatch, if any. */
export async function runPath(path: ServerPath, run: PathRun, rig: Rig = createRig(run)): Promise<Mismatch | null> {
  const { input, configs, knowsCatalog = true } = run;
  let actor: ServerRef | undefined;
  const { world, observer } = await rig.next(() => actor);
  const ownClock = fakeClock();
  actor = createActor(rig.machine, { input: { ...input, host: rig.host } });
  try {
    observer.bridge(actor);
    actor.start();
    let facts = initialFacts(input.config, input.queued, knowsCatalog);
    const taken: string[] = [];
    for (const [index, step] of path.steps.entries()) {
      if (index > 0) {
        try {
          perform(step.event, actor, world);
        } catch (error) {
          // The world could not make it happen (nothing of the kind runs): the graph and the actor disagree.
          const event = describeEvent(configs, step.event);
          const walked = ['start', ...taken, event].join(' → ');
          return { path: walked, signature: `${event}: cannot happen`, differences: { happens: { seen: String(error), promised: 'it happens' } } };
        }
        facts = expected(facts, step.event);
        taken.push(describeEvent(configs, step.event));
      }
      await settle();
      const mismatch = compare(taken, observe(actor, step.state, observer, world, configs), promise(facts, configs));
      if (mismatch) return mismatch;
    }
    return null;
  } finally {
    observer.stop();
    actor.stop();
    if (ownClock) vi.useRealTimers();
  }
}

/** Runs every path; the distinct discrepancies found. */
export async function runPaths(paths: readonly ServerPath[], run: PathRun) {
  const mismatches = createMismatches();
  // One faked clock for them all: each actor clears its timers when it stops.
  const ownClock = fakeClock();
  try {
    const rig = createRig(run);
    for (const path of paths) mismatches.add(await runPath(path, run, rig));
  } finally {
    if (ownClock) vi.useRealTimers();
  }
  return mismatches;
}

/** The first path on which the actor differs from the model (null if none does): enough to see a broken machine fail. */
export async function firstMismatch(paths: readonly ServerPath[], run: PathRun): Promise<Mismatch | null> {
  const ownClock = fakeClock();
  try {
    const rig = createRig(run);
    for (const path of paths) {
      const mismatch = await runPath(path, run, rig);
      if (mismatch) return mismatch;
    }
    return null;
  } finally {
    if (ownClock) vi.useRealTimers();
  }
}
