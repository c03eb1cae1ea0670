// Model-based tests of the registry and its startup queue (SPEC §4). The
// paths are walked with `xstate/graph` over a reference model of the fleet
// written from SPEC §4 (helpers/registry-spec.ts; each server in it is the
// server reference model): the registry's behaviour lives in its context and
// in its children, which a pure transition of its machine cannot move, so
// the graph is the model's and every step runs on the real registry, with
// real server actors whose connects are scripted, a scripted re-read of the
// file, and the host's own journal bridge (helpers/registry-run.ts).
//
// At every step the real fleet must be what the model says: the registry's
// state, the actor published under each name, each actor's SPEC state and
// config, the queue, the re-read in flight, the servers holding a startup
// slot, every event the registry sent a server, the projected views and the
// mounted tools. And SPEC §4's startup rules must hold on the real
// observation alone: at most `startupConcurrency` dequeued servers on their
// way at once; the queue takes its servers in file order, the ones added (or
// sent back) by hand during startup after those queued before them; an actor
// no longer published (deleted, replaced) got exactly one stop from the
// registry and nothing after; once startup is over nobody waits in the
// queue; a stopped registry has drained its queue and every actor is gone.
// An `on_demand` server the queue reached waits to be asked for without
// holding a slot (`isSettling` says it is not on its way), unless it was
// asked for while it waited for its turn.
import { createActor, waitFor } from 'xstate';
import { describe, expect, test } from 'vitest';
import { registryMachine } from '../../src/machines/registry.machine.js';
import { serverMachine } from '../../src/machines/server.machine.js';
import { ServerConfig } from '../../src/config/schema.js';
import { chainStates, chainTransitions, getShortestPathsAndMap, getTransitionPaths, stepsOf, untaken, type Adjacency } from './helpers/paths.js';
import { describeWorldEvent, pathOf, runWorldPath, runWorldPaths, type WorldPath } from './helpers/registry-run.js';
import {
  serializeWorld,
  worldEvents,
  worldLogic,
  type NameConfigs,
  type World,
  type WorldChoice,
  type WorldEvent,
  type WorldInput,
} from './helpers/registry-spec.js';
import { createServerWorld } from './helpers/server-world.js';

/**
 * A walk's time grows with its steps: measured at 1.5–6 ms a step with the two
 * cores busy with other tests (the longest, 29,970 steps, 173 s); a timeout of
 * about three times that.
 */
const timeoutFor = (paths: Parameters<typeof stepsOf>[0]): number => stepsOf(paths) * 18;

const make = (name: string, extra: Record<string, unknown> = {}) =>
  ServerConfig.parse({ type: 'local', command: ['node', `${name}.js`], ping_interval_seconds: 0, timeout_seconds: 30, ...extra });

/** a, b, c enabled and d disabled in the file (in the order a, b, d, c); e may be added by hand; o starts on demand. */
const configs: Record<string, NameConfigs> = Object.fromEntries(
  ['a', 'b', 'c', 'd', 'e', 'o'].map((name) => {
    const start = name === 'o' ? { start: 'on_demand' } : {};
    return [
      name,
      {
        base: make(name, name === 'd' ? { enabled: false } : start),
        edited: make(name, { timeout_seconds: 7, ...start }),
        disabled: make(name, { enabled: false, ...start }),
      },
    ];
  }),
);
const fileOrder = ['a', 'b', 'd', 'c'];

/**
 * What may happen besides the servers' own outcomes: b and c edited in the
 * file while queued; b restarted, disabled, deleted and added again by
 * management; a edited by hand once it left the queue; e added by hand; a's
 * connect may fail (or need a human).
 */
const choice = (interferences: number): WorldChoice => ({
  fileEdits: ['b', 'c'],
  managed: ['b'],
  handEdits: ['a'],
  handAdds: ['e'],
  failing: ['a'],
  interferences,
});

/**
 * An `on_demand` server first in the file (o, a, b): taken from the queue, it
 * waits to be asked for and leaves the slot to the next; asked for while
 * queued, it connects in its turn. Management and file edits act on o, a
 * hand edit on a; o's connect may fail.
 */
const onDemandChoice = (interferences: number): WorldChoice => ({
  fileEdits: ['o'],
  managed: ['o'],
  handEdits: ['a'],
  handAdds: [],
  failing: ['o'],
  demands: ['o'],
  interferences,
});

const inputOf = (concurrency: number, order = fileOrder): WorldInput => ({
  servers: order.map((name) => ({ name, config: configs[name]!.base })),
  concurrency,
  configs,
});

const traversal = (choose: (interferences: number) => WorldChoice, interferences: number) => ({
  events: (world: World) => worldEvents(world, choose(interferences), configs),
  serializeState: (world: World) => serializeWorld(world, configs),
});

interface Scenario {
  label: string;
  input: WorldInput;
  /** Fewer paths than these would mean the walks lost their reach. */
  least: { transitions: number; shortest: number };
  /** Every transition, with at most one management action, hand or file edit per path. */
  transitions: WorldPath[];
  /** Every state, with at most two of them per path (none at concurrency 2: the transitions already run 30,000 steps). */
  shortest: WorldPath[];
  /** The graph the shortest paths were found on. */
  adjacency: Adjacency<World, WorldEvent>;
}

/** What runs: the transitions chained into fewer paths that each take several, the states reached by fewer runs. */
const serializeState = (world: World) => serializeWorld(world, configs);
const chained = (paths: WorldPath[]): WorldPath[] => chainTransitions(paths, serializeState, describeWorldEvent);

/** The shortest path to every state with two interferences, and the graph they were found on. */
const statesOf = (input: WorldInput, choose: (interferences: number) => WorldChoice) => {
  const { paths, adjacency } = getShortestPathsAndMap(worldLogic(input), traversal(choose, 2));
  return { shortest: paths as WorldPath[], adjacency };
};

const scenarios: Scenario[] = [
  ...[1, 2].map((concurrency) => {
    const input = inputOf(concurrency);
    return {
      label: `startupConcurrency ${concurrency}`,
      input,
      least: { transitions: 2000, shortest: 3000 },
      transitions: getTransitionPaths(worldLogic(input), traversal(choice, 1)),
      ...(concurrency === 1 ? statesOf(input, choice) : { shortest: [], adjacency: {} }),
    };
  }),
  (() => {
    const input = inputOf(1, ['o', 'a', 'b']);
    return {
      label: 'an on_demand server first in the file, startupConcurrency 1',
      input,
      least: { transitions: 1500, shortest: 1200 },
      transitions: getTransitionPaths(worldLogic(input), traversal(onDemandChoice, 1)),
      ...statesOf(input, onDemandChoice),
    };
  })(),
];

/** Each scenario with what it runs. */
const walks = scenarios.map((scenario) => ({
  ...scenario,
  runs: { transitions: chained(scenario.transitions), shortest: chainStates(scenario.shortest, scenario.adjacency, serializeState) },
}));

describe.each(walks)('registry, $label', ({ input, least, transitions, shortest, runs }) => {
  test(`every transition of the fleet (${transitions.length} paths, chained into ${runs.transitions.length} runs of ${stepsOf(runs.transitions)} steps) holds the model and the startup rules`, async () => {
    expect(transitions.length).toBeGreaterThan(least.transitions);
    (await runWorldPaths(runs.transitions, { input })).assertNone();
  }, timeoutFor(runs.transitions));

  if (shortest.length > 0) {
    test(`every state of the fleet with two interferences (${shortest.length} paths, chained into ${runs.shortest.length} runs of ${stepsOf(runs.shortest)} steps) holds the model and the startup rules`, async () => {
      expect(shortest.length).toBeGreaterThan(least.shortest);
      (await runWorldPaths(runs.shortest, { input })).assertNone();
    }, timeoutFor(runs.shortest));
  }
});

test('the walks reach what SPEC §4 asks of the queue', () => {
  const paths = scenarios.flatMap(({ transitions, shortest }) => [...transitions, ...shortest]);
  // Every transition is taken by a run, and every state the shortest paths end in is reached by one.
  for (const { transitions, shortest, runs } of walks) {
    expect(untaken(transitions, runs.transitions, serializeState, describeWorldEvent)).toEqual([]);
    const reached = new Set(runs.shortest.flatMap((run) => run.steps.map((step) => serializeState(step.state))));
    expect(shortest.filter((path) => !reached.has(serializeState(path.state))).length).toBe(0);
  }
  const taken = new Set(paths.flatMap((path) => path.steps.slice(1).map((step) => describeWorldEvent(step.event))));
  for (const event of ['reread.done', 'reread.unreadable', 'reread.fails', 'bound.elapses(a)', 'file.delete(b)', 'file.disable(c)', 'file.edit(c)', 'hand.edit(a)', 'hand.add(e)', 'mgmt.restart(b)', 'mgmt.disable(b)', 'mgmt.delete(b)', 'mgmt.add(b)', 'connect.fails_auth(a)', 'shutdown', 'demand(o)', 'connect.fails(o)', 'mgmt.add(o)', 'file.edit(o)']) {
    expect(taken, event).toContain(event);
  }
  const ends = paths.map((path) => path.state);
  // Two servers of the queue connecting at once (concurrency 2), and a full house of slots at 1.
  expect(ends.some((world) => world.concurrency === 2 && world.slots.length === 2)).toBe(true);
  // A replaced actor (b deleted and added again) while b's old entry is still queued.
  expect(ends.some((world) => world.actors['b#1'] !== undefined && world.queue.includes('b'))).toBe(true);
  // A hand-added server waiting behind those queued before it.
  expect(ends.some((world) => world.queue.length >= 2 && world.queue.at(-1) === 'e#1')).toBe(true);
  // An `on_demand` server taken from the queue waits to be asked for and does not hold the queue: the next one connects.
  expect(ends.some((world) => world.actors['o']?.facts.phase === 'on_demand' && world.slots.includes('a'))).toBe(true);
  // Asked for while it waited for its turn, it connects in its turn and holds the slot like any other.
  expect(ends.some((world) => world.slots.includes('o') && world.actors['o']!.facts.demanded && world.queue[0] === 'a')).toBe(true);
  // Shutdown while a re-read and a connect are in flight.
  expect(
    paths.some((path) => {
      const before = path.steps.at(-2)?.state;
      return path.steps.at(-1)!.event.type === 'shutdown' && before?.rereading !== null && (before?.slots.length ?? 0) > 0;
    }),
  ).toBe(true);
});

describe('discrepancies found by the walks, as the shortest paths that show them', () => {
  /** Replays one sequence of events on the real registry; the first step where it differs from the model. */
  async function replay(concurrency: number, events: WorldEvent[]) {
    const input = inputOf(concurrency);
    return runWorldPath(pathOf(input, events), { input });
  }

  test('a hand edit during startup that sends a connecting server back to the queue, with a slot free, is dequeued in its turn', async () => {
    // a and b take both slots, b's and c's bounds elapse, then a hand edit of a sends it back to the (empty) queue:
    // the registry reads a's `queued` before a has taken the edit, drops it, and ends startup with a waiting forever.
    const mismatch = await replay(2, [
      { type: 'reread.done' },
      { type: 'reread.done' },
      { type: 'bound.elapses', name: 'b' },
      { type: 'reread.done' },
      { type: 'bound.elapses', name: 'c' },
      { type: 'hand.edit', name: 'a' },
    ]);
    expect(mismatch).toBeNull();
  });

  test('a re-read that fails leaves alone a head that management deleted (or restarted) meanwhile', async () => {
    // a fails; b's re-read is in flight when management deletes b; the re-read fails: the registry
    // connects the stopped actor anyway, its watcher throws on the stopped actor, and the slot is never freed.
    const mismatch = await replay(1, [
      { type: 'reread.done' },
      { type: 'connect.fails', name: 'a' },
      { type: 'mgmt.delete', name: 'b' },
      { type: 'reread.fails' },
    ]);
    expect(mismatch).toBeNull();
  });
});

test("the real watcher bounds a server's turn by its timeout_seconds, even when its connect never answers", async () => {
  const servers = createServerWorld({ closesAtOnce: true });
  const quick = make('x', { timeout_seconds: 0.05 });
  const machine = registryMachine.provide({
    actors: {
      // No host: the re-read finds the file unreadable, and the queued config is used.
      server: serverMachine.provide({ actors: servers.actors }),
    },
  });
  const registry = createActor(machine, {
    input: { servers: [{ name: 'x', config: quick }, { name: 'y', config: make('y') }] },
  }).start();
  // The re-read and x's connect start on microtasks.
  for (let turn = 0; turn < 10 && servers.connects.running('x').length === 0; turn += 1) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  expect(servers.connects.all.map((call) => call.owner)).toEqual(['x']);
  // x still connects; once its 50 ms are up, y takes the slot.
  await waitFor(registry, (snapshot) => snapshot.context.connecting.some((ref) => ref.id === 'y'), { timeout: 5_000 });
  expect(servers.connects.running().map((call) => call.owner).sort()).toEqual(['x', 'y']);
  registry.send({ type: 'registry.shutdown' });
  registry.stop();
});
