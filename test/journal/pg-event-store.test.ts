// The event store the fleet shares, on a real PostgreSQL (test/support/postgres.ts):
// two workers on separate pools of one database get one gapless history,
// each store tells every event of both once and in order, `load` gives a
// worker only its own events, a journal folds only its own servers, and a
// lost connection comes back and catches up without a loss or a repeat.
import type { Tool } from '@modelcontextprotocol/client';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { DatabaseUnavailableError, openDatabase, type Database } from '../../src/fleet/database.js';
import { migrate } from '../../src/fleet/migrations.js';
import type { JournalEvent, JournalEventInput } from '../../src/journal/events.js';
import { createJournal, type Journal } from '../../src/journal/journal.js';
import { createPgEventStore, type PgEventStore, type PgEventStoreOptions } from '../../src/journal/pg-event-store.js';
import { serverViews } from '../../src/journal/projection.js';
import { createToolMount } from '../../src/host/tool-mount.js';
import type { ServerActorRef } from '../../src/machines/registry.machine.js';
import type { LiveConnection } from '../../src/connection/live-connection.js';
import { postgresAvailable, startPostgres, type PgCluster } from '../support/postgres.js';
import { maskedConfig } from './masked-config.js';

let cluster: PgCluster;
const clusters: PgCluster[] = [];
const opened: Database[] = [];
const stores: PgEventStore[] = [];
let databases = 0;

beforeAll(async () => {
  if (!postgresAvailable) console.error("initdb/pg_ctl not found: install Debian's postgresql package");
  cluster = await startPostgres();
  clusters.push(cluster);
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
  await Promise.all(opened.splice(0).map((database) => database.close()));
});
afterAll(async () => {
  await Promise.all(clusters.map((started) => started.destroy()));
});

/** A fresh, migrated database in `on`, with one pool per worker (as separate processes would have). */
async function freshDatabase(on: PgCluster = cluster, workers = ['w1', 'w2']): Promise<Database[]> {
  const name = `events_${++databases}`;
  const admin = new pg.Client({ connectionString: on.url });
  await admin.connect();
  await admin.query(`create database ${name}`).finally(() => admin.end());
  const url = on.url.replace(/\/[^/]*$/, `/${name}`);
  const pools = workers.map((worker) => openDatabase(url, { applicationName: worker }));
  opened.push(...pools);
  await migrate(pair(pools)[0].pool);
  return pools;
}

function pair<T>(items: T[]): [T, T] {
  const [first, second] = items;
  if (first === undefined || second === undefined) throw new Error('expected two items');
  return [first, second];
}

/** A loaded store with a subscriber that records what it is told. */
async function loaded(options: PgEventStoreOptions): Promise<{ store: PgEventStore; told: JournalEvent[] }> {
  const store = createPgEventStore(options);
  stores.push(store);
  await store.load();
  const told: JournalEvent[] = [];
  store.subscribe((event) => told.push(event));
  return { store, told };
}

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const log = (server: string, message: string): JournalEventInput => ({
  type: 'server.log',
  server,
  level: 'info',
  logger: null,
  message,
});
const configured = (server: string): JournalEventInput => ({ type: 'server.configured', server, actor: server, config: maskedConfig() });
const moved = (server: string, from: 'pending' | null, to: 'pending' | 'ready'): JournalEventInput => ({
  type: 'server.transitioned',
  server,
  actor: server,
  from,
  to,
  error: null,
  error_kind: null,
});

/** A read's events, failing the test on `gone`. */
function listed(result: JournalEvent[] | { gone: number }): JournalEvent[] {
  if (!Array.isArray(result)) throw new Error(`expected events, got gone: ${result.gone}`);
  return result;
}
const seqs = (events: readonly JournalEvent[] | { gone: number }) => ('gone' in events ? events : events.map((event) => event.seq));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index);

describe('the PostgreSQL event store', () => {
  test('appends of two workers get consecutive global seqs; each store tells every event of both, in order, once', async () => {
    const [db1, db2] = pair(await freshDatabase());
    const w1 = await loaded({ db: db1, workerId: 'w1' });
    const w2 = await loaded({ db: db2, workerId: 'w2' });
    expect([w1.store.workerId, w1.store.lastSeq]).toEqual(['w1', 0]);

    const first = await w1.store.append([log('a', 'one'), log('a', 'two')]);
    // Told before append resolves: the journal's `flushed` covers the projection.
    expect(seqs(w1.told)).toEqual([1, 2]);
    const second = await w2.store.append([log('b', 'three')]);
    const third = await w1.store.append([log('a', 'four')]);
    expect(first.map((event) => [event.seq, event.worker])).toEqual([
      [1, 'w1'],
      [2, 'w1'],
    ]);
    expect(second).toEqual([expect.objectContaining({ seq: 3, worker: 'w2', type: 'server.log', message: 'three' })]);
    expect(third).toEqual([expect.objectContaining({ seq: 4, worker: 'w1', message: 'four' })]);

    await until(() => w1.told.length === 4 && w2.told.length === 4, 'both stores were told all four');
    for (const { told, store } of [w1, w2]) {
      expect(told.map((event) => [event.seq, event.worker, event.type === 'server.log' && event.message])).toEqual([
        [1, 'w1', 'one'],
        [2, 'w1', 'two'],
        [3, 'w2', 'three'],
        [4, 'w1', 'four'],
      ]);
      expect(store.lastSeq).toBe(4);
    }
    // Stored with the stamp inside the event too, as the columns say.
    const { rows } = await db1.pool.query<{ seq: string; worker: string; event: JournalEvent }>(
      'select seq, worker, event from events order by seq',
    );
    expect(rows.map((row) => [Number(row.seq), row.worker, row.event.seq, row.event.worker])).toEqual([
      [1, 'w1', 1, 'w1'],
      [2, 'w1', 2, 'w1'],
      [3, 'w2', 3, 'w2'],
      [4, 'w1', 4, 'w1'],
    ]);
    // The stamp comes first, as in the other stores, even when read back from jsonb.
    expect(Object.keys(w2.told[0] as JournalEvent).slice(0, 3)).toEqual(['seq', 'at', 'worker']);
  });

  test('50 appends of each worker at once: seqs 1..100 without a gap, each told once to each store, in order', async () => {
    const [db1, db2] = pair(await freshDatabase());
    const w1 = await loaded({ db: db1, workerId: 'w1' });
    const w2 = await loaded({ db: db2, workerId: 'w2' });
    const appends: Array<Promise<JournalEvent[]>> = [];
    for (let index = 0; index < 50; index += 1) {
      appends.push(w1.store.append([log('a', `w1 ${index}`)]));
      appends.push(w2.store.append([log('b', `w2 ${index}`)]));
    }
    const stored = (await Promise.all(appends)).flat();
    expect(stored.map((event) => event.seq).sort((a, b) => a - b)).toEqual(range(1, 100));

    await until(() => w1.told.length >= 100 && w2.told.length >= 100, 'both stores were told 100 events');
    // Sentinels, one from each, told after anything told twice would have been.
    await w2.store.append([log('b', 'last from w2')]);
    await w1.store.append([log('a', 'last from w1')]);
    await until(() => [w1, w2].every(({ told }) => told.some((event) => event.seq === 102)), 'both stores were told the sentinels');
    for (const { told } of [w1, w2]) {
      expect(seqs(told)).toEqual(range(1, 102));
      expect(told.filter((event) => event.worker === 'w1')).toHaveLength(51);
    }
    // Each worker's own appends keep their call order.
    const own = (worker: string) =>
      w1.told.filter((event) => event.worker === worker).map((event) => (event.type === 'server.log' ? event.message : ''));
    expect(own('w1')).toEqual([...range(0, 49).map((index) => `w1 ${index}`), 'last from w1']);
    expect(own('w2')).toEqual([...range(0, 49).map((index) => `w2 ${index}`), 'last from w2']);
  });

  test('load() gives a worker only its own events and continues after the fleet; one append is all or none', async () => {
    const [db1, db2] = pair(await freshDatabase());
    const w1 = await loaded({ db: db1, workerId: 'w1' });
    const w2 = await loaded({ db: db2, workerId: 'w2' });
    await w1.store.append([configured('a')]);
    await w2.store.append([configured('b'), log('b', 'hello')]);
    await w1.store.append([log('a', 'again')]);
    // An event jsonb cannot hold fails the whole append: nothing of it is stored, no seq is used.
    const broken = { ...log('a', 'ok'), config: 1n } as unknown as JournalEventInput;
    await expect(w1.store.append([log('a', 'first half'), broken])).rejects.toThrow();
    await w1.store.close();

    const again = createPgEventStore({ db: db1, workerId: 'w1' });
    stores.push(again);
    const { snapshot, events } = await again.load();
    expect(snapshot).toBeNull();
    expect(events.map((event) => [event.seq, event.worker, event.type])).toEqual([
      [1, 'w1', 'server.configured'],
      [4, 'w1', 'server.log'],
    ]);
    expect(again.lastSeq).toBe(4);
    const told: JournalEvent[] = [];
    again.subscribe((event) => told.push(event));
    // Only what comes after the load is told.
    await w2.store.append([log('b', 'later')]);
    await until(() => told.length === 1, 'the reloaded store was told the newer event');
    expect(told.map((event) => [event.seq, event.worker])).toEqual([[5, 'w2']]);
  });

  test('read(since, limit) pages through the fleet; events deleted by hand are gone', async () => {
    const [db1, db2] = pair(await freshDatabase());
    const w1 = await loaded({ db: db1, workerId: 'w1' });
    const w2 = await loaded({ db: db2, workerId: 'w2' });
    await w1.store.append([log('a', '1'), log('a', '2')]);
    await w2.store.append([log('b', '3'), log('b', '4')]);
    await w1.store.append([log('a', '5')]);

    expect(seqs(await w1.store.read(0))).toEqual([1, 2, 3, 4, 5]);
    expect(seqs(await w1.store.read(1, 2))).toEqual([2, 3]);
    expect(seqs(await w2.store.read(3))).toEqual([4, 5]);
    expect(seqs(await w2.store.read(5))).toEqual([]);
    expect(seqs(await w2.store.read(9))).toEqual([]);
    expect(seqs(await w2.store.read(0, 0))).toEqual([]);
    expect(listed(await w2.store.read(2, 1))).toEqual([expect.objectContaining({ seq: 3, worker: 'w2', message: '3' })]);

    await db1.pool.query('delete from events where seq <= 2');
    expect(await w1.store.read(0)).toEqual({ gone: 3 });
    expect(await w1.store.read(1)).toEqual({ gone: 3 });
    expect(seqs(await w1.store.read(2))).toEqual([3, 4, 5]);
  });

  test('a snapshot is saved per worker; load gives it and the own events after it; wantsSnapshot counts own events', async () => {
    const [db1, db2] = pair(await freshDatabase());
    const w1 = await loaded({ db: db1, workerId: 'w1', snapshotEvery: 3 });
    const w2 = await loaded({ db: db2, workerId: 'w2' });
    await w1.store.append([configured('a'), log('a', 'x')]);
    await w2.store.append([configured('b'), configured('c'), configured('d')]);
    await until(() => w1.store.lastSeq === 5, 'w1 was told w2s events');
    // Other workers' events do not count.
    expect(w1.store.wantsSnapshot).toBe(false);
    await w1.store.append([log('a', 'y')]);
    expect(w1.store.wantsSnapshot).toBe(true);

    const state = { servers: {}, lastSeq: 6 };
    await expect(w1.store.saveSnapshot({ seq: 7, at: new Date().toISOString(), state })).rejects.toThrow(RangeError);
    await w1.store.saveSnapshot({ seq: 6, at: '2026-01-02T03:04:05.678Z', state });
    expect(w1.store.wantsSnapshot).toBe(false);
    // An older snapshot never replaces a newer one.
    await w1.store.saveSnapshot({ seq: 2, at: '2026-01-01T00:00:00.000Z', state: { servers: {}, lastSeq: 2 } });
    await w2.store.append([log('b', 'z')]);
    await w1.store.append([log('a', 'after'), log('a', 'after 2')]);
    await w1.store.close();

    const again = createPgEventStore({ db: db1, workerId: 'w1' });
    stores.push(again);
    const { snapshot, events } = await again.load();
    expect(snapshot).toEqual({ seq: 6, at: '2026-01-02T03:04:05.678Z', state });
    expect(events.map((event) => [event.seq, event.worker])).toEqual([
      [8, 'w1'],
      [9, 'w1'],
    ]);
    // w2 has none: its load is every event of its own.
    const other = createPgEventStore({ db: db2, workerId: 'w2' });
    stores.push(other);
    expect((await other.load()).snapshot).toBeNull();
  });

  test('a journal over it folds only its own servers; its subscribers get the fleet', async () => {
    const [db1, db2] = pair(await freshDatabase());
    const journals: Journal[] = [];
    const told: Record<string, JournalEvent[]> = { w1: [], w2: [] };
    for (const [db, worker] of [
      [db1, 'w1'],
      [db2, 'w2'],
    ] as const) {
      const journal = createJournal({ store: createPgEventStore({ db, workerId: worker }), ownWorker: worker });
      await journal.open();
      await journal.flushed();
      journal.subscribe((event) => told[worker]?.push(event));
      journals.push(journal);
    }
    const [j1, j2] = pair(journals);
    j1.append(configured('a'));
    j1.append(moved('a', null, 'pending'));
    j1.append(moved('a', 'pending', 'ready'));
    await j1.flushed();
    j2.append(configured('b'));
    j2.append(moved('b', null, 'pending'));
    await j2.flushed();
    await until(() => j1.lastSeq === 7 && j2.lastSeq === 7, 'both journals were told every event');

    const views = (journal: Journal) => serverViews(journal.projection.context).map((view) => [view.name, view.state, view.last_run]);
    // w2's worker.started (seq 2) did not turn w1's `a` into a last run, and w2's `b` is not w1's.
    expect(views(j1)).toEqual([['a', 'ready', null]]);
    expect(views(j2)).toEqual([['b', 'pending', null]]);
    // The window holds the fleet's events from each journal's open on (w2 opened after w1's seq 1); read reaches the store.
    expect(seqs(j1.since())).toEqual(range(1, 7));
    expect(seqs(j2.since())).toEqual(range(2, 7));
    for (const journal of [j1, j2]) expect(seqs(await journal.read(0))).toEqual(range(1, 7));
    expect(seqs(told.w1 ?? [])).toEqual(range(2, 7));
    expect(seqs(told.w2 ?? [])).toEqual(range(3, 7));
    await j1.close();

    // w1 again: its own history only, and the window starts at this run (w2's events fell between w1's).
    const again = createJournal({ store: createPgEventStore({ db: db1, workerId: 'w1' }), ownWorker: 'w1' });
    await again.open();
    await again.flushed();
    expect(serverViews(again.projection.context).map((view) => [view.name, view.last_run?.state])).toEqual([['a', 'ready']]);
    expect(seqs(again.since())).toEqual([8]);
    expect(seqs(await again.read(5))).toEqual([6, 7, 8]);
    await again.close();
    await j2.close();
  });

  test('a tool mount on it: what a registration hides is journaled while the projection has not folded in the one before; its tools follow', async () => {
    const [db] = await freshDatabase();
    const journal = createJournal({ store: createPgEventStore({ db: db!, workerId: 'w1' }), ownWorker: 'w1' });
    await journal.open();
    await journal.flushed();
    const mount = createToolMount({ append: (event) => journal.append(event), projected: () => journal.projection.context });
    const ref = (name: string) =>
      ({
        getSnapshot: () => ({ context: { name, config: { type: 'local', env: {}, max_result_bytes: 1000, call_timeout_seconds: 1 } } }),
      }) as unknown as ServerActorRef;
    const live = (tool: string) =>
      ({
        connection: { allTools: [{ name: tool, inputSchema: { type: 'object' } } as Tool], client: { getServerCapabilities: () => ({}) } },
      }) as unknown as LiveConnection;
    const filter = { include: null, exclude: [], always_load: [] };
    journal.append(configured('a'));
    journal.append(configured('a__b'));
    await journal.flushed();

    // `a`'s tool `b__t` and `a__b`'s tool `t` are both `a__b__t`: the later registration wins it.
    mount.register(ref('a'), live('b__t'), filter);
    // The store tells the event once stored: the projection does not hold `a`'s registration yet.
    expect(journal.behind).toBe(true);
    expect(journal.projection.context.servers['a']?.registered_at).toBe(0);
    mount.register(ref('a__b'), live('t'), filter);
    await journal.flushed();

    const events = journal.since(0);
    expect(events.filter((event) => event.type === 'tool.shadowed').map((event) => ({ ...event, seq: 0, at: '' }))).toEqual([
      { seq: 0, at: '', worker: 'w1', type: 'tool.shadowed', server: 'a__b', tool: 'a__b__t', shadowed_server: 'a' },
    ]);
    expect(serverViews(journal.projection.context).map((view) => [view.name, view.shadowed_tools])).toEqual([
      ['a', ['a__b__t']],
      ['a__b', []],
    ]);
    expect(mount.list().map((tool) => tool.name)).toEqual(['a__b__t']);
    expect(mount.get('a__b__t')).toBe(mount.forServer('a__b')[0]);
    await journal.close();
  });

  test('a NUL in an event is stored as U+FFFD (jsonb refuses it), and told as stored', async () => {
    const [db1] = pair(await freshDatabase());
    const w1 = await loaded({ db: db1, workerId: 'w1' });
    const [event] = await w1.store.append([log('a', 'before\u0000after \\u0000 kept')]);
    expect(event).toEqual(expect.objectContaining({ message: 'before\uFFFDafter \\u0000 kept' }));
    expect(w1.told).toEqual([event]);
    expect(listed(await w1.store.read(0))).toEqual([event]);
  });

  test('close() waits for appends under way, refuses later ones and lets the listening connection go', async () => {
    const [db1] = pair(await freshDatabase());
    const store = createPgEventStore({ db: db1, workerId: 'w1' });
    await store.load();
    const listening = async () =>
      (
        await db1.pool.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and query ilike 'listen %'",
        )
      ).rows[0]?.n;
    expect(await listening()).toBe(1);
    const appended = store.append([log('a', 'last')]);
    const closed = store.close();
    await expect(store.append([log('a', 'too late')])).rejects.toThrow(/closed/);
    await expect(appended).resolves.toEqual([expect.objectContaining({ seq: 1 })]);
    await closed;
    await store.close();
    await until(async () => (await listening()) === 0, 'the listening connection was ended');
    // The database is the caller's: still open.
    expect((await db1.pool.query('select count(*)::int as n from events')).rows).toEqual([{ n: 1 }]);
  });

  test('a listening connection cut off comes back and catches up on what was appended meanwhile', async () => {
    const [db1, db2] = pair(await freshDatabase());
    const errors: Error[] = [];
    const w1 = await loaded({ db: db1, workerId: 'w1', onError: (error) => errors.push(error) });
    const w2 = await loaded({ db: db2, workerId: 'w2' });
    await w2.store.append([log('b', 'before')]);
    await until(() => w1.told.length === 1, 'w1 was told the first event');

    await db2.pool.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'listen %' and application_name = 'w1'",
    );
    await until(() => errors.length === 1, 'the loss was told');
    await w2.store.append([log('b', 'while away 1')]);
    await w2.store.append([log('b', 'while away 2')]);
    await until(() => w1.told.length === 3, 'w1 caught up');
    await w2.store.append([log('b', 'after')]);
    await until(() => w1.told.length === 4, 'w1 listens again');
    // A sentinel, told after anything told twice would have been.
    await w2.store.append([log('b', 'sentinel')]);
    await until(() => w1.told.some((event) => event.seq === 5), 'w1 was told the sentinel');
    expect(seqs(w1.told)).toEqual([1, 2, 3, 4, 5]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(DatabaseUnavailableError);
  });
});

describe('the PostgreSQL event store when the database goes away', () => {
  test('appends reject at once with DatabaseUnavailableError; once it is back, the store catches up on the other worker', async () => {
    const own = await startPostgres();
    clusters.push(own);
    const [db1, db2] = pair(await freshDatabase(own));
    const errors: Error[] = [];
    const w1 = await loaded({ db: db1, workerId: 'w1', onError: (error) => errors.push(error) });
    const w2 = await loaded({ db: db2, workerId: 'w2' });
    await w1.store.append([log('a', 'one')]);
    await w2.store.append([log('b', 'two')]);
    await until(() => w1.told.length === 2 && w2.told.length === 2, 'both were told both');

    await own.stop();
    const refusal = await w1.store.append([log('a', 'lost')]).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(DatabaseUnavailableError);
    expect((refusal as Error).message).toMatch(new RegExp(`^the database at 127\\.0\\.0\\.1:${own.port} is unavailable`));
    await until(() => errors.length >= 1, 'the lost listening connection was told');

    await own.start();
    // w2 appends before w1 is listening again (its first retries were refused): w1 learns of it by catching up.
    await until(
      () =>
        w2.store.append([log('b', 'meanwhile')]).then(
          () => true,
          () => false,
        ),
      'w2 could append again',
    );
    await until(() => w1.told.length === 3, 'w1 caught up on w2s event');
    await w1.store.append([log('a', 'back')]);
    await until(() => w2.told.length === 4, 'w2 was told w1s event');
    // Sentinels, one from each, told after anything told twice would have been.
    await w2.store.append([log('b', 'last from w2')]);
    await w1.store.append([log('a', 'last from w1')]);
    await until(() => [w1, w2].every(({ told }) => told.some((event) => event.seq === 6)), 'both were told the sentinels');
    expect(seqs(w1.told)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(seqs(w2.told)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(w1.told.map((event) => event.worker)).toEqual(['w1', 'w2', 'w2', 'w1', 'w2', 'w1']);
    // One message for the outage, naming the address and no secret.
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(DatabaseUnavailableError);
  });
});

describe('the PostgreSQL event store when the database lost events it had committed', () => {
  // What a crash with synchronous_commit = off, or a failover to a standby that lagged, leaves: rows told, then gone.
  async function forget(db: Database, after: number): Promise<void> {
    await db.pool.query('delete from events where seq > $1', [after]);
  }

  test('the seqs given again are told, own and others, with one message naming the lost range', async () => {
    const [db1, db2] = pair(await freshDatabase());
    const errors: Error[] = [];
    const w1 = await loaded({ db: db1, workerId: 'w1', onError: (error) => errors.push(error) });
    const w2 = await loaded({ db: db2, workerId: 'w2' });
    await w1.store.append([log('a', 'one'), log('a', 'two'), log('a', 'three')]);
    await until(() => w1.told.length === 3 && w2.told.length === 3, 'both were told the first three');
    await forget(db1, 1);

    // Its own append gets seq 2 again: told, not taken for the lost one.
    await w1.store.append([log('a', 'again')]);
    expect(w1.told.at(-1)).toMatchObject({ seq: 2, message: 'again' });
    expect(errors.map((error) => error.message)).toEqual([
      'the event store of worker w1: the database has lost events it had committed (seq 2 to 3); the events stored from now on are told with the seqs given again',
    ]);
    // The other worker's catch-up (as after a reconnect) finds the history shorter than what it told.
    await w2.store.append([log('b', 'from w2')]);
    await until(() => w1.told.at(-1)?.seq === 3, 'w1 was told w2s event at seq 3 again');
    expect(w1.told.at(-1)).toMatchObject({ seq: 3, worker: 'w2', message: 'from w2' });
    expect(w2.told.at(-1)).toMatchObject({ seq: 3, worker: 'w2', message: 'from w2' });
  });
});
