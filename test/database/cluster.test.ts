// The throwaway cluster the database tests run on (test/support/postgres.ts):
// stop/start keeps the data, destroy leaves no directory and no server behind.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { postgresAvailable, startPostgres, type PgCluster } from '../support/postgres.js';

const started: PgCluster[] = [];
afterAll(async () => {
  await Promise.all(started.map((cluster) => cluster.destroy()));
});

async function started_(options?: { database?: string }): Promise<PgCluster> {
  if (!postgresAvailable) console.error("initdb/pg_ctl not found: install Debian's postgresql package");
  const cluster = await startPostgres(options);
  started.push(cluster);
  return cluster;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Whether `pid` still runs. A stopped postmaster was detached, so its parent
 * is init, which may take a while to reap it: a zombie counts as gone.
 */
function runs(pid: number): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** The postmaster's pid: the first line of postmaster.pid while the cluster runs. */
const postmasterPid = (cluster: PgCluster) => Number(readFileSync(join(cluster.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);

describe('the test cluster', () => {
  test('serves the default database on 127.0.0.1, or the one asked for', async () => {
    const cluster = await started_();
    expect(cluster.url).toBe(`postgres://postgres@127.0.0.1:${cluster.port}/mcp_fleet_test`);
    expect(await query(cluster.url, 'select current_database() as name')).toEqual([{ name: 'mcp_fleet_test' }]);
    const named = await started_({ database: 'fleet_two' });
    expect(named.port).not.toBe(cluster.port);
    expect(await query(named.url, 'select current_database() as name')).toEqual([{ name: 'fleet_two' }]);
  });

  test('stop() then start() keeps the data, on the same port', async () => {
    const cluster = await started_();
    await query(cluster.url, "create table kept (x text); insert into kept values ('still here')");
    const pid = postmasterPid(cluster);
    expect(runs(pid)).toBe(true);
    await cluster.stop();
    expect(existsSync(join(cluster.dataDir, 'postmaster.pid'))).toBe(false);
    expect(runs(pid)).toBe(false);
    await expect(query(cluster.url, 'select 1')).rejects.toThrow(/ECONNREFUSED/);
    await cluster.start();
    expect(await query(cluster.url, 'select x from kept')).toEqual([{ x: 'still here' }]);
  });

  test('destroy() stops the server and removes the dir; a second destroy() does nothing', async () => {
    const cluster = await started_();
    const pid = postmasterPid(cluster);
    expect(runs(pid)).toBe(true);
    await cluster.destroy();
    expect(existsSync(cluster.dir)).toBe(false);
    expect(runs(pid)).toBe(false);
    await expect(query(cluster.url, 'select 1')).rejects.toThrow(/ECONNREFUSED/);
    await cluster.destroy();
  });

  test('destroy() of a stopped cluster removes the dir', async () => {
    const cluster = await started_();
    await cluster.stop();
    await cluster.destroy();
    expect(existsSync(cluster.dir)).toBe(false);
  });
});
