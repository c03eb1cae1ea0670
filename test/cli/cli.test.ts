// The CLI as real child processes: `serve` on a random port with real stdio
// fixture servers, and the client commands talking to it through the API.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fixture, fixtureCommand } from '../fixtures/index.js';
import { BIN, cli } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';
import { isAlive, readPid } from '../support/processes.js';
import { until } from '../support/wait.js';

const ENV_SECRET = 'canary-cli-env-SECRET-0001';
const ADDED_SECRET = 'canary-cli-added-SECRET-0002';

interface Worker {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function startServe(dir: string, args: string[] = []): Worker {
  const child = spawn(process.execPath, [BIN, 'serve', '--state-dir', dir, '--port', '0', ...args], {
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.on('exit', (code, signal) => done({ code, signal })),
  );
  workers.push(child);
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

const workers: ChildProcess[] = [];
const dirs: string[] = [];
function stateDir(servers: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-cli-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers }, null, 2));
  return dir;
}

afterEach(() => {
  // A failed test must not leave a worker (and its MCP children) behind.
  for (const child of workers.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('mcp-fleet serve + list/add/call/remove', () => {
  it('runs the whole flow through the API and shuts down cleanly on SIGTERM', { timeout: 120_000 }, async () => {
    const dir = stateDir({});
    writeFileSync(
      join(dir, 'mcp_servers.json'),
      JSON.stringify({
        servers: {
          alpha: { type: 'local', command: fixtureCommand('healthy'), env: { FIXTURE_PID_FILE: join(dir, 'alpha.pid'), API_KEY: ENV_SECRET } },
          // Dumps its environment to stderr and exits: its error reaches the log.
          leaky: { type: 'local', command: fixtureCommand('stderr-env'), env: { LEAK: ENV_SECRET } },
          off: { type: 'local', command: ['node'], enabled: false },
        },
      }),
    );
    const worker = startServe(dir);
    await until(() => /servers ready/.test(worker.stdout()), 'the startup summary');

    const info = JSON.parse(readFileSync(join(dir, 'worker.json'), 'utf8'));
    expect(info).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/$/), pid: worker.child.pid });
    expect(statSync(join(dir, 'worker.json')).mode & 0o777).toBe(0o600);
    const token = readFileSync(join(dir, 'api_token'), 'utf8').trim();
    const out = worker.stdout();
    expect(out).toContain(`API        ${info.url}`);
    expect(out).toContain(`token      in ${join(dir, 'api_token')}`);
    expect(out).toMatch(/alpha\s+pending → ready\s+8 tools/);
    expect(out).toMatch(/leaky\s+pending → error\s+\w+: /);
    expect(out).toMatch(/off\s+disabled/);
    expect(out).toContain('1 of 2 enabled servers ready, 1 in error (1 disabled)');
    const health = await fetch(new URL('healthz', info.url));
    expect(await health.json()).toEqual({ ok: true });

    const list = await cli(['list', '--state-dir', dir]);
    expect(list.code).toBe(0);
    expect(list.stdout.split('\n')[0]).toMatch(/^NAME\s+STATE\s+TOOLS\s+ERROR$/);
    expect(list.stdout).toMatch(/^alpha\s+ready\s+8\s*$/m);
    expect(list.stdout).toMatch(/^off\s+disabled\s+0\s*$/m);
    const listJson = JSON.parse((await cli(['list', '--json', '--state-dir', dir])).stdout);
    expect(listJson.servers.map((s: { name: string }) => s.name)).toEqual(['alpha', 'leaky', 'off']);

    // `--env KEY` alone copies the value from the CLI's environment: no secret on the command line.
    const add = await cli(
      ['add', 'beta', '--state-dir', dir, '--env', `FIXTURE_PID_FILE=${join(dir, 'beta.pid')}`, '--env', 'ADDED_KEY', '--', process.execPath, fixture('healthy')],
      { ADDED_KEY: ADDED_SECRET },
    );
    expect(add.stderr).toBe('');
    expect(add.code).toBe(0);
    expect(add.stdout).toMatch(/^beta\s+ready\s+8\s*$/m);
    const stored = JSON.parse(readFileSync(join(dir, 'mcp_servers.json'), 'utf8')).servers.beta;
    expect(stored.env.ADDED_KEY).toBe(ADDED_SECRET);

    const echo = await cli(['call', 'beta__echo', '{"text":"hello from the cli"}', '--state-dir', dir]);
    expect(echo).toEqual({ code: 0, stdout: 'hello from the cli\n', stderr: '' });
    const envCheck = await cli(['call', 'beta__env', '{"name":"ADDED_KEY"}', '--json', '--state-dir', dir]);
    expect(JSON.parse(JSON.parse(envCheck.stdout).content[0].text)).toEqual({ set: true, length: ADDED_SECRET.length });

    const failing = await cli(['call', 'alpha__fail', '--state-dir', dir]);
    expect(failing).toMatchObject({ code: 1, stdout: 'this tool always fails\n' });
    expect(failing.stderr).toContain('alpha__fail reported a tool error');
    const unknown = await cli(['call', 'alpha__nope', '{}', '--state-dir', dir]);
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toBe('error: no tool named "alpha__nope"\n');
    const badJson = await cli(['call', 'alpha__echo', '{not json', '--state-dir', dir]);
    expect(badJson).toMatchObject({ code: 2, stdout: '', stderr: `error: JSON: not valid JSON (at character 2); e.g. '{"text":"hi"}'\n` });

    const betaPid = readPid(join(dir, 'beta.pid'));
    const remove = await cli(['remove', 'beta', '--state-dir', dir]);
    expect(remove).toEqual({ code: 0, stdout: 'removed beta\n', stderr: '' });
    await until(() => !isAlive(betaPid), 'beta to exit', 5_000);
    const tools = await cli(['list', '--tools', '--state-dir', dir]);
    expect(tools.stdout).toMatch(/^alpha__echo\s+Returns its text$/m);
    expect(tools.stdout).not.toContain('beta__');
    const missing = await cli(['remove', 'beta', '--state-dir', dir]);
    expect(missing).toMatchObject({ code: 1, stderr: 'error: no server named "beta"\n' });

    const alphaPid = readPid(join(dir, 'alpha.pid'));
    worker.child.kill('SIGTERM');
    expect(await worker.exit).toEqual({ code: 0, signal: null });
    expect(isAlive(alphaPid)).toBe(false);
    expect(existsSync(join(dir, 'worker.json'))).toBe(false);
    expect(worker.stdout()).toMatch(/SIGTERM: stopping servers…\nstopped\n$/);

    // Nothing secret in any output; the log is structured JSON.
    for (const text of [worker.stdout(), worker.stderr()]) {
      for (const secret of [ENV_SECRET, ADDED_SECRET, token]) expect(text).not.toContain(secret);
    }
    const logLines = worker.stderr().trim().split('\n');
    for (const line of logLines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(logLines.some((line) => line.includes('leaky'))).toBe(true);
  });

  it('SIGINT while a server is still connecting drains startup and ends every child', async () => {
    const dir = stateDir({});
    writeFileSync(
      join(dir, 'mcp_servers.json'),
      JSON.stringify({
        servers: {
          hung: { type: 'local', command: fixtureCommand('hang-on-init'), env: { FIXTURE_PID_FILE: join(dir, 'hung.pid') }, timeout_seconds: 120 },
          next: { type: 'local', command: fixtureCommand('healthy'), env: { FIXTURE_PID_FILE: join(dir, 'next.pid') } },
        },
      }),
    );
    const worker = startServe(dir, ['--show-token']);
    await until(() => existsSync(join(dir, 'hung.pid')), 'the hung server to spawn');
    const hungPid = readPid(join(dir, 'hung.pid'));
    // --show-token prints the token itself, right under where it is.
    const token = readFileSync(join(dir, 'api_token'), 'utf8').trim();
    expect(worker.stdout()).toContain(`             ${token}\n`);

    worker.child.kill('SIGINT');
    expect(await worker.exit).toEqual({ code: 0, signal: null });
    expect(isAlive(hungPid)).toBe(false);
    // The queued server never started.
    expect(existsSync(join(dir, 'next.pid'))).toBe(false);
    expect(existsSync(join(dir, 'worker.json'))).toBe(false);
  });
});

describe('serve tells a person why servers are missing, under its summary', () => {
  it('a config file that does not parse: the summary says so, naming the file and the place', async () => {
    const dir = stateDir({});
    const file = join(dir, 'mcp_servers.json');
    writeFileSync(file, '{ "servers": { "a": { "type": "local", "command": ["x"] }, } }');
    const worker = startServe(dir);
    await until(() => /servers ready/.test(worker.stdout()), 'the startup summary');
    expect(worker.stdout()).toContain(
      `0 of 0 enabled servers ready. Tools: node ${BIN.startsWith(process.cwd()) ? BIN.slice(process.cwd().length + 1) : BIN} list --tools --state-dir ${dir}\n` +
        `  ! config file ${file} does not parse (invalid JSON: line 1 column 60: expected a double-quoted property name): nothing is read from it and writes are refused until it is fixed or moved\n`,
    );
    worker.child.kill('SIGINT');
    expect(await worker.exit).toEqual({ code: 0, signal: null });
  });

  it('a missing file and a skipped entry each get their line; a valid file gets none', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'mcp-fleet-cli-'));
    dirs.push(empty);
    const none = startServe(empty);
    await until(() => /servers ready/.test(none.stdout()), 'the startup summary');
    expect(none.stdout()).toContain(`  ! no config file at ${join(empty, 'mcp_servers.json')} yet: no servers configured (it is created on the first save)\n`);

    const dir = stateDir({ good: { type: 'local', command: fixtureCommand('healthy') }, typo: { type: 'local', command: ['x'], timeout_seconds: 'sixty' } });
    const skipped = startServe(dir);
    await until(() => /servers ready/.test(skipped.stdout()), 'the startup summary');
    const summary = skipped.stdout().slice(skipped.stdout().indexOf('1 of 1 enabled servers ready'));
    expect(summary.split('\n').filter((line) => line.startsWith('  ! '))).toEqual([expect.stringMatching(/^ {2}! skipping server "typo": servers\.typo\.timeout_seconds: /)]);

    const valid = startServe(stateDir({ good: { type: 'local', command: fixtureCommand('healthy') } }));
    await until(() => /servers ready/.test(valid.stdout()), 'the startup summary');
    expect(valid.stdout()).not.toContain('  ! ');
    for (const worker of [none, skipped, valid]) worker.child.kill('SIGINT');
    for (const worker of [none, skipped, valid]) expect(await worker.exit).toEqual({ code: 0, signal: null });
  });
});

describe('client commands without a worker, and serve failures', () => {
  it('a client command with no running worker says how to start one', async () => {
    const dir = stateDir({});
    const run = await cli(['list', '--state-dir', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `error: no running worker for ${dir}: start one with \`node bin/mcp-fleet.js serve --state-dir ${dir}\`, or pass --url\n`,
    );
  });

  it('a wrong token is refused by the worker (401) and reported as such', async () => {
    const dir = stateDir({});
    const worker = startServe(dir);
    await until(() => existsSync(join(dir, 'worker.json')), 'worker.json');
    const run = await cli(['list', '--state-dir', dir], { MCP_FLEET_API_TOKEN: 'not-the-token' });
    expect(run).toMatchObject({ code: 1, stderr: 'error: missing or wrong bearer token\n' });
    worker.child.kill('SIGTERM');
    expect((await worker.exit).code).toBe(0);
  });

  it('serve on a port in use exits 1 with a clear message; a second worker on one state dir is refused', async () => {
    const blocker = createServer();
    await new Promise<void>((done) => blocker.listen(0, '127.0.0.1', done));
    const port = (blocker.address() as { port: number }).port;
    try {
      const dir = stateDir({});
      const busy = await cli(['serve', '--state-dir', dir, '--port', String(port)]);
      expect(busy).toMatchObject({ code: 1 });
      expect(busy.stderr).toContain(`error: port ${port} is in use; pick another with --port (0 = any free port)`);

      const first = startServe(dir);
      await until(() => existsSync(join(dir, 'worker.json')), 'worker.json');
      const second = await cli(['serve', '--state-dir', dir, '--port', '0']);
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(`error: a worker (pid ${first.child.pid}) already serves ${dir}`);
      first.child.kill('SIGTERM');
      expect((await first.exit).code).toBe(0);
    } finally {
      blocker.close();
    }
  });
});
