// A signal to `mcp-fleet serve` while it is still starting (waiting for a
// database that does not answer): it stops as a running worker does, exit 0,
// nothing left behind (the port, worker.json). A running worker answers the
// API's calls still under way before its port closes.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { BIN } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';
import { until } from '../support/wait.js';
import { isAlive } from '../support/processes.js';
import { freePort } from './startup-window.js';
import { TOKEN } from '../http/helpers.js';

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

test('its stdout closed by the reader (serve | head -2): it stops as on SIGTERM, exit 0, no stack trace', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-epipe-'));
  // A server that is ready a second later: a line printed after the banner the reader took.
  const slow = { type: 'local', command: fixtureCommand('slow-start.mjs'), env: { FIXTURE_DELAY_MS: '1000' } };
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: { slow } }));
  const worker = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0'], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((done) => worker.once('exit', (code) => done(code)));
  let stderr = '';
  worker.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  try {
    // As `head -2` does: read the first lines, then close the pipe while the worker still prints.
    await new Promise<void>((resolve) => worker.stdout!.once('data', () => resolve()));
    worker.stdout!.destroy();
    expect(await exited, stderr).toBe(0);
    expect(stderr).toContain('stdout closed: stopping');
    expect(stderr).not.toMatch(/Unhandled|EPIPE/);
    expect(existsSync(join(dir, 'worker.json'))).toBe(false);
  } finally {
    if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

/** `mcp-fleet serve` on `dir`: the child, its exit code, and everything it printed so far. */
function serveOn(dir: string, env: Record<string, string> = {}) {
  const worker = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0'], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((done) => worker.once('exit', (code) => done(code)));
  let printed = '';
  worker.stdout!.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  worker.stderr!.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  return { worker, exited, output: () => printed };
}

/**
 * A worker whose one server ignores SIGTERM, so a graceful stop waits out its kill grace;
 * `run` gets it once the server is ready, the first SIGINT sent and the stop begun.
 */
async function stoppingStubbornWorker(run: (stopping: ReturnType<typeof serveOn> & { dir: string; serverPid: number }) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-stubborn-'));
  const pidFile = join(dir, 'stubborn.pid');
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: { stubborn: { type: 'local', command: fixtureCommand('stubborn.mjs'), env: { FIXTURE_PID_FILE: pidFile } } } }));
  const serving = serveOn(dir);
  try {
    await until(() => serving.output().includes('1 of 1 enabled servers ready'), 'the server to be ready');
    const serverPid = Number(readFileSync(pidFile, 'utf8').trim());
    serving.worker.kill('SIGINT');
    await until(() => serving.output().includes('stopping servers'), 'the stop to begin');
    await run({ ...serving, dir, serverPid });
  } finally {
    if (serving.worker.exitCode === null && serving.worker.signalCode === null) serving.worker.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a second SIGINT while stopping exits 130 at once, killing a server that ignores SIGTERM rather than leaving it', { timeout: 30_000 }, async () => {
  await stoppingStubbornWorker(async ({ worker, exited, output, serverPid }) => {
    // A person's second press, a moment after the first (the same signal within half a second is one press delivered twice).
    await new Promise((resolve) => setTimeout(resolve, 700));
    worker.kill('SIGINT');
    expect(await exited, output()).toBe(130);
    expect(output()).toContain('SIGINT again: exiting without waiting');
    await until(() => !isAlive(serverPid), 'the stubborn server to be gone');
  });
});

test('one Ctrl-C delivered twice at once (the terminal, and npm start forwarding it) stops the worker gracefully: exit 0, worker.json removed', { timeout: 30_000 }, async () => {
  await stoppingStubbornWorker(async ({ worker, exited, output, dir, serverPid }) => {
    // npm's copy of the signal comes once its own handler ran: after the worker took the first.
    worker.kill('SIGINT');
    expect(await exited, output()).toBe(0);
    expect(output()).toContain('stopped');
    expect(output()).not.toContain('again: exiting without waiting');
    expect(existsSync(join(dir, 'worker.json'))).toBe(false);
    expect(isAlive(serverPid)).toBe(false);
  });
});

/** A request to the worker's API whose answer (or its absence) is kept. */
function post(url: string, accept = 'application/json'): Promise<{ status: number; body: string }> {
  return fetch(url, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept }, body: '{}' })
    .then(async (res) => ({ status: res.status, body: await res.text() }))
    .catch((error: Error) => ({ status: 0, body: `no answer: ${error.message}` }));
}

/**
 * A worker on `server` (whose fixture logs each request it holds to FIXTURE_WAIT_LOG); `send`
 * makes requests that reach the server and stay there (`arrivals` lines in its log), then
 * SIGTERM: the worker exits 0 and the answers are given back.
 */
async function answersOnStop<T>(server: Record<string, unknown>, arrivals: number, send: (base: string) => Promise<T>): Promise<Awaited<T>> {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-stop-'));
  const arrived = join(dir, 'arrived.log');
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: { s: { ...server, env: { FIXTURE_WAIT_LOG: arrived } } } }));
  const { worker, exited, output } = serveOn(dir, { MCP_FLEET_API_TOKEN: TOKEN });
  try {
    await until(() => output().includes('1 of 1 enabled servers ready'), 'the server to be ready', 60_000);
    const answers = send(/API\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(output())![1]!);
    // The requests reached the server: the stop cuts what is under way, not what is still on its way.
    const held = () => (existsSync(arrived) ? readFileSync(arrived, 'utf8').split('\n').filter((line) => line.startsWith('waiting')).length : 0);
    await until(() => held() === arrivals, 'the requests to reach the server', 30_000);
    worker.kill('SIGTERM');
    const answered = await answers;
    expect(await exited, output()).toBe(0);
    return answered;
  } finally {
    if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a management-API call still running on SIGTERM is answered (is_error: the worker is shutting down) before the port closes', { timeout: 60_000 }, async () => {
  const [json, stream] = await answersOnStop({ type: 'local', command: fixtureCommand('healthy') }, 2, (base) =>
    Promise.all([post(`${base}/api/mcp/tools/s__wait_for_cancel/call`), post(`${base}/api/mcp/tools/s__wait_for_cancel/call`, 'text/event-stream')]),
  );
  expect(json.status, json.body).toBe(200);
  expect(JSON.parse(json.body)).toEqual({
    content: [{ type: 'text', text: 'the call to s/wait_for_cancel was cancelled: this worker is shutting down' }],
    details: { is_error: true, server: 's', tool: 'wait_for_cancel' },
  });
  expect(stream.status, stream.body).toBe(200);
  expect(stream.body).toContain('event: result\ndata: {"content":[{"type":"text","text":"the call to s/wait_for_cancel was cancelled: this worker is shutting down"}]');
});

test('a prompt render still running on SIGTERM is answered (503 shutting_down) before the port closes', { timeout: 60_000 }, async () => {
  const answer = await answersOnStop({ type: 'local', command: fixtureCommand('changing-catalog', '--hang-prompt') }, 1, (base) => post(`${base}/api/mcp/prompts/s:hang/render`));
  expect(answer.status, answer.body).toBe(503);
  expect(JSON.parse(answer.body)).toEqual({ error: { code: 'shutting_down', message: 'this worker is shutting down' } });
});

test('a server being added on SIGTERM: the add is answered how it ended (503 shutting_down, nothing saved) before the port closes', { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-stop-add-'));
  const pidFile = join(dir, 'hang.pid');
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: {} }));
  const { worker, exited, output } = serveOn(dir, { MCP_FLEET_API_TOKEN: TOKEN });
  try {
    await until(() => output().includes('0 of 0 enabled servers ready'), 'the worker to be up', 30_000);
    const base = /API\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(output())![1]!;
    // Its server never answers initialize: the add waits for a start that the stop cuts short.
    const added = fetch(`${base}/api/mcp/servers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'hangs', type: 'local', command: fixtureCommand('hang-on-init'), env: { FIXTURE_PID_FILE: pidFile } }),
    })
      .then(async (res) => ({ status: res.status, body: await res.text() }))
      .catch((error: Error) => ({ status: 0, body: `no answer: ${error.message}` }));
    await until(() => existsSync(pidFile), 'the added server to be spawned', 30_000);
    worker.kill('SIGTERM');
    const answer = await added;
    expect(await exited, output()).toBe(0);
    expect(answer.status, answer.body).toBe(503);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'shutting_down' } });
    // All or nothing: the add did not finish, so the file does not have it.
    expect(JSON.parse(readFileSync(join(dir, 'mcp_servers.json'), 'utf8'))).toEqual({ servers: {} });
    // An answer the worker chose, not a failure of its own: one warn line, no stack.
    expect(output()).not.toContain('request failed');
    expect(isAlive(Number(readFileSync(pidFile, 'utf8').trim()))).toBe(false);
  } finally {
    if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    if (existsSync(pidFile) && isAlive(Number(readFileSync(pidFile, 'utf8').trim()))) process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
