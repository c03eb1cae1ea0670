// Property test (SPEC §4: "replaying the journal rebuilds them exactly"): after
// a random sequence of management operations on a real host with real fixture
// processes, a fresh projection of `host.events()` equals the live status, and
// the status is what the servers really are — the model's expected state, the
// tools in the registry, the processes that are running — and the journal's
// store holds exactly the in-memory events, and folds into the same status.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import type { McpHost } from '../../src/host.js';
import { ConflictError, NotFoundError, StartFailedError } from '../../src/errors.js';
import { createFileEventStore } from '../../src/journal/file-event-store.js';
import { createProjection, emptyProjection, project, serverViews } from '../../src/journal/projection.js';
import { createFleet, isAlive, type Fleet } from '../machines/helpers/fleet.js';
import { until } from '../support/wait.js';

/** A small name pool, so operations keep hitting the same servers. */
const NAMES = ['p', 'q', 'r'] as const;
type Name = (typeof NAMES)[number];

interface Entry {
  fixture: 'healthy' | 'crash-on-start';
  enabled: boolean;
  timeout_seconds: number;
}
type Model = { servers: Map<string, Entry> };
type Real = { host: McpHost; fleet: Fleet };

function expectedState(entry: Entry): 'disabled' | 'ready' | 'error' {
  if (!entry.enabled) return 'disabled';
  return entry.fixture === 'healthy' ? 'ready' : 'error';
}

function configOf(fleet: Fleet, name: string, entry: Entry) {
  return fleet.local(name, entry.fixture, { enabled: entry.enabled, timeout_seconds: entry.timeout_seconds });
}

async function rejectsWith(promise: Promise<unknown>, type: new (...args: never[]) => Error): Promise<void> {
  await expect(promise).rejects.toBeInstanceOf(type);
}

/** Replay, model, registry and processes all agree. */
async function checkInvariants(model: Model, { host, fleet }: Real): Promise<void> {
  const live = projectedStatus(host);
  const replayed = createProjection(host.events());
  expect(serverViews(replayed.context), 'replay = live projection').toEqual(live);

  const expected = Object.fromEntries([...model.servers].map(([name, entry]) => [name, expectedState(entry)]));
  expect(Object.fromEntries(live.map((view) => [view.name, view.state])), 'status = model').toEqual(expected);
  for (const view of live) {
    const entry = model.servers.get(view.name)!;
    expect(view.config, `${view.name}: the viewed config is the running one`).toMatchObject({
      enabled: entry.enabled,
      timeout_seconds: entry.timeout_seconds,
    });
    expect(view.ready).toBe(view.state === 'ready');
    expect(view.tool_count > 0).toBe(view.state === 'ready');
  }

  const ready = live.filter((view) => view.state === 'ready').map((view) => view.name).sort();
  expect([...new Set(host.tools().map((tool) => tool.server))].sort(), 'tools registered iff ready').toEqual(ready);

  // Closing a released connection is not awaited by management calls: allow it a moment.
  const running = () =>
    Object.fromEntries(NAMES.map((name) => [name, fleet.spawnsOf(name).filter((spawn) => isAlive(spawn.pid)).length]));
  const wanted = Object.fromEntries(NAMES.map((name) => [name, ready.includes(name) ? 1 : 0]));
  await until(
    () => Object.entries(wanted).every(([name, count]) => running()[name] === count),
    `one process per ready server: want ${JSON.stringify(wanted)}`,
    3_000,
  ).catch((error: Error) => {
    throw new Error(`${error.message}, running ${JSON.stringify(running())}`);
  });
}

type Command = fc.AsyncCommand<Model, Real, false>;

const command = (label: string, act: (model: Model, real: Real) => Promise<void>): Command => ({
  check: () => true,
  async run(model, real) {
    await act(model, real);
    await checkInvariants(model, real);
  },
  toString: () => label,
});

const entryArb = fc.record({
  fixture: fc.constantFrom<Entry['fixture']>('healthy', 'healthy', 'crash-on-start'),
  enabled: fc.boolean(),
  timeout_seconds: fc.constantFrom(20, 30),
});
const nameArb = fc.constantFrom<Name>(...NAMES);

const add = fc.tuple(nameArb, entryArb).map(([name, entry]) =>
    command(`add ${name} ${JSON.stringify(entry)}`, async (model, { host, fleet }) => {
      const adding = host.addServer(name, configOf(fleet, name, entry));
      if (model.servers.has(name)) return rejectsWith(adding, ConflictError);
      if (expectedState(entry) === 'error') {
        await rejectsWith(adding, StartFailedError);
        expect(host.server(name), 'a failed add leaves nothing behind').toBeUndefined();
        return;
      }
      expect((await adding).state).toBe(expectedState(entry));
      model.servers.set(name, entry);
    }),
);

const commands = [
  // Adds twice as likely: most other operations need a server to act on.
  add,
  add,
  nameArb.map((name) =>
    command(`remove ${name}`, async (model, { host }) => {
      if (!model.servers.has(name)) return rejectsWith(host.removeServer(name), NotFoundError);
      await host.removeServer(name);
      model.servers.delete(name);
      expect(host.server(name)).toBeUndefined();
    }),
  ),
  nameArb.map((name) =>
    command(`restart ${name}`, async (model, { host }) => {
      const entry = model.servers.get(name);
      if (!entry) return rejectsWith(host.restartServer(name), NotFoundError);
      expect((await host.restartServer(name)).state).toBe(expectedState(entry));
    }),
  ),
  fc
    .tuple(nameArb, fc.oneof(fc.record({ enabled: fc.boolean() }), fc.record({ timeout_seconds: fc.constantFrom(20, 30, 40) })))
    .map(([name, patch]) =>
      command(`update ${name} ${JSON.stringify(patch)}`, async (model, { host }) => {
        const entry = model.servers.get(name);
        if (!entry) return rejectsWith(host.updateServer(name, patch), NotFoundError);
        const next = { ...entry, ...patch };
        if (expectedState(next) === 'error') {
          // Not persisted; the server is brought back on its old config.
          await rejectsWith(host.updateServer(name, patch), StartFailedError);
          return;
        }
        expect((await host.updateServer(name, patch)).state).toBe(expectedState(next));
        model.servers.set(name, next);
      }),
    ),
  nameArb.map((name) =>
    command(`call ${name}__echo`, async (model, { host }) => {
      const entry = model.servers.get(name);
      const result = await host.callTool(`${name}__echo`, { text: `hi ${name}` });
      const ready = entry !== undefined && expectedState(entry) === 'ready';
      expect(result.details.is_error, JSON.stringify(result)).toBe(!ready);
      if (ready) expect(result.content).toEqual([{ type: 'text', text: `hi ${name}` }]);
    }),
  ),
];

const initialArb = fc.uniqueArray(fc.tuple(nameArb, entryArb), { minLength: 1, maxLength: 2, selector: ([name]) => name });

test('replaying the journal rebuilds the live status, which is what the servers really are', async () => {
  await fc.assert(
    fc.asyncProperty(initialArb, fc.commands(commands, { maxCommands: 8, size: 'max' }), async (initial, sequence) => {
      const fleet = createFleet();
      fleet.writeServers(Object.fromEntries(initial.map(([name, entry]) => [name, configOf(fleet, name, entry)])));
      const host = fleet.host();
      try {
        await host.start();
        await until(() => host.status().every((view) => view.state !== 'pending'), 'startup is over');
        const model: Model = { servers: new Map(initial) };
        await checkInvariants(model, { host, fleet });
        await fc.asyncModelRun(() => ({ model, real: { host, fleet } }), sequence);
      } finally {
        await host.shutdown();
      }
      expect(fleet.spawns().filter((spawn) => isAlive(spawn.pid)), 'no child outlives shutdown').toEqual([]);
      // After shutdown too, the journal rebuilds the status exactly.
      expect(serverViews(createProjection(host.events()).context)).toEqual(projectedStatus(host));
      // And so does what it stored, as the next worker will load it.
      const store = createFileEventStore({ stateDir: fleet.dir });
      const { snapshot, events } = await store.load();
      expect(await store.read(0), 'the store = the in-memory journal').toEqual(host.events());
      expect(serverViews(events.reduce(project, snapshot?.state ?? emptyProjection())), 'stored = live').toEqual(projectedStatus(host));
      await store.close();
    }),
    // Every operation spawns real processes: few, short runs; no shrinking marathon on failure.
    { numRuns: 8, endOnFailure: true },
  );
}, 90_000);

/** The host's views as the journal knows them: the version comes from the config store, not from an event. */
function projectedStatus(host: McpHost) {
  return host.status().map((view) => ({ ...view, version: null }));
}
