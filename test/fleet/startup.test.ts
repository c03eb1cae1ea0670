// Workers on a shared PostgreSQL starting up: the servers are published
// before the port accepts, and each worker prints its own transitions once
// (not the other workers' that the shared journal also tells it) and its
// summary once its config is read.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { busyLoops, freePort, watchStartup } from '../cli/startup-window.js';
import { fleetTestBed } from './workers.js';
import { generateSecretKeyText } from '../../src/config/secrets/secret-key.js';
import { BIN } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';

const run = promisify(execFile);
const bed = fleetTestBed();

/** A database holding `servers` (mcp-fleet's own file format), through `mcp-fleet import`. */
async function databaseWith(servers: Record<string, unknown>): Promise<string> {
  const url = await bed.database();
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-import-'));
  const file = join(dir, 'mcp_servers.json');
  writeFileSync(file, JSON.stringify({ servers }));
  await run(process.execPath, [BIN, 'import', file, '--database-url', url], {
    env: cleanEnv({ MCP_FLEET_SECRET_KEY: bed.secretKey, MCP_FLEET_STATE_DIR: dir }),
  });
  return url;
}

const healthy = (extra: Record<string, unknown> = {}) => ({ type: 'local', command: fixtureCommand('healthy.mjs'), ...extra });

/** How many lines of `output` say `server` made `move` (`pending`, `pending → ready`). */
function printed(output: string, server: string, move: string): number {
  return output.split('\n').filter((line) => new RegExp(`^ {2}${server} +${move}(?:$| {2,})`).test(line)).length;
}

describe('starting workers on a shared database', { timeout: 120_000 }, () => {
  it('under load, every answer from the first moment the port accepts lists every configured server', async () => {
    const names = ['alpha', 'beta', 'gamma', 'delta', 'off'];
    const url = await databaseWith({
      alpha: { type: 'local', command: fixtureCommand('slow-start.mjs'), env: { FIXTURE_DELAY_MS: '1500' } },
      beta: healthy(),
      gamma: healthy(),
      delta: healthy(),
      off: healthy({ enabled: false }),
    });
    const loops = busyLoops(2);
    try {
      const port = await freePort();
      let up = false;
      const starting = bed.worker('w1', url, { port }).finally(() => (up = true));
      const watch = await watchStartup(`http://127.0.0.1:${port}`, names, () => up);
      const worker = await starting;
      expect(watch.wrong).toEqual([]);
      expect(watch.answers).toBeGreaterThan(5);
      expect(watch.pending).toBeGreaterThan(0);
      expect(worker.output()).toContain('4 of 4 enabled servers ready (1 disabled)');
    } finally {
      await loops.stop();
    }
  });

  it('each worker prints its own transitions once, and one summary of its whole config', async () => {
    const url = await databaseWith({ alpha: healthy(), beta: healthy(), gamma: healthy() });
    // Started together: each one's journal tells it the other's transitions while it reads its own config.
    const [a, b] = await Promise.all([bed.worker('wa', url), bed.worker('wb', url)]);
    expect((await a.request('/api/mcp/servers/beta/restart', { method: 'POST' })).status).toBe(200);
    await new Promise((settle) => setTimeout(settle, 500));
    const [outA, outB] = [a.output(), b.output()];
    for (const [output, restarts] of [[outA, 1], [outB, 0]] as const) {
      expect(output.match(/servers ready/g)).toEqual(['servers ready']);
      expect(output).toContain('3 of 3 enabled servers ready');
      // The config is the database's: the state dir holds no file, and none is missed under the summary.
      expect(output).not.toContain('  ! ');
      expect(printed(output, 'alpha', 'pending → ready')).toBe(1);
      expect(printed(output, 'gamma', 'pending')).toBe(1);
      // The restart on wa is wa's: wb runs its own beta, untouched.
      expect(printed(output, 'beta', 'pending → ready')).toBe(1 + restarts);
    }
  });

  it('a worker or an import with another secret key than the one the stored secrets are sealed with is refused, writing nothing', async () => {
    const url = await databaseWith({ sealed: healthy({ env: { API_KEY: 'sk-stored-1234' } }) });
    const otherKey = generateSecretKeyText();
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-other-key-'));
    const env = cleanEnv({ MCP_FLEET_SECRET_KEY: otherKey, MCP_FLEET_STATE_DIR: dir });
    const refusal = /the database's secrets are sealed with key [0-9a-f]{16}, but the key in use here is [0-9a-f]{16}: every worker and import of a fleet needs the same MCP_FLEET_SECRET_KEY/;

    const file = join(dir, 'more.json');
    writeFileSync(file, JSON.stringify({ servers: { more: healthy({ env: { OTHER: 'sk-other-5678' } }) } }));
    const imported = await run(process.execPath, [BIN, 'import', file, '--database-url', url], { env }).catch((error: { code: number; stderr: string }) => error);
    expect('code' in imported && imported.code).toBe(1);
    expect((imported as { stderr: string }).stderr).toMatch(refusal);

    const served = await run(process.execPath, [BIN, 'serve', '--database-url', url, '--port', '0', '--worker-id', 'other'], { env, timeout: 30_000 }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect('code' in served && served.code).toBe(1);
    expect((served as { stderr: string }).stderr).toMatch(refusal);

    // With the fleet's key the database holds the one server imported first, and it opens.
    const worker = await bed.worker('w1', url);
    const list = await worker.request('/api/mcp/servers');
    expect(list.json.servers.map((server: { name: string }) => server.name)).toEqual(['sealed']);
  });

  it('a second live worker with the same --worker-id is refused; once the first stopped, the id is free again', async () => {
    const url = await databaseWith({ one: healthy() });
    const first = await bed.worker('w1', url);
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-same-id-'));
    const env = cleanEnv({ MCP_FLEET_SECRET_KEY: bed.secretKey, MCP_FLEET_STATE_DIR: dir });
    const second = await run(process.execPath, [BIN, 'serve', '--database-url', url, '--port', '0', '--worker-id', 'w1'], { env, timeout: 30_000 }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect('code' in second && second.code).toBe(1);
    expect((second as { stderr: string }).stderr).toMatch(
      /worker id "w1" is in use by a live worker \(host .+, pid \d+, last seen \d+ s ago\): give each worker its own --worker-id/,
    );
    // The first one's view is its own still.
    expect((await first.request('/api/mcp/servers/one')).json.state).toBe('ready');
    await bed.stopAll();
    const again = await bed.worker('w1', url);
    expect((await again.request('/api/mcp/servers/one')).json.state).toBe('ready');
  });
});
