// `npm start` as a process manager or an IDE's stop button uses it: SIGTERM to
// npm alone (not its process group) stops the worker and its servers too.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { allGone, isAlive } from '../support/processes.js';
import { until } from '../support/wait.js';
import { cleanEnv } from '../support/env.js';

const dirs: string[] = [];
const workers: number[] = [];
afterEach(() => {
  // A worker the signal did not stop is stopped here, so a failure leaves nothing running.
  for (const pid of workers.splice(0)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

it('SIGTERM to npm start alone stops the worker it runs', { timeout: 60_000 }, async () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-start-'));
  dirs.push(stateDir);
  // Without prestart's build (the tests' own build is in dist/); the later --state-dir wins over the demo's.
  const npm = spawn('npm', ['start', '--ignore-scripts', '--', '--port', '0', '--state-dir', stateDir], {
    cwd: join(import.meta.dirname, '../..'),
    env: cleanEnv(),
    stdio: 'ignore',
  });
  const workerFile = join(stateDir, 'worker.json');
  await until(() => existsSync(workerFile), 'the worker to listen');
  const { pid } = JSON.parse(readFileSync(workerFile, 'utf8')) as { pid: number };
  workers.push(pid);
  expect(isAlive(pid)).toBe(true);
  npm.kill('SIGTERM');
  expect(await allGone([pid], 20_000)).toBe(true);
});
