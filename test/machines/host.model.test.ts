// Model-based test of the host machine (src/machines/host.machine.ts). Paths
// are walked over an independent model of the host's lifecycle
// (helpers/host-spec.ts) with `xstate/graph`; each path runs step by step on
// the real machine whose work (open, reconcile, stop the servers…) and
// watchers are controllable fakes given through `machine.provide`, with a
// fake registry publishing one fake server whose state the path moves. At
// every step the machine must show the model's state, run exactly the work
// and watchers the model says, and have told the server and the registry
// what the model says. Together the paths take every edge drawn in
// diagrams/host.mmd.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createActor, createMachine, fromCallback, fromPromise, fromTransition, type AnyActorRef } from 'xstate';
import { describe, expect, test } from 'vitest';
import { hostMachine, type HostEvent } from '../../src/machines/host.machine.js';
import type { registryMachine } from '../../src/machines/registry.machine.js';
import { getTransitionPaths } from './helpers/paths.js';
import {
  expectedValue,
  hostModelEvents,
  hostStep,
  inFlight,
  initialHostFacts,
  watchers,
  type FakeServerState,
  type HostFacts,
  type HostModelEvent,
} from './helpers/host-spec.js';

const diagram = readFileSync(fileURLToPath(new URL('../../diagrams/host.mmd', import.meta.url)), 'utf8');
/** Every edge drawn: `from --> to : label` (the initial and final markers are not edges). */
const drawnEdges = new Set(
  diagram
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.includes(' --> ') && !line.includes('[*]')),
);

/** A state of the model for the walk: what the host told and how often are left out (they only grow); each path replays them. */
const serialize = ({ serverInbox: _told, registryInbox: _shutdowns, approvalsClosed: _closed, reconcileFailures: _failures, ...state }: HostFacts) =>
  JSON.stringify(state);
const model = (facts: HostFacts) =>
  fromTransition((state: HostFacts, event: HostModelEvent) => hostStep(state, event).next, facts);

/** The host's work and watchers as fakes the path settles and speaks through. */
class World {
  readonly pending = new Map<string, { resolve(value: unknown): void; reject(error: Error): void }>();
  readonly active = new Set<string>();
  readonly senders = new Map<string, (event: HostEvent) => void>();
  readonly serverInbox: string[] = [];
  readonly registryInbox: string[] = [];
  approvalsClosed = 0;
  reconcileFailures = 0;
  /** The machine's own attempt watches alive (counted around its implementation). */
  attemptWatches = 0;

  /** The machine's own `watchAttempt`, counted while it runs. */
  countedWatch() {
    const real = (hostMachine.implementations.actors['watchAttempt'] as { config: (args: unknown) => (() => void) | void }).config;
    return fromCallback((args) => {
      this.attemptWatches += 1;
      const stop = real(args);
      return () => {
        this.attemptWatches -= 1;
        stop?.();
      };
    });
  }

  work(name: string, output: unknown = undefined) {
    return fromPromise(
      ({ signal }) =>
        new Promise((resolve, reject) => {
          const entry = { resolve: (value: unknown) => resolve(value ?? output), reject };
          this.pending.set(name, entry);
          signal.addEventListener('abort', () => {
            if (this.pending.get(name) === entry) this.pending.delete(name);
          });
        }),
    );
  }

  settle(name: string, outcome: 'resolve' | 'reject', value?: unknown): void {
    const entry = this.pending.get(name);
    if (!entry) throw new Error(`no ${name} in flight`);
    this.pending.delete(name);
    if (outcome === 'resolve') entry.resolve(value);
    else entry.reject(new Error(`${name} failed`));
  }

  watcher(name: string) {
    return fromCallback<HostEvent>(({ sendBack }) => {
      this.active.add(name);
      this.senders.set(name, sendBack);
      return () => {
        this.active.delete(name);
        this.senders.delete(name);
      };
    });
  }

  /** One server the registry publishes: the path moves it; it notes what the host tells it. */
  fakeRegistry() {
    const note = (event: string) => () => void this.serverInbox.push(event);
    const goto = Object.fromEntries(
      (['pending', 'refreshing', 'consenting', 'needs_reauth', 'ready', 'gone'] as FakeServerState[]).map((to) => [
        `fake.${to}`,
        { target: `#fake.${{ refreshing: 'authenticating.refreshing', consenting: 'authenticating.consenting' }[to as string] ?? to}` },
      ]),
    );
    const server = createMachine({
      id: 'fake',
      initial: 'pending',
      on: { ...goto, 'auth.completed': { actions: note('auth.completed') }, 'server.restart': { actions: note('server.restart') } },
      states: {
        pending: {},
        authenticating: { initial: 'refreshing', states: { refreshing: {}, consenting: {} } },
        needs_reauth: { tags: ['awaitsTokens'] },
        ready: {},
        gone: { type: 'final' },
      },
    });
    return createMachine({
      context: ({ spawn }) => ({ servers: { s: spawn(server, { id: 's' }) } }),
      on: { 'registry.shutdown': { actions: () => void this.registryInbox.push('registry.shutdown') } },
    }) as unknown as typeof registryMachine;
  }
}

function hostWith(world: World, facts: HostFacts) {
  const fakes = {
    open: world.work('open', [{ name: 's', config: {} }]),
    registry: world.fakeRegistry(),
    bridge: world.watcher('bridge'),
    catchUp: world.work('catchUp'),
    configWatcher: world.watcher('configWatcher'),
    tokenWatcher: world.watcher('tokenWatcher'),
    reconcile: world.work('reconcile'),
    awaitIdle: world.work('awaitIdle'),
    announce: world.watcher('announce'),
    stopServers: world.work('stopServers'),
    leaveFleet: world.work('leaveFleet'),
    closeStores: world.work('closeStores'),
    watchAttempt: world.countedWatch(),
  };
  const machine = hostMachine.provide({
    // The fakes take and give untyped values: the model checks what flows.
    actors: fakes as unknown as HostActors,
    actions: {
      closeApprovals: () => void (world.approvalsClosed += 1),
      reportReconcileFailure: () => void (world.reconcileFailures += 1),
    },
  });
  return createActor(machine, { input: { startupConcurrency: 1, watchConfig: facts.watchConfig, listed: facts.listed } });
}

type Host = ReturnType<typeof hostWith>;
type HostActors = NonNullable<Parameters<typeof hostMachine.provide>[0]['actors']>;

function serverRef(host: Host): AnyActorRef {
  return host.getSnapshot().context.registry!.getSnapshot().context.servers['s']!;
}

function apply(world: World, host: Host, event: HostModelEvent): void {
  const [kind, outcome] = event.type.split('.') as [string, string];
  switch (event.type) {
    case 'host.start':
    case 'host.shutdown':
      return host.send(event);
    case 'config.changed':
      return world.senders.get('configWatcher')!({ type: 'config.changed' });
    case 'tokens.stored':
      return world.senders.get('tokenWatcher')!({ type: 'tokens.stored', server: 's' });
    case 'server.goto':
      return serverRef(host).send({ type: `fake.${event.to}` });
    case 'reconcile.busy':
      return world.settle('reconcile', 'resolve', ['s']);
    case 'reconcile.clear':
      return world.settle('reconcile', 'resolve', []);
    case 'idle.reached':
      return world.settle('awaitIdle', 'resolve');
    case 'idle.fails':
      return world.settle('awaitIdle', 'reject');
    default:
      return world.settle(kind, outcome === 'fails' ? 'reject' : 'resolve');
  }
}

/** Settled work is told to the machine in microtasks; a macrotask later it has taken it. */
const taken = () => new Promise((resolve) => setImmediate(resolve));

function observe(world: World, host: Host) {
  const snapshot = host.getSnapshot();
  const value: unknown = snapshot.value;
  const registry = snapshot.context.registry;
  const server = registry?.getSnapshot().context.servers['s'];
  return {
    value,
    inFlight: [...world.pending.keys()].sort(),
    watchers: [...world.active].sort(),
    serverInbox: [...world.serverInbox],
    registryInbox: [...world.registryInbox],
    approvalsClosed: world.approvalsClosed,
    reconcileFailures: world.reconcileFailures,
    // The fleet is let go of (stopped) once its servers are; the host actor is done once stopped.
    registryStopped: registry ? registry.getSnapshot().status === 'stopped' : null,
    serverPublished: server !== undefined,
    done: snapshot.status === 'done',
    attemptWatches: world.attemptWatches,
    startFailed: snapshot.context.startError !== undefined,
    stopFailed: snapshot.context.stopError !== undefined,
  };
}

function promised(facts: HostFacts): ReturnType<typeof observe> {
  return {
    value: expectedValue(facts),
    inFlight: inFlight(facts).sort(),
    watchers: watchers(facts),
    serverInbox: facts.serverInbox,
    registryInbox: facts.registryInbox,
    approvalsClosed: facts.approvalsClosed,
    reconcileFailures: facts.reconcileFailures,
    registryStopped: facts.published ? ['leavingFleet', 'closing', 'stopped'].includes(facts.phase) : null,
    serverPublished: facts.published,
    done: facts.phase === 'stopped',
    // A watch lives until its attempt ends (or the host stops), whatever state the host is in.
    attemptWatches: facts.watched && facts.phase !== 'stopped' ? 1 : 0,
    startFailed: facts.startFailed,
    stopFailed: facts.stopFailed,
  };
}

async function runPath(start: HostFacts, events: HostModelEvent[], taken_: Set<string>): Promise<void> {
  const world = new World();
  const host = hostWith(world, start);
  host.start();
  let facts = start;
  expect(observe(world, host)).toEqual(promised(facts));
  for (const [index, event] of events.entries()) {
    const step = hostStep(facts, event);
    apply(world, host, event);
    await taken();
    facts = step.next;
    for (const edge of step.edges) taken_.add(edge);
    expect(observe(world, host), `step ${index + 1} (${JSON.stringify(event)}) of ${events.map((e) => ('to' in e ? `${e.type}(${e.to})` : e.type)).join(' → ')}`).toEqual(
      promised(facts),
    );
  }
  host.stop();
}

const scenarios = [
  { label: 'config watched, listed in a fleet', watchConfig: true, listed: true },
  { label: 'config not watched, no fleet', watchConfig: false, listed: false },
];

describe('the host machine against its model', () => {
  const walked = new Set<string>();

  for (const scenario of scenarios) {
    test(`every transition of the model, ${scenario.label}`, async () => {
      const start = initialHostFacts(scenario);
      const paths = getTransitionPaths(model(start), {
        events: (snapshot) => hostModelEvents(snapshot.context),
        serializeState: (snapshot) => serialize(snapshot.context),
      });
      expect(paths.length).toBeGreaterThan(50);
      for (const path of paths) {
        await runPath(
          start,
          // The walk's first step is the model's own start, no event of the world.
          path.steps.map((step) => step.event).filter((event) => (event.type as string) !== 'xstate.init'),
          walked,
        );
      }
    }, 120_000);
  }

  test('together the paths take every edge drawn in diagrams/host.mmd, and only drawn edges', () => {
    expect([...walked].filter((edge) => !drawnEdges.has(edge))).toEqual([]);
    expect([...drawnEdges].filter((edge) => !walked.has(edge))).toEqual([]);
  });
});
