// Model-based tests of the server lifecycle (SPEC §4): every shortest path and
// every simple path (bounded to two connect attempts) of the machine's graph,
// run step by step against the real actor with a scripted connection. At every
// step: the actor is in the state the model says; tools are registered iff it
// is `ready`; a connection is live iff it is connecting or `ready`; the
// projection fed the host's way shows the actor's state.
import { isDeepStrictEqual } from 'node:util';
import { createActor, fromCallback, type ActorRefFrom } from 'xstate';
import { getShortestPaths, getSimplePaths, type StatePath } from 'xstate/graph';
import { describe, expect, test } from 'vitest';
import { serverMachine, type ServerInput } from '../../src/machines/server.machine.js';
import { topState } from '../../src/machines/server.queries.js';
import { ServerConfig } from '../../src/services/config/schema.js';
import { ServerState } from '../../src/services/journal/events.js';
import { toServerView } from '../../src/services/journal/projection.js';
import { observeLikeHost, type HostObserver } from './helpers/host-observer.js';
import { createScriptedConnections, failures, type ScriptedConnections } from './helpers/scripted-connection.js';
import {
  delayedEvents,
  expectedOf,
  modelEvents,
  serverModel,
  traversal,
  type ModelEvent,
  type ServerSnapshot,
} from './helpers/server-model.js';

type Path = StatePath<ServerSnapshot, ModelEvent>;

/** Thousands of steps per test: room for a machine whose cores are busy with other tests. */
const PATHS_TIMEOUT_MS = 180_000;

/** Simple paths may go round the connect cycle this often. */
const MAX_ATTEMPTS = 2;

// The last input gives up after one reconnect attempt, so paths reach the open circuit.
const inputs = [
  { enabled: true, queued: true, reconnects: 5 },
  { enabled: true, queued: false, reconnects: 5 },
  { enabled: false, queued: true, reconnects: 5 },
  { enabled: false, queued: false, reconnects: 5 },
  { enabled: true, queued: false, reconnects: 1 },
];

function inputOf({ enabled, queued, reconnects }: { enabled: boolean; queued: boolean; reconnects: number }): ServerInput {
  const config = ServerConfig.parse({
    type: 'local',
    command: ['node', 'server.js'],
    enabled,
    reconnect: { max_attempts: reconnects },
  });
  return { name: 'files', config, queued };
}

/** The delays never elapse by themselves: the model fires them by name. */
const noTimers = { delays: { backoff: 2 ** 30, stable: 2 ** 30 } };

const describePath = (path: Path): string => path.steps.map((step) => step.event.type).join(' → ');

/** Lets the promise actors' settlements reach the machine. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function perform(event: ModelEvent, actor: ActorRefFrom<typeof serverMachine>, world: ScriptedConnections): void {
  switch (event.type) {
    case 'connect.succeeds':
      return world.succeed();
    case 'connect.fails':
      return world.fail(failures.connect());
    case 'connect.fails_auth':
      return world.fail(failures.auth());
    case 'connection.closed':
      // The process dies; the real watchConnection actor must notice.
      return world.crash();
    case 'connection.auth_lost':
      // The token cannot be refreshed; the real watchConnection actor must pass the reason on.
      return world.crash(failures.auth());
    case 'reconnect.due':
    case 'ready.stable':
      return actor.send({ type: delayedEvents[event.type] } as never);
    default:
      return actor.send(event);
  }
}

/**
 * What the real actor and its surroundings show after a step, in the terms of
 * the model's promise: the invariants are computed here, so one comparison
 * per step checks them all (and `expect` prints every field on failure).
 */
function observe(actor: ReturnType<typeof createActor<typeof serverMachine>>, host: HostObserver, world: ScriptedConnections) {
  const snapshot = actor.getSnapshot();
  const active = snapshot.status === 'active';
  const ready = active && snapshot.matches('ready');
  const connectingNow = active && snapshot.matches({ pending: 'connecting' });
  const live = world.all.filter((connection) => connection.alive);
  const projected = host.projection.context.servers[snapshot.context.name];
  const view = projected ? toServerView(projected) : undefined;
  const failed = view?.state === 'error' || view?.state === 'needs_reauth';
  return {
    actor: {
      value: snapshot.value,
      status: snapshot.status,
      queued: snapshot.context.queued,
      error: snapshot.context.error,
      errorKind: snapshot.context.errorKind,
      failures: snapshot.context.failures,
      holdsConnection: snapshot.context.live !== null,
    },
    toolsRegisteredIffReady: (host.registered !== null) === ready,
    registeredTools: host.registered,
    registerUnregisterBalanced: host.violations.length === 0,
    liveConnectionIffConnectingOrReady: live.length === (ready || connectingNow ? 1 : 0),
    liveOneIsTheActors: !ready || live[0] === snapshot.context.live?.connection,
    releasedClosedExactlyOnce: world.all.every((connection) => connection.closeCalls === (live.includes(connection) ? 0 : 1)),
    projectionEqualsActor: view?.state === topState(snapshot),
    projectedReady: view?.ready === ready,
    projectedToolCount: view?.tool_count === (ready ? 1 : 0),
    projectedErrorKind: view?.error_kind === (failed ? snapshot.context.errorKind : null),
  };
}

function promised(step: ServerSnapshot) {
  const actor = expectedOf(step);
  return {
    actor,
    toolsRegisteredIffReady: true,
    registeredTools: step.value === 'ready' ? ['files__echo'] : null,
    registerUnregisterBalanced: true,
    liveConnectionIffConnectingOrReady: true,
    liveOneIsTheActors: true,
    releasedClosedExactlyOnce: true,
    projectionEqualsActor: true,
    projectedReady: true,
    projectedToolCount: true,
    projectedErrorKind: true,
  };
}

async function runPath(path: Path, input: ServerInput, machine = serverMachine): Promise<void> {
  const world = createScriptedConnections();
  const actor = createActor(machine.provide({ actors: { connect: world.connect }, ...noTimers }), { input });
  const host = observeLikeHost(actor);
  actor.start();
  try {
    for (const [index, step] of path.steps.entries()) {
      if (index > 0) perform(step.event, actor, world);
      await settle();
      const seen = observe(actor, host, world);
      const expected = promised(step.state);
      // `expect` only on a mismatch: thousands of steps, and its message is the useful part.
      if (!isDeepStrictEqual(seen, expected)) {
        expect(seen, `${describePath(path)} — after step ${index} (${step.event.type})`).toEqual(expected);
      }
    }
  } finally {
    host.stop();
    actor.stop();
  }
}

const pathsByInput = inputs.map((flags) => {
  const input = inputOf(flags);
  const options = traversal(input, MAX_ATTEMPTS);
  return {
    flags,
    input,
    shortest: getShortestPaths(serverModel, options),
    simple: getSimplePaths(serverModel, options),
  };
});

describe.each(pathsByInput)('server machine, enabled=$flags.enabled queued=$flags.queued reconnects=$flags.reconnects', ({ flags, input, shortest, simple }) => {
  test('starts where SPEC §4 says', () => {
    const start = shortest.find((path) => path.steps.length === 1)!;
    expect(start.state.value).toEqual(flags.enabled ? { pending: flags.queued ? 'queued' : 'connecting' } : 'disabled');
  });

  test('every shortest path holds the invariants at every step', async () => {
    expect(shortest.length).toBeGreaterThan(25);
    for (const path of shortest) await runPath(path, input);
  }, PATHS_TIMEOUT_MS);

  test('every simple path (≤ 2 connect attempts) holds the invariants at every step', async () => {
    expect(simple.length).toBeGreaterThan(shortest.length);
    for (const path of simple) await runPath(path, input);
  }, PATHS_TIMEOUT_MS);
});

test('the paths reach every SPEC §4 state and take every event', () => {
  const paths = pathsByInput.flatMap(({ shortest, simple }) => [...shortest, ...simple]);
  const states = new Set(paths.map((path) => topState(path.state)));
  expect([...states].sort()).toEqual([...ServerState.options].sort());
  const taken = new Set(paths.flatMap((path) => path.steps.map((step) => step.event.type)));
  for (const event of modelEvents) expect(taken, event.type).toContain(event.type);
  // The connect cycle is walked twice: ready, restart, ready again.
  expect(
    paths.some((path) => path.steps.filter((step) => step.event.type === 'connect.succeeds').length === 2),
  ).toBe(true);
  // A lost connection reconnects by itself; past reconnect.max_attempts the circuit opens.
  expect(paths.some((path) => path.state.matches({ error: 'backing_off' }))).toBe(true);
  const open = paths.find((path) => /gave up after 1 reconnect attempt/.test(path.state.context.error ?? ''));
  expect(open?.state.value).toEqual({ error: 'halted' });
});

test('a queued server connects with the config the registry re-read', async () => {
  const world = createScriptedConnections();
  const input = inputOf({ enabled: true, queued: true, reconnects: 5 });
  const actor = createActor(serverMachine.provide({ actors: { connect: world.connect } }), { input });
  const host = observeLikeHost(actor);
  actor.start();
  const reread = ServerConfig.parse({ type: 'local', command: ['node', 'other.js'], timeout_seconds: 5 });
  actor.send({ type: 'server.connect', config: reread });
  await settle();
  expect(actor.getSnapshot().context.config).toEqual(reread);
  expect(world.all).toHaveLength(1);
  expect(host.projection.context.servers['files']!.config).toMatchObject({ command: ['node', 'other.js'], timeout_seconds: 5 });
  host.stop();
  actor.stop();
});

test('a queued server the registry disables keeps the config it re-read, and starts nothing', async () => {
  const world = createScriptedConnections();
  const input = inputOf({ enabled: true, queued: true, reconnects: 5 });
  const actor = createActor(serverMachine.provide({ actors: { connect: world.connect } }), { input });
  const host = observeLikeHost(actor);
  actor.start();
  const reread = ServerConfig.parse({ type: 'local', command: ['node', 'server.js'], enabled: false });
  actor.send({ type: 'server.disable', config: reread });
  await settle();
  expect(actor.getSnapshot().value).toBe('disabled');
  expect(actor.getSnapshot().context.config).toEqual(reread);
  expect(world.all).toEqual([]);
  expect(host.projection.context.servers['files']).toMatchObject({ state: 'disabled', config: { enabled: false } });
  host.stop();
  actor.stop();
});

test('the invariants fail a machine that leaks connections or misses a crash', async () => {
  const { input, shortest } = pathsByInput[1]!;
  const failure = async (machine: typeof serverMachine): Promise<string> => {
    try {
      for (const path of shortest) await runPath(path, input, machine);
    } catch (error) {
      return String(error);
    }
    return 'no failure';
  };
  const leaky = serverMachine.provide({ actions: { releaseConnection: () => {} } });
  expect(await failure(leaky)).toMatch(/connect\.succeeds → \S+ — after step/);
  const deaf = serverMachine.provide({ actors: { watchConnection: fromCallback(() => () => {}) } });
  expect(await failure(deaf)).toMatch(/connection\.closed — after step/);
}, PATHS_TIMEOUT_MS);
