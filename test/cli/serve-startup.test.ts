// `mcp-fleet serve` publishes its configured servers before it listens: a
// client polling a starting worker (on a loaded machine) from the first
// moment never sees an empty or partial fleet, and the worker prints each
// transition once and its summary only once the config is read.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { TOKEN } from '../http/helpers.js';
import { BIN, cli } from '../support/cli.js';
import { until } from '../support/wait.js';
import { cleanEnv } from '../support/env.js';
import { busyLoops, freePort, watchStartup } from './startup-window.js';

const names = ['alpha', 'beta', 'gamma', 'delta', 'off'];
const servers = Object.fromEntries(
  names.map((name) => [
    name,
    name === 'alpha'
      ? // Slow to start: the window in which servers are pending stays open a while.
        { type: 'local', command: fixtureCommand('slow-start.mjs'), env: { FIXTURE_DELAY_MS: '1500' } }
      : { type: 'local', command: fixtureCommand('healthy.mjs'), enabled: name !== 'off' },
  ]),
);

test('under load, every answer from the first moment the port accepts lists every configured server', { timeout: 90_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-startup-'));
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers }));
  const loops = busyLoops(2);
  const port = await freePort();
  const worker = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', String(port)], {
    env: cleanEnv({ MCP_FLEET_API_TOKEN: TOKEN }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => worker.once('exit', () => done()));
  let stdout = '';
  worker.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  worker.stderr!.resume();
  try {
    const watch = await watchStartup(`http://127.0.0.1:${port}`, names, () => /servers ready/.test(stdout) || worker.exitCode !== null);
    expect(watch.wrong).toEqual([]);
    expect(watch.answers).toBeGreaterThan(5);
    // Some answers came while servers were still connecting: the window was polled.
    expect(watch.pending).toBeGreaterThan(0);
    // The banner first, then one line per transition, then one summary that counts the configured servers.
    expect(stdout.indexOf('servers\n')).toBeLessThan(stdout.indexOf('  alpha'));
    expect(stdout.match(/^ {2}alpha +pending → ready/gm)).toHaveLength(1);
    expect(stdout.match(/servers ready/g)).toEqual(['servers ready']);
    expect(stdout).toContain('4 of 4 enabled servers ready (1 disabled)');
  } finally {
    await loops.stop();
    if (worker.exitCode === null) worker.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a port in use is found before anything starts: one line, exit 1, nothing written to the state dir, no server started', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-startup-'));
  const pidFile = join(dir, 'slow.pid');
  writeFileSync(
    join(dir, 'mcp_servers.json'),
    JSON.stringify({ servers: { slow: { type: 'local', command: fixtureCommand('slow-start.mjs'), env: { FIXTURE_DELAY_MS: '30000', FIXTURE_PID_FILE: pidFile } } } }),
  );
  const blocker = createServer();
  await new Promise<void>((done) => blocker.listen(0, '127.0.0.1', done));
  const port = (blocker.address() as { port: number }).port;
  try {
    const busy = await cli(['serve', '--state-dir', dir, '--port', String(port)]);
    expect(busy.code).toBe(1);
    // The error alone: no log line of a host that was started for nothing.
    expect(busy.stderr).toBe(`error: port ${port} is in use; pick another with --port (0 = any free port)\n`);
    // No token, journal, lock or worker.json for a worker that never listened; its server never spawned.
    expect(readdirSync(dir)).toEqual(['mcp_servers.json']);
    // A state dir that did not exist is not made.
    const fresh = join(dir, 'fresh');
    expect((await cli(['serve', '--state-dir', fresh, '--port', String(port)])).code).toBe(1);
    expect(existsSync(fresh)).toBe(false);
  } finally {
    blocker.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the sandbox origin of apps: printed in the banner, framed by the page; a busy --apps-port is named', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-startup-'));
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: {} }));
  const [port, appsPort] = [await freePort(), await freePort()];
  const worker = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', String(port), '--apps-port', String(appsPort)], {
    env: cleanEnv({ MCP_FLEET_API_TOKEN: TOKEN }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => worker.once('exit', () => done()));
  let stdout = '';
  worker.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  worker.stderr!.resume();
  try {
    await until(() => stdout.includes('  apps '), 'the banner');
    expect(stdout).toContain(`  apps       http://127.0.0.1:${appsPort}/ (sandbox origin of app frames)`);
    const page = await fetch(`http://127.0.0.1:${port}/`);
    expect(page.headers.get('content-security-policy')).toContain(`frame-src http://127.0.0.1:${appsPort};`);
    // The sandbox port answers, with nothing but frames of open apps.
    expect((await fetch(`http://127.0.0.1:${appsPort}/`)).status).toBe(404);
    // A second worker wanting the same sandbox port says which flag to change.
    const other = mkdtempSync(join(tmpdir(), 'mcp-fleet-startup-'));
    const busy = await cli(['serve', '--state-dir', other, '--port', '0', '--apps-port', String(appsPort)]);
    rmSync(other, { recursive: true, force: true });
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain(`error: port ${appsPort} is in use; pick another with --apps-port (0 = any free port)`);
  } finally {
    if (worker.exitCode === null) worker.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
});
