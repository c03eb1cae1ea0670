// Faults of the shared database, with real workers and a real PostgreSQL:
// away at start, stopped while serving, a lost notification connection, a
// worker killed mid-write, a worker without the secret key.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { until } from '../support/wait.js';
import { fleetTestBed, untilStateOn, type FleetWorkerProcess } from './workers.js';
import { BIN } from '../support/cli.js';
import { readPid } from '../support/processes.js';
import { cleanEnv } from '../support/env.js';

const run = promisify(execFile);

const bed = fleetTestBed();
const { secretKey } = bed;
const healthy = () => ({ type: 'local', command: fixtureCommand('healthy.mjs'), env: {} });

function worker(id: string, databaseUrl: string, until?: RegExp): Promise<FleetWorkerProcess> {
  return bed.worker(id, databaseUrl, until ? { until } : {});
}

const untilReadyOn = (on: FleetWorkerProcess, name: string) => untilStateOn(on, name, 'ready');

describe('faults of the shared database', { timeout: 120_000 }, () => {
  it('unreachable at start: /healthz 200, /readyz 503, one log line per attempt; ready once it is reached', async () => {
    const url = await bed.database();
    await bed.cluster().stop();
    let a: FleetWorkerProcess;
    try {
      a = await worker('w1', url, /attempt 2 failed/);
      expect((await a.request('/healthz')).status).toBe(200);
      const notReady = await a.request('/readyz');
      expect(notReady.status).toBe(503);
      expect(notReady.json.reason).toContain('waiting for the database');
      // The API says so too, rather than answer with an empty fleet.
      const list = await a.request('/api/mcp/servers');
      expect(list.status).toBe(503);
      expect(list.json.error).toEqual({ code: 'not_ready', message: notReady.json.reason });
      expect(a.output().match(/attempt \d+ failed/g)?.length).toBeGreaterThanOrEqual(2);
    } finally {
      await bed.cluster().start();
    }
    await expect.poll(async () => (await a.request('/readyz')).status, { timeout: 20_000, interval: 100 }).toBe(200);
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'late', ...healthy() } })).status).toBe(201);
  });

  it('stopped while serving: calls go on, writes answer 503 database_unavailable and change nothing; back, every worker catches up', async () => {
    const url = await bed.database();
    const a = await worker('w1', url);
    const b = await worker('w2', url);
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'echo', ...healthy() } })).status).toBe(201);
    await untilReadyOn(b, 'echo');
    const before = (await b.request('/api/mcp/servers/echo')).json.version;

    await bed.cluster().stop();
    try {
      const call = await b.request('/api/mcp/tools/echo__echo/call', { method: 'POST', json: { arguments: { text: 'still here' } } });
      expect(call.status, call.text).toBe(200);
      expect(JSON.stringify(call.json)).toContain('still here');
      const write = await a.request('/api/mcp/servers/echo', { method: 'PATCH', json: { timeout_seconds: 44 } });
      expect(write.status, write.text).toBe(503);
      expect(write.json.error.code).toBe('database_unavailable');
      expect(write.text).not.toMatch(/password/i);
      // Rolled back on the worker that took it: it runs what is stored.
      expect((await a.request('/api/mcp/servers/echo')).json.config.timeout_seconds).not.toBe(44);
      // The fleet view reads the database: it says it is away, as the writes do.
      const fleet = await a.request('/api/mcp/fleet');
      expect(fleet.status, fleet.text).toBe(503);
      expect(fleet.json.error.code).toBe('database_unavailable');
    } finally {
      await bed.cluster().start();
    }
    // Back: a change made on one worker reaches the other, whose listener reconnected.
    await expect
      .poll(async () => (await a.request('/api/mcp/servers/echo', { method: 'PATCH', json: { timeout_seconds: 45 } })).status, {
        timeout: 20_000,
        interval: 250,
      })
      .toBe(200);
    await expect
      .poll(async () => (await b.request('/api/mcp/servers/echo')).json.config.timeout_seconds, { timeout: 10_000, interval: 50 })
      .toBe(45);
    expect((await b.request('/api/mcp/servers/echo')).json.version).toBeGreaterThan(before);
  });

  it('a server that crashes while the database is away: its transitions are stored once it is back, not lost', async () => {
    const url = await bed.database();
    const a = await worker('w1', url);
    const pidFile = join(mkdtempSync(join(tmpdir(), 'mcp-fleet-crash-')), 'echo.pid');
    const config = { ...healthy(), env: { FIXTURE_PID_FILE: pidFile }, reconnect: { initial_delay_seconds: 0.2, max_delay_seconds: 0.5 } };
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'echo', ...config } })).status).toBe(201);
    await untilReadyOn(a, 'echo');
    const seq = Math.max(...(await a.request('/api/mcp/events?limit=1')).json.events.map((event: { seq: number }) => event.seq));

    await bed.cluster().stop();
    try {
      process.kill(readPid(pidFile), 'SIGKILL');
      // The server's actor saw it (its log line does not wait for the journal).
      await until(() => /server echo: error \(transport_closed\)/.test(a.output()), 'the worker to see the crash');
    } finally {
      await bed.cluster().start();
    }
    const crashed = async () =>
      (await a.request(`/api/mcp/events?since=${seq}`)).json.events.some(
        (event: { type: string; server: string; to: string; error_kind: string }) =>
          event.type === 'server.transitioned' && event.server === 'echo' && event.to === 'error' && event.error_kind === 'transport_closed',
      );
    await expect.poll(crashed, { timeout: 20_000, interval: 250 }).toBe(true);
    // The view caught up too: the reconnect that followed is there as well.
    await untilReadyOn(a, 'echo');
  });

  it('a notification connection lost while another worker writes: the change is caught up by reading, not by the missed notification', async () => {
    const url = await bed.database();
    const a = await worker('w1', url);
    const b = await worker('w2', url);
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'echo', ...healthy() } })).status).toBe(201);
    await untilReadyOn(b, 'echo');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      // Every connection of w2 (its LISTEN included) is cut; it reconnects with backoff.
      await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'mcp-fleet w2' or (backend_type = 'client backend' and query ilike 'listen%')");
    } finally {
      await admin.end();
    }
    expect((await a.request('/api/mcp/servers/echo', { method: 'PATCH', json: { timeout_seconds: 31 } })).status).toBe(200);
    await expect
      .poll(async () => (await b.request('/api/mcp/servers/echo')).json.config.timeout_seconds, { timeout: 15_000, interval: 50 })
      .toBe(31);
    expect(b.output()).toContain('config notifications:');
  });

  it('a worker killed with SIGKILL amid a write leaves the previous row whole, and the others see it not alive after three missed heartbeats', async () => {
    const url = await bed.database();
    const a = await worker('w1', url);
    const b = await worker('w2', url);
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'echo', ...healthy() } })).status).toBe(201);
    await untilReadyOn(b, 'echo');
    expect((await b.request('/api/mcp/servers/echo', { method: 'PATCH', json: { timeout_seconds: 31 } })).status).toBe(200);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const row = () => admin.query('select version, config is null as gone from servers where name = $1', ['echo']);
      const counter = () => admin.query('select version from config_versions where id = 1');
      const [before, counted] = [(await row()).rows, (await counter()).rows];
      // Each row write waits in a trigger for a lock the test holds: the next write stops mid-transaction,
      // after it bumped the global version, inside its insert into servers.
      await admin.query(`create function hold_row_writes() returns trigger language plpgsql as $$
        begin perform pg_advisory_xact_lock(7, 7); return new; end $$`);
      await admin.query('create trigger hold_row_writes before insert or update on servers for each row execute function hold_row_writes()');
      await admin.query('select pg_advisory_lock(7, 7)');
      const write = b.request('/api/mcp/servers/echo', { method: 'PATCH', json: { timeout_seconds: 45 } }).then(
        (reply) => `answered ${reply.status}`,
        () => 'cut off',
      );
      await until(async () => {
        const waiting = await admin.query(
          `select 1 from pg_stat_activity where wait_event_type = 'Lock' and query ilike 'insert into servers%' and pid <> pg_backend_pid()`,
        );
        return waiting.rowCount === 1;
      }, 'the write to reach the row');
      b.child.kill('SIGKILL');
      expect(await write).toBe('cut off');
      await b.exited;
      await admin.query('select pg_advisory_unlock(7, 7)');
      await admin.query('drop trigger hold_row_writes on servers');
      // The killed transaction is rolled back whole: the row and the global version are the previous ones.
      expect((await row()).rows).toEqual(before);
      expect((await counter()).rows).toEqual(counted);
      // The survivor opens and validates the row, and writes past the lock the dead worker held.
      expect((await a.request('/api/mcp/servers/echo')).json.config.timeout_seconds).toBe(31);
      expect((await a.request('/api/mcp/servers/echo', { method: 'PATCH', json: { timeout_seconds: 46 } })).status).toBe(200);
    } finally {
      await admin.end();
    }
    await expect
      .poll(async () => (await a.request('/api/mcp/fleet')).json.workers.map((w: { id: string; alive: boolean }) => [w.id, w.alive]), {
        timeout: 15_000,
        interval: 250,
      })
      .toEqual([
        ['w1', true],
        ['w2', false],
      ]);
  });

  it('a worker without the secret key refuses to start, saying how to make one', async () => {
    const url = await bed.database();
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-nokey-'));
    const failed = await run(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0', '--database-url', url], {
      env: cleanEnv({ MCP_FLEET_SECRET_KEY: '' }),
    }).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toMatch(/MCP_FLEET_SECRET_KEY.*secret_key/s);
  });

  it('a database URL that is not one is refused at once (exit 2, one line), naming no password', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-badurl-'));
    for (const [url, problem] of [
      ['notaurl', 'not a URL'],
      ['mysql://root:hunter2-pw@127.0.0.1/db', 'the scheme is mysql, not postgres'],
    ] as const) {
      const failed = await run(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0', '--database-url', url], {
        env: cleanEnv({ MCP_FLEET_SECRET_KEY: secretKey }),
      }).catch((error: { code: number; stderr: string }) => error);
      // A usage error: exit 2, one line.
      expect(failed).toMatchObject({ code: 2 });
      expect((failed as { stderr: string }).stderr).toMatch(new RegExp(`^error: --database-url: ${problem}[^\\n]*\\n$`));
      expect((failed as { stderr: string }).stderr).not.toContain('hunter2');
    }
  });

  it('a database that refuses the worker (no such database) ends serve with one line naming it, no stack, and no retry', async () => {
    const url = (await bed.database()).replace(/\/[^/]*$/, '/no_such_database');
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-nodb-'));
    const failed = await run(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0', '--database-url', url], {
      env: cleanEnv({ MCP_FLEET_SECRET_KEY: secretKey }),
    }).catch((error: { code: number; stderr: string }) => error);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toBe(`error: cannot use the database at ${url}: database "no_such_database" does not exist\n`);
  });

  it('`mcp-fleet import FILE --database-url` loads a Claude Desktop file into the shared config, its secrets sealed', async () => {
    const url = await bed.database();
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-import-'));
    const file = join(dir, 'claude_desktop_config.json');
    const [command, ...args] = fixtureCommand('healthy.mjs');
    writeFileSync(file, JSON.stringify({ mcpServers: { imported: { command, args, env: { TOKEN: 'canary-import-77aa' } } } }));
    const { stdout } = await run(process.execPath, [BIN, 'import', file, '--database-url', url], {
      env: cleanEnv({ MCP_FLEET_SECRET_KEY: secretKey, MCP_FLEET_STATE_DIR: dir }),
    });
    expect(stdout).toContain('imported 1 server');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const dump = JSON.stringify((await admin.query('select * from servers')).rows);
      expect(dump).toContain('imported');
      expect(dump).not.toContain('canary-import-77aa');
    } finally {
      await admin.end();
    }
    const a = await worker('w1', url);
    await untilReadyOn(a, 'imported');
  });
});
