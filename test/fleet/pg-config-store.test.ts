// The config in PostgreSQL, as several workers share it: versions that move
// with each write, tombstones for deletes, one transaction per write (none
// lost when writers race), a notification to every worker, and no secret in
// plain text in the table.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPgConfigStore } from '../../src/config/pg-config-store.js';
import { sealServerConfig } from '../../src/config/secrets/seal-config.js';
import { parseServerConfig } from '../../src/config/validate.js';
import type { ConfigStore } from '../../src/config/store.js';
import { openDatabase, type Database } from '../../src/fleet/database.js';
import { migrate } from '../../src/fleet/migrations.js';
import { newKey } from '../secrets/keys.js';
import { newDatabase, startPostgres, type PgCluster } from '../support/postgres.js';

let cluster: PgCluster;
const cleanups: Array<() => Promise<void> | void> = [];
beforeAll(async () => {
  cluster = await startPostgres();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await cluster?.destroy();
});

const key = newKey();
const silent = { warn: () => {} };

/** `count` workers' stores on one fresh database, each on its own pool. */
async function stores(count: number): Promise<{ url: string; dbs: Database[]; stores: ConfigStore[] }> {
  const url = await newDatabase(cluster);
  const dbs = Array.from({ length: count }, () => openDatabase(url));
  cleanups.push(() => Promise.all(dbs.map((db) => db.close())).then(() => {}));
  await migrate(dbs[0]!.pool);
  return { url, dbs, stores: dbs.map((db, index) => createPgConfigStore({ db, key, workerId: `w${index + 1}`, logger: silent })) };
}

const local = (text: string) => ({ type: 'local' as const, command: ['node', '-e', text], env: { API_KEY: `canary-env-${text}` } });

describe('PostgreSQL config store', () => {
  it('stores in order, versions move with each change, a delete leaves a tombstone, no secret in clear', async () => {
    const { dbs, stores: [a, b] } = await stores(2);
    expect((await a!.load()).servers).toEqual([]);
    await a!.save([
      ['one', local('1')],
      ['two', local('2')],
    ]);
    const first = await b!.load();
    expect(first.servers.map(([name]) => name)).toEqual(['one', 'two']);
    expect(first.servers[0]![1]).toMatchObject({ type: 'local', env: { API_KEY: 'canary-env-1' } });
    const v1 = first.versions['one']!;
    expect(first.versions['two']).toBe(v1);

    await b!.update((servers) => ({ ...servers, two: local('2b') }));
    const second = await a!.load();
    expect(second.versions['one']).toBe(v1);
    expect(second.versions['two']).toBeGreaterThan(v1);
    expect(a!.stored('two')).toEqual({ version: second.versions['two'], config: second.servers.find(([name]) => name === 'two')![1] });

    await a!.update((servers) => {
      delete servers['one'];
      return servers;
    });
    expect((await b!.load()).servers.map(([name]) => name)).toEqual(['two']);
    const rows = await dbs[0]!.pool.query<{ name: string; config: unknown; updated_by: string }>('select name, config, updated_by from servers order by name');
    expect(rows.rows.map((row) => [row.name, row.config === null, row.updated_by])).toEqual([
      ['one', true, 'w1'],
      ['two', false, 'w2'],
    ]);
    const dump = JSON.stringify(rows.rows);
    expect(dump).not.toContain('canary-env');
  });

  it('keeps the credential of a remote url out of the table, and reads the url back exactly', async () => {
    const { dbs, stores: [a, b] } = await stores(2);
    const url = 'http://127.0.0.1:18302/mcp?api_key=canary-url-query-123&format=json';
    await a!.save([['bear', { type: 'remote', url, headers: { 'X-Secret': 'canary-header-9' }, auth: { kind: 'bearer', token: 'canary-bearer-55' } }]]);
    expect((await b!.load()).servers[0]![1]).toMatchObject({ url });
    const rows = await dbs[0]!.pool.query<{ text: string }>('select config::text as text from servers');
    expect(rows.rows[0]!.text).not.toContain('canary');
  });

  it('stores what was set, not the defaults, a nested object\'s included; a row that spells them out stays as it is', async () => {
    const { dbs, stores: [a] } = await stores(1);
    await a!.save([['spelled', local('1')], ['short', local('2')]]);
    // A row as a write before short forms left it: every default spelled out.
    const spelled = sealServerConfig(key, 'spelled', parseServerConfig('spelled', local('1')));
    expect(spelled).toMatchObject({ tools: { include: null, exclude: [], always_load: [] }, reconnect: { max_attempts: 5 } });
    await dbs[0]!.pool.query("update servers set config = $1 where name = 'spelled'", [spelled]);
    await a!.update((servers) => ({ ...servers, short: { ...servers['short']!, tools: { ...servers['short']!.tools, approval: {} } } }));
    const rows = await dbs[0]!.pool.query<{ name: string; config: Record<string, unknown> }>('select name, config from servers order by name');
    const config = (name: string) => rows.rows.find((row) => row.name === name)!.config;
    // jsonb keeps its own key order.
    expect(Object.keys(config('short')).sort()).toEqual(['command', 'env', 'tools', 'type']);
    expect(config('short')['tools']).toEqual({ approval: {} });
    expect(config('spelled')).toEqual(JSON.parse(JSON.stringify(spelled)));
    const loaded = await a!.load();
    expect(loaded.servers.find(([name]) => name === 'short')![1].tools).toEqual({ include: null, exclude: [], always_load: [], approval: {} });
  });

  it('racing updates from three workers: each lands, none lost, in one order', async () => {
    const { stores: all } = await stores(3);
    await all[0]!.save([['counter', { type: 'local', command: ['node'], env: {} }]]);
    await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        all[index % 3]!.update((servers) => {
          const config = servers['counter']!;
          if (config.type !== 'local') throw new Error('expected local');
          return { ...servers, counter: { ...config, env: { ...config.env, [`K${index}`]: String(index) } } };
        }),
      ),
    );
    const [, config] = (await all[1]!.load()).servers[0]!;
    expect(config.type === 'local' && Object.keys(config.env).length).toBe(30);
  });

  it('every worker is told of a write, and of nothing when a write changes nothing', async () => {
    const { stores: [a, b] } = await stores(2);
    let told = 0;
    const stop = b!.watch(() => (told += 1));
    cleanups.push(stop);
    // LISTEN is in place once a first notification gets through.
    await expect
      .poll(async () => {
        await a!.update((servers) => ({ ...servers, probe: local(String(Date.now())) }));
        return told;
      })
      .toBeGreaterThan(0);
    await new Promise((settle) => setTimeout(settle, 300));
    const before = told;
    await a!.update((servers) => servers);
    await a!.update((servers) => ({ ...servers, other: local('x') }));
    await expect.poll(() => told).toBe(before + 1);
  });

  it('a worker whose notification connection was cut catches up by reading once it is back, missed notification or not', async () => {
    const { url, stores: [a, b] } = await stores(2);
    let told = 0;
    cleanups.push(b!.watch(() => (told += 1)));
    await expect
      .poll(async () => {
        await a!.update((servers) => ({ ...servers, probe: local(String(Date.now())) }));
        return told;
      })
      .toBeGreaterThan(0);
    const admin = openDatabase(url);
    cleanups.push(() => admin.close());
    // The probes' notifications still on the way land first.
    await new Promise((settle) => setTimeout(settle, 300));
    const before = told;
    const listeners = `from pg_stat_activity where application_name = 'mcp-fleet listen mcp_fleet_config'`;
    await admin.pool.query(`select pg_terminate_backend(pid) ${listeners}`);
    // Gone (termination is asynchronous), and not back yet: the listener retries after 250 ms.
    await expect.poll(async () => (await admin.pool.query(`select count(*)::int as n ${listeners}`)).rows[0].n, { interval: 5 }).toBe(0);
    // Written while nobody listens: its notification is lost; the reconnect reports itself instead.
    await a!.update((servers) => ({ ...servers, during: local('d') }));
    await expect.poll(() => told, { timeout: 5_000 }).toBeGreaterThan(before);
  });

  it('a row that does not open or validate is skipped with a warning, not treated as deleted', async () => {
    const { dbs, stores: [a] } = await stores(1);
    await a!.save([['good', local('g')]]);
    await dbs[0]!.pool.query(
      "insert into servers (name, position, config, version, updated_by) values ('bad', 9, '{\"type\":\"local\",\"command\":[]}', 1, 'hand')",
    );
    const warnings: string[] = [];
    const loud = createPgConfigStore({ db: dbs[0]!, key, workerId: 'w9', logger: { warn: (m) => warnings.push(m) } });
    const loaded = await loud.load();
    expect(loaded.servers.map(([name]) => name)).toEqual(['good']);
    expect(loaded.invalid.map((entry) => entry.name)).toEqual(['bad']);
    expect(warnings.join('\n')).toContain('server "bad" skipped');
    await loud.update((servers) => ({ ...servers, more: local('m') }));
    expect((await dbs[0]!.pool.query("select config is not null as kept from servers where name = 'bad'")).rows[0].kept).toBe(true);
    // Discarded (a removal of that server), it goes; the others stay.
    await loud.update((servers, info) => {
      info.discard('bad');
      return servers;
    });
    expect((await dbs[0]!.pool.query("select config is not null as kept from servers where name = 'bad'")).rows[0].kept).toBe(false);
    expect((await loud.load()).servers.map(([name]) => name)).toEqual(['good', 'more']);
  });

  it('a stopped database: reads and writes fail with database_unavailable, naming no password', async () => {
    const url = await newDatabase(cluster);
    const withPassword = url.replace('postgres@', 'postgres:hunter2-secret@');
    const db = openDatabase(withPassword);
    cleanups.push(() => db.close());
    await migrate(db.pool);
    const store = createPgConfigStore({ db, key, workerId: 'w1', logger: silent });
    await cluster.stop();
    try {
      const failure = await store.load().catch((error: Error) => error);
      expect(failure).toMatchObject({ code: 'database_unavailable' });
      expect(String((failure as Error).message)).not.toContain('hunter2');
      await expect(store.update((servers) => servers)).rejects.toMatchObject({ code: 'database_unavailable' });
    } finally {
      await cluster.start();
    }
  });
});

