// A signal to `mcp-fleet serve` while it is still starting (waiting for a
// database that does not answer): it stops as a running worker does, exit 0,
// nothing left behind (the port, worker.json).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { BIN } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';
import { until } from '../support/wait.js';
import { freePort } from './startup-window.js';

test.each(['SIGTERM', 'SIGINT'] as const)('%s while waiting for the database: exit 0, worker.json removed', { timeout: 30_000 }, async (signal) => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-signal-'));
  // Nothing listens there: the worker listens, and waits.
  const database = `postgres://fleet:pw@127.0.0.1:${await freePort()}/fleet`;
  const worker = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0', '--database-url', database], {
    env: cleanEnv({ MCP_FLEET_SECRET_KEY: randomBytes(32).toString('base64') }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((done) => worker.once('exit', (code) => done(code)));
  let output = '';
  worker.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  worker.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    await until(() => existsSync(join(dir, 'worker.json')) && /attempt 1 failed/.test(output), 'the worker to listen and wait', 20_000);
    worker.kill(signal);
    expect(await exited, output).toBe(0);
    expect(output).toContain(`${signal}: stopping`);
    expect(output).toContain('stopped');
    expect(existsSync(join(dir, 'worker.json'))).toBe(false);
  } finally {
    if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
