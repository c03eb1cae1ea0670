// Model-based tests of the server lifecycle (SPEC §4). The real machine's
// graph is walked with `xstate/graph` (its invoked actors' outcomes and its
// delays as synthetic events); each path is run step by step on a real actor
// whose work is scripted (helpers/server-world.ts), observed the way the host
// observes it (the host's own journal bridge, a real tool mount, an in-memory
// journal), and checked at every step against an independent reference model
// written from SPEC §4 (helpers/server-spec.ts):
// - the SPEC state the actor reports (`topState`) is the model's, and so is
//   the state the journal's projection shows;
// - tools are mounted iff the server is `ready` (the filter of the config it
//   holds), and no `tools.register` is ever emitted outside `ready`;
// - each piece of work runs only in its state: a consent only while
//   consenting (stopped when it is left), the catalog session and the idle
//   watch only in ready, connect, token check and refresh only in theirs; an
//   `on_demand` server waiting to be asked for runs nothing and holds no
//   process; the only timers are the delays of the state the server is in
//   and, for a ready `on_demand` server with no call in flight, its idle timer;
// - every connection is closed exactly once after it leaves ready, never
//   while ready; `error_kind` is `needs_reauth` in needs_reauth; the config
//   the actor holds (and the view shows) is the one the last event brought.
import { getShortestPaths, getSimplePaths } from 'xstate/graph';
import { describe, expect, test } from 'vitest';
import { serverMachine, type ServerInput } from '../../src/machines/server.machine.js';
import { topState } from '../../src/machines/server.queries.js';
import { ServerState } from '../../src/journal/events.js';
import { chainTransitions, getTransitionPaths, stepsOf, untaken, withoutPrefixes } from './helpers/paths.js';
import { configSet, describeEvent, modelEvents, pathOf, serverGraph, traversal, wasRefused, type StartMode } from './helpers/server-graph.js';
import { serverMutants } from './helpers/server-mutants.js';
import { firstMismatch, NAME, phaseOf, runPath, runPaths, type ServerPath } from './helpers/server-run.js';
import { initialFacts, specState, type ModelEvent } from './helpers/server-spec.js';
import type { Mismatch } from './helpers/mismatches.js';

/**
 * A walk's timeout, from the paths it runs. With the two cores shared by far more work than they run
 * (load 14), 1558 runs of 16 166 steps took 32 s (each run starts an actor and a journal): a few times that.
 */
const timeoutFor = (paths: ReadonlyArray<{ steps: readonly unknown[] }>): number =>
  Math.max(60_000, paths.length * 50 + stepsOf(paths) * 10);
/** A broken machine fails within a few thousand paths (6 s, the slowest, on two very busy cores). */
const MUTANT_TIMEOUT_MS = 120_000;

/** Simple paths are walked per family of events (all of them at once would be millions of paths). */
const families = {
  recovery: {
    attempts: 2,
    events: [
      'server.connect',
      'server.restart',
      'server.stop',
      'connect.succeeds',
      'connect.fails',
      'connection.lost',
      'close.done',
      'close.fails',
      'backoff.elapses',
      'stable.elapses',
      'catalog.changed',
      'server.retool(retooled)',
      'server.retool(retooledDisabled)',
    ],
  },
  management: {
    attempts: 1,
    events: [
      'server.connect(edited)',
      'server.enable(base)',
      'server.disable(disabled)',
      'server.configure(edited)',
      'server.configure(disabled)',
      'server.restart',
      'server.stop',
      'check.connect',
      'connect.succeeds',
      'connect.fails',
      'close.done',
      // Management acting on an `on_demand` server waiting for, or asked for by, a call.
      'server.demand',
    ],
  },
  oauth: {
    attempts: 2,
    events: [
      'check.connect',
      'check.refresh',
      'refresh.succeeds',
      'refresh.fails_auth',
      'consent.completes',
      'consent.fails',
      'auth.begin',
      'connect.succeeds',
      'connect.fails_auth',
      'connection.auth_lost',
      'server.restart',
      'server.stop',
      'close.done',
      // An `on_demand` server asked for (through its token check), and idle again.
      'server.demand',
      'idle.elapses',
    ],
  },
  // The authorization server away: waits and retries (no consent), recovers, loses it again while ready.
  authServerAway: {
    attempts: 3,
    events: [
      'check.refresh',
      'refresh.succeeds',
      'refresh.fails_away',
      'connect.succeeds',
      'connect.fails_away',
      'connection.away_lost',
      'away_backoff.elapses',
      'server.restart',
      'close.done',
    ],
  },
  onDemand: {
    attempts: 2,
    events: [
      'server.connect',
      'server.demand',
      'connect.succeeds',
      'connect.fails',
      'call.started',
      'call.finished',
      'idle.elapses',
      'close.done',
      'connection.lost',
      'backoff.elapses',
      'server.restart',
      'server.configure(switched)',
    ],
  },
} as const;
type Family = keyof typeof families;

interface Scenario {
  label: string;
  kind: 'local' | 'oauth';
  start: StartMode;
  /** The host knows the server's catalog from an earlier run (an `on_demand` server without one connects to learn it). */
  knowsCatalog: boolean;
  enabled: boolean;
  queued: boolean;
  /** `reconnect.max_attempts`: 1 and 0 let the paths reach the open circuit. */
  maxAttempts: number;
  /** Every transition of the graph (the heaviest walk); the other scenarios reach the same ones. */
  transitions: boolean;
  families: Family[];
}

const scenarios: Scenario[] = [
  {
    label: 'local, queued at startup',
    start: 'eager',
    knowsCatalog: true,
    kind: 'local',
    enabled: true,
    queued: true,
    maxAttempts: 5,
    transitions: true,
    families: ['recovery', 'management'],
  },
  {
    label: 'local, added by management, gives up after 1 reconnect',
    start: 'eager',
    knowsCatalog: true,
    kind: 'local',
    enabled: true,
    queued: false,
    maxAttempts: 1,
    transitions: true,
    families: ['recovery', 'management'],
  },
  {
    label: 'local, disabled in the file',
    start: 'eager',
    knowsCatalog: true,
    kind: 'local',
    enabled: false,
    queued: true,
    maxAttempts: 5,
    transitions: false,
    families: ['management'],
  },
  {
    label: 'OAuth, added by management, gives up after 1 reconnect',
    start: 'eager',
    knowsCatalog: true,
    kind: 'oauth',
    enabled: true,
    queued: false,
    maxAttempts: 1,
    transitions: true,
    families: ['management', 'oauth', 'authServerAway'],
  },
  {
    label: 'OAuth, queued at startup, never reconnects',
    start: 'eager',
    knowsCatalog: true,
    kind: 'oauth',
    enabled: true,
    queued: true,
    maxAttempts: 0,
    transitions: true,
    families: ['management', 'oauth'],
  },
  {
    label: 'on demand, queued at startup, its catalog known, gives up after 1 reconnect',
    start: 'on_demand',
    knowsCatalog: true,
    kind: 'local',
    enabled: true,
    queued: true,
    maxAttempts: 1,
    transitions: true,
    families: ['onDemand', 'management'],
  },
  {
    label: 'on demand, added by management, its catalog not known yet',
    start: 'on_demand',
    knowsCatalog: false,
    kind: 'local',
    enabled: true,
    queued: false,
    maxAttempts: 5,
    transitions: true,
    families: ['onDemand', 'recovery'],
  },
  {
    label: 'OAuth on demand, added by management, its catalog known',
    start: 'on_demand',
    knowsCatalog: true,
    kind: 'oauth',
    enabled: true,
    queued: false,
    maxAttempts: 1,
    transitions: false,
    families: ['management', 'oauth'],
  },
];

/** Graph bounds: connect attempts per path, and catalog changes while ready (a self-loop otherwise). */
const bounds = (attempts: number, knowsCatalog = true) => serverGraph({ attempts, catalogChanges: 1 }, knowsCatalog);

function walk(scenario: Scenario) {
  const configs = configSet(scenario.kind, scenario.maxAttempts, scenario.start);
  const input: ServerInput = { name: NAME, config: scenario.enabled ? configs.base : configs.disabled, queued: scenario.queued };
  const bounds = (attempts: number) => serverGraph({ attempts, catalogChanges: 1 }, scenario.knowsCatalog);
  // Every state, telling configs apart (each config an event brings is a state of its own).
  const shortest = getShortestPaths(bounds(3), traversal(input, configs, { fine: true }));
  // Every transition, states told apart by `enabled` only.
  const transitions = scenario.transitions
    ? getTransitionPaths(bounds(2), traversal(input, configs), wasRefused, { pastSelfLoops: true })
    : [];
  const simple = scenario.families.map((family) => {
    const { attempts, events } = families[family];
    return { family, paths: getSimplePaths(bounds(attempts), traversal(input, configs, { only: new Set(events) })) };
  });
  // What runs: each path not a prefix of another (a run takes every step of its prefixes), and the transitions chained.
  const runsOf = (paths: ServerPath[]) => withoutPrefixes(paths, (event) => describeEvent(configs, event));
  const runs = {
    shortest: runsOf(shortest),
    transitions: chainTransitions(transitions, traversal(input, configs).serializeState, (event) => describeEvent(configs, event)),
    simple: simple.map(({ paths }) => runsOf(paths)),
  };
  return { scenario, configs, input, shortest, transitions, simple, runs };
}

const walks = scenarios.map(walk);

describe.each(walks)('server machine: $scenario.label', ({ scenario, configs, input, shortest, transitions, simple, runs }) => {
  const run = { input, configs, knowsCatalog: scenario.knowsCatalog };

  test('starts where SPEC §4 says', () => {
    const state = scenario.enabled ? 'pending' : 'disabled';
    expect(topState(shortest.find((path) => path.steps.length === 1)!.state)).toBe(state);
    expect(specState(initialFacts(input.config, input.queued, scenario.knowsCatalog))).toBe(state);
  });

  test(`every state (${shortest.length} shortest paths, all events, in ${runs.shortest.length} runs) holds the model at every step`, async () => {
    expect(shortest.length).toBeGreaterThan(60);
    (await runPaths(runs.shortest, run)).assertNone();
  }, timeoutFor(runs.shortest));

  if (scenario.transitions) {
    test(`every transition (${transitions.length} paths, chained into ${runs.transitions.length} runs of ${stepsOf(runs.transitions)} steps) holds the model at every step`, async () => {
      expect(transitions.length).toBeGreaterThan(1000);
      (await runPaths(runs.transitions, run)).assertNone();
    }, timeoutFor(runs.transitions));
  }

  for (const [index, { family, paths }] of simple.entries()) {
    const familyRuns = runs.simple[index]!;
    test(`every simple path of the ${family} events (${paths.length} paths, in ${familyRuns.length} runs of ${stepsOf(familyRuns)} steps) holds the model at every step`, async () => {
      expect(paths.length).toBeGreaterThan(50);
      (await runPaths(familyRuns, run)).assertNone();
    }, timeoutFor(familyRuns));
  }
});

test('the walks reach every SPEC §4 state and every substate, and take every event', () => {
  const paths = walks.flatMap(({ shortest, transitions, simple }) => [
    ...shortest,
    ...transitions,
    ...simple.flatMap(({ paths }) => paths),
  ]);
  // Every path walked is run end to end: it is one of the runs, or a prefix of one; every transition is taken by a run.
  for (const { configs, input, shortest, transitions, simple, runs } of walks) {
    const eventsOf = (path: ServerPath) => path.steps.slice(1).map((step) => describeEvent(configs, step.event));
    expect(untaken(transitions, runs.transitions, traversal(input, configs).serializeState, (event) => describeEvent(configs, event))).toEqual([]);
    const groups = [[shortest, runs.shortest], ...simple.map(({ paths }, index) => [paths, runs.simple[index]!])];
    for (const [walked, run] of groups as Array<[ServerPath[], ServerPath[]]>) {
      const prefixes = new Set(run.flatMap((path) => eventsOf(path).map((_, length, events) => events.slice(0, length + 1).join(' → '))));
      prefixes.add('');
      expect(walked.filter((path) => !prefixes.has(eventsOf(path).join(' → '))).length).toBe(0);
    }
  }
  const states = new Set(paths.map((path) => topState(path.state)));
  expect([...states].sort()).toEqual([...ServerState.options].sort());
  const phases = new Set(paths.map((path) => phaseOf(path.state)));
  expect(phases.size).toBe(15);
  // Every destination of closing, as the machine declares them (one substate each), is reached and left.
  const destinations = Object.keys(serverMachine.getStateNodeById('server.closing').states);
  const closingIn = (state: (typeof paths)[number]['state']) =>
    destinations.find((destination) => state.matches({ closing: destination } as never));
  const left = new Set(
    paths.flatMap((path) =>
      path.steps.slice(1).flatMap((step, index) => {
        const before = closingIn(path.steps[index]!.state);
        return before !== undefined && !step.state.matches('closing') ? [before] : [];
      }),
    ),
  );
  expect([...left].sort()).toEqual([...destinations].sort());
  const taken = new Set(paths.flatMap((path) => path.steps.slice(1).map((step) => step.event.type)));
  const initial = walks[0]!.shortest[0]!.steps[0]!.state;
  const all = new Set(modelEvents(walks[0]!.configs, initial).map((event) => event.type));
  expect([...taken].sort()).toEqual([...all].sort());
  // The connect cycle is walked twice: ready, lost, reconnected.
  expect(paths.some((path) => path.steps.filter((step) => step.event.type === 'connect.succeeds').length === 2)).toBe(true);
  // The authorization server away is waited for past reconnect.max_attempts (1 here), then ready with no consent.
  expect(
    paths.some(
      (path) =>
        path.steps.filter((step) => step.event.type === 'away_backoff.elapses').length >= 2 &&
        path.state.matches('ready') &&
        !path.steps.some((step) => step.state.matches('needs_reauth')),
    ),
  ).toBe(true);
  // Past reconnect.max_attempts the circuit opens.
  expect(paths.some((path) => /gave up after 1 reconnect/.test(path.state.context.error ?? ''))).toBe(true);
  expect(paths.some((path) => /gave up after 0 reconnect/.test(path.state.context.error ?? ''))).toBe(true);

  // `start: on_demand`: waiting with no process, asked for, connected, idle, closed, and waiting again.
  const stepsAfter = (path: (typeof paths)[number], event: string) =>
    path.steps.filter((step, index) => index > 0 && step.event.type === event);
  expect(
    paths.some((path) => {
      const idle = path.steps.findIndex((step) => step.event.type === 'idle.elapses' && step.state.matches('closing'));
      return idle > 0 && path.steps.slice(idle).some((step) => step.event.type === 'close.done' && phaseOf(step.state) === 'on_demand');
    }),
  ).toBe(true);
  // A demand while queued is remembered: its turn comes, and it connects rather than waits.
  expect(
    paths.some((path) => {
      const demanded = path.steps.findIndex((step) => step.event.type === 'server.demand' && phaseOf(step.state) === 'queued');
      return demanded > 0 && path.steps.slice(demanded).some((step) => step.event.type === 'server.connect' && phaseOf(step.state) === 'connecting');
    }),
  ).toBe(true);
  // A call in flight holds the server: time passes, and it stays ready; with none, it goes idle.
  expect(
    paths.some((path) => stepsAfter(path, 'idle.elapses').some((step) => step.state.matches('ready') && step.state.context.config.start === 'on_demand')),
  ).toBe(true);
  // Without a known catalog it connects at once, and once it learned it, it waits.
  const learning = walks.find(({ scenario }) => scenario.start === 'on_demand' && !scenario.knowsCatalog)!;
  expect(phaseOf(learning.shortest[0]!.steps[0]!.state)).toBe('connecting');
  expect(learning.shortest.some((path) => phaseOf(path.state) === 'on_demand')).toBe(true);
});

describe('discrepancies found by the walks, as the shortest paths that show them', () => {
  /** Replays one sequence of events on a real actor (local, added by management); the first step where it differs from the model. */
  function replay(
    maxAttempts: number,
    events: (configs: ReturnType<typeof configSet>) => ModelEvent[],
    { start = 'eager', knowsCatalog = true }: { start?: StartMode; knowsCatalog?: boolean } = {},
  ) {
    const configs = configSet('local', maxAttempts, start);
    const input: ServerInput = { name: NAME, config: configs.base, queued: false };
    return runPath(pathOf(bounds(10, knowsCatalog), input, events(configs)), { input, configs, knowsCatalog });
  }

  // The host sends `server.demand` for every call to a tool of an `on_demand` server that is not ready and
  // waits (up to timeout_seconds) for ready; a call that comes while the server closes after going idle
  // was once lost there (`closing` did not take the demand) and waited out timeout_seconds.
  test('a demand while an idle server closes its connection is remembered: it connects again rather than waits', async () => {
    const mismatch = await replay(
      5,
      () => [
        { type: 'server.demand' },
        { type: 'connect.succeeds' },
        { type: 'idle.elapses' },
        { type: 'server.demand' },
        { type: 'close.done' },
      ],
      { start: 'on_demand' },
    );
    expect(mismatch).toBeNull();
  });

  test('a restart while closing towards disabled leaves the server disabled (its config says enabled: false)', async () => {
    const mismatch = await replay(5, ({ disabled }) => [
      { type: 'connect.succeeds' },
      { type: 'server.disable', config: disabled },
      { type: 'server.restart' },
      { type: 'close.done' },
    ]);
    expect(mismatch).toBeNull();
  });

  test('a restart acts at once, also on a server a hand edit sent back to the startup queue while it closed', async () => {
    const mismatch = await replay(5, ({ edited }) => [
      { type: 'connect.succeeds' },
      { type: 'server.configure', config: edited, queued: true },
      { type: 'server.restart' },
      { type: 'close.done' },
    ]);
    expect(mismatch).toBeNull();
  });

  test('the startup queue does not hand a new config to a server that management disabled while it closed', async () => {
    const mismatch = await replay(5, ({ edited, disabled }) => [
      { type: 'connect.succeeds' },
      { type: 'server.configure', config: edited, queued: true },
      { type: 'server.disable', config: disabled },
      { type: 'server.connect', config: edited },
      { type: 'close.done' },
    ]);
    expect(mismatch).toBeNull();
  });

  test('losses before a disable do not count against the server once it is started again', async () => {
    // reconnect.max_attempts 1: one loss after the new start still reconnects.
    const mismatch = await replay(1, ({ disabled, edited }) => [
      { type: 'connect.succeeds' },
      { type: 'connection.lost' },
      { type: 'server.disable', config: disabled },
      { type: 'close.done' },
      { type: 'server.configure', config: edited },
      { type: 'connect.succeeds' },
      { type: 'connection.lost' },
      { type: 'close.done' },
    ]);
    expect(mismatch).toBeNull();
  });
});

describe('the model test fails on a broken machine', () => {
  // Local, added by management, reconnect.max_attempts 1: one loss reconnects, the second failure gives up.
  const configs = configSet('local', 1);
  const input: ServerInput = { name: NAME, config: configs.base, queued: false };
  /** Every transition of the machine's own graph (and on past its self-loops). */
  const pathsOf = (machine: typeof serverMachine) =>
    getTransitionPaths(serverGraph({ attempts: 2, catalogChanges: 1 }, true, machine), traversal(input, configs), wasRefused, {
      pastSelfLoops: true,
    });
  /** Those transitions chained, as the walks run them. */
  const runsOf = (machine: typeof serverMachine) =>
    chainTransitions(pathsOf(machine), traversal(input, configs).serializeState, (event) => describeEvent(configs, event));
  /** The first mismatch on those runs, the shortest first: it comes soon. */
  const found = new Map<typeof serverMachine, Promise<Mismatch | null>>();
  const caught = (machine: typeof serverMachine): Promise<Mismatch | null> => {
    if (!found.has(machine)) {
      found.set(machine, firstMismatch(runsOf(machine).sort((a, b) => a.steps.length - b.steps.length), { input, configs, machine }));
    }
    return found.get(machine)!;
  };

  test.each(serverMutants.map(({ name, machine }) => [name, machine] as const))('%s', async (_name, machine) => {
    const mismatch = await caught(machine);
    expect(mismatch, 'the model passed a broken machine').not.toBeNull();
  }, MUTANT_TIMEOUT_MS);

  test('the failures the machine counts are observed: a stable run that resets nothing differs at once', async () => {
    const [mutant] = serverMutants;
    const mismatch = await caught(mutant!.machine);
    expect(mismatch?.signature).toMatch(/^stable\.elapses: .*failures/);
  }, MUTANT_TIMEOUT_MS);

  test('a self-loop does not end a path: the walk goes on past it', () => {
    // Broken so, `stable` is a self-loop: the next loss is the second failure, and the server gives up.
    const paths = pathsOf(serverMutants[0]!.machine);
    const onPast = paths.filter((path) => {
      const at = path.steps.findIndex((step, index) => index > 0 && step.event.type === 'stable.elapses');
      return at > 0 && at < path.steps.length - 1;
    });
    expect(onPast.map((path) => path.steps.at(-1)!.event.type)).toContain('connection.lost');
    // And so do the runs that chain them: right after the loop, the loss.
    const runs = runsOf(serverMutants[0]!.machine);
    expect(
      runs.some((run) =>
        run.steps.some(
          (step, index) => index > 0 && step.event.type === 'stable.elapses' && run.steps[index + 1]?.event.type === 'connection.lost',
        ),
      ),
    ).toBe(true);
  });
});
