// Runs a path of the server graph on a real actor: each model event is made
// to happen (through the scripted world, or sent as the event itself), the
// actor is observed the way the host observes it, and the observation is
// compared with what the reference model promises, at every step.
import { createActor, type ActorRefFrom } from 'xstate';
import type { StatePath } from 'xstate/graph';
import { serverMachine, type ServerInput } from '../../../src/machines/server.machine.js';
import { topState } from '../../../src/machines/server.queries.js';
import type { ServerState } from '../../../src/services/journal/events.js';
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
import { createServerWorld, failures, type ServerWorld } from './server-world.js';

export type ServerPath = StatePath<ServerSnapshot, ModelEvent>;
type ServerRef = ActorRefFrom<typeof serverMachine>;

/** The server's name in every path. */
export const NAME = 'files';

/** The delays never elapse by themselves: paths fire them by name. */
export const noTimers = { delays: { backoff: 2 ** 30, stable: 2 ** 30 } };

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
    case 'catalog.changed':
      return world.catalogChanged();
    // The connection ends; the machine's own watcher must notice.
    case 'connection.lost':
      return world.lose(failures.lost());
    case 'connection.auth_lost':
      return world.lose(failures.auth());
    case 'close.done':
      return world.finishClose();
    case 'close.fails':
      return world.finishClose(new Error('kill failed'));
    case 'backoff.elapses':
      return actor.send({ type: afterEvents.backoff } as never);
    case 'stable.elapses':
      return actor.send({ type: afterEvents.stable } as never);
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
    phase: phaseOf(snapshot),
    /** A pending server waits for its turn in the startup queue (or will, once closed) rather than connect at once. */
    queued: state === 'pending' && snapshot.context.queued,
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
      close: world.connections.filter((connection) => connection.closeInFlight).length,
    },
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
    phase: facts.phase,
    queued: state === 'pending' && facts.queued,
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
      close: runs.close(facts) && facts.connections > 0 ? 1 : 0,
    },
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
  /** The machine to run (a deliberately broken one, to see the test fail). */
  machine?: typeof serverMachine;
}

/** Runs one path on a real actor, checking it against the model at every step; the first mismatch, if any. */
export async function runPath(path: ServerPath, { input, configs, machine = serverMachine }: PathRun): Promise<Mismatch | null> {
  const world = createServerWorld();
  const actor = createActor(machine.provide({ actors: world.actors, ...noTimers }), { input });
  const observer = await createObserver((name) => (name === NAME ? actor : undefined));
  observer.bridge(actor);
  actor.start();
  let facts = initialFacts(input.config, input.queued);
  const taken: string[] = [];
  try {
    for (const [index, step] of path.steps.entries()) {
      if (index > 0) {
        perform(step.event, actor, world);
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
  }
}

/** Runs every path; the distinct discrepancies found. */
export async function runPaths(paths: readonly ServerPath[], run: PathRun) {
  const mismatches = createMismatches();
  for (const path of paths) mismatches.add(await runPath(path, run));
  return mismatches;
}
