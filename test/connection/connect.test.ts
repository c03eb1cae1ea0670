// connect() against real fixture processes: tool listing, filters, paging,
// and every way a start can fail, each leaving no process behind.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { isAbortError } from '../../src/connection/call-limiter.js';
import { KILL_GRACE_MS } from '../../src/connection/child-transport.js';
import { MASK } from '../../src/config/masking.js';
import { connect } from '../../src/connection/connection.js';
import { FleetError } from '../../src/errors.js';
import { fixtureCommand } from '../fixtures/index.js';
import { connectTracked, fixtureConfig, isAlive, tempDir, waitForPidFile } from './helpers.js';

/** The FleetError a rejected connect gave. */
async function connectError(...args: Parameters<typeof connect>): Promise<FleetError> {
  const error = await connect(...args).then(
    () => new Error('connect resolved but should have failed'),
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(FleetError);
  return error as FleetError;
}

describe('connect: stdio', () => {
  it('lists the tools of a healthy server and reports its identity and pid', async () => {
    const connection = await connectTracked('healthy', fixtureConfig('healthy'));
    expect(connection.tools.map((tool) => tool.name)).toEqual([
      'echo', 'add', 'slow', 'env', 'wait_for_cancel', 'fail', 'stderr', 'readonly_tool',
    ]);
    expect(connection.tools.find((tool) => tool.name === 'readonly_tool')?.annotations?.readOnlyHint).toBe(true);
    expect(connection.serverInfo).toEqual({ name: 'healthy-fixture', version: '1.2.3' });
    expect(connection.pid).toBeGreaterThan(0);
    expect(isAlive(connection.pid!)).toBe(true);
    expect(connection.stderrTail()).toContain('fixture healthy.mjs ready');
  });

  it('lists no tools of a server without the tools capability, and the SDK says nothing on the console', async () => {
    const debug = vi.spyOn(console, 'debug');
    try {
      const connection = await connectTracked('completions', fixtureConfig('completions'));
      expect(connection.tools).toEqual([]);
      expect(debug).not.toHaveBeenCalled();
    } finally {
      debug.mockRestore();
    }
  });

  it('applies tools.include, then tools.exclude', async () => {
    const included = await connectTracked(
      'healthy',
      fixtureConfig('healthy', { tools: { include: ['echo', 'add', 'fail', 'no_such_tool'], exclude: ['fail'], always_load: [] } }),
    );
    expect(included.tools.map((tool) => tool.name)).toEqual(['echo', 'add']);

    const excluded = await connectTracked('healthy', fixtureConfig('healthy', { tools: { include: null, exclude: ['slow', 'env'], always_load: [] } }));
    expect(excluded.tools.map((tool) => tool.name)).toEqual([
      'echo', 'add', 'wait_for_cancel', 'fail', 'stderr', 'readonly_tool',
    ]);
  });

  it('follows nextCursor through 20 pages: all 1,000 tools, in order', async () => {
    const connection = await connectTracked('many', fixtureConfig('many-tools'));
    const names = connection.tools.map((tool) => tool.name);
    expect(names).toHaveLength(1000);
    expect(names).toEqual(Array.from({ length: 1000 }, (_, i) => `tool_${String(i).padStart(4, '0')}`));
  });

  it('a listing still paging when timeout_seconds runs out is a timeout of tools/list, and the child is stopped', async () => {
    const pidFile = join(tempDir(), 'many.pid');
    const config = fixtureConfig('many-tools', { env: { FIXTURE_PAGE_DELAY_MS: '100', FIXTURE_PID_FILE: pidFile }, timeout_seconds: 1 });
    const error = await connectTracked('paging', config).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(FleetError);
    expect((error as FleetError).kind).toBe('timeout');
    expect((error as FleetError).message).toBe('tools/list did not complete within 1s');
    expect(isAlive(await waitForPidFile(pidFile))).toBe(false);
  });

  it('waits for a slow starter within timeout_seconds', async () => {
    const connection = await connectTracked(
      'slow',
      fixtureConfig('slow-start', { env: { FIXTURE_DELAY_MS: '400' }, timeout_seconds: 20 }),
    );
    expect(connection.tools.map((tool) => tool.name)).toEqual(['echo']);
  });

  it('a missing bare command is spawn_failed naming the command and the PATH searched', async () => {
    const error = await connectError('missing', fixtureConfig('healthy', { command: ['mcp-fleet-no-such-binary', '--flag'] }));
    expect(error.kind).toBe('spawn_failed');
    expect(error.message).toContain('"mcp-fleet-no-such-binary"');
    expect(error.message).toContain('PATH');
    const firstDir = process.env.PATH!.split(':')[0]!;
    expect(error.message).toContain(firstDir);
  });

  it('a PATH set in the server env is a secret and is not printed', async () => {
    const error = await connectError('missing', fixtureConfig('healthy', {
      command: ['mcp-fleet-no-such-binary'],
      env: { PATH: '/opt/secret-path-canary/bin' },
    }));
    expect(error.kind).toBe('spawn_failed');
    expect(error.message).toContain("PATH set in the server's env");
    expect(error.message).not.toContain('secret-path-canary');
  });

  it('a missing absolute command and a missing cwd are told apart', async () => {
    const noFile = await connectError('missing', fixtureConfig('healthy', { command: ['/nonexistent/mcp-server'] }));
    expect(noFile.kind).toBe('spawn_failed');
    expect(noFile.message).toBe('command "/nonexistent/mcp-server" not found: no such file');

    const noCwd = await connectError('missing', fixtureConfig('healthy', { cwd: '/nonexistent/work-dir' }));
    expect(noCwd.kind).toBe('spawn_failed');
    expect(noCwd.message).toBe('working directory "/nonexistent/work-dir" does not exist');

    // Node throws this one rather than emit it: a failed spawn all the same, not a protocol error.
    const fileCwd = await connectError('file', fixtureConfig('healthy', { cwd: '/etc/hostname' }));
    expect(fileCwd.kind).toBe('spawn_failed');
    expect(fileCwd.message).toBe('working directory "/etc/hostname" is not a directory');
  });

  it('a server that exits at start is spawn_failed with its exit code and stderr', async () => {
    const error = await connectError('crash', fixtureConfig('crash-on-start'));
    expect(error.kind).toBe('spawn_failed');
    expect(error.message).toContain('exited with code 3 before initialize completed');
    expect(error.message).toContain('crash-on-start: config file /nonexistent/fixture.toml is missing');
    expect(error.message).not.toContain('\n');
  });

  it('the stderr tail in an error has every secret of config.env redacted', async () => {
    const canary = 'canary-9f41c2d7e8b3a6';
    const error = await connectError('leaky', fixtureConfig('stderr-env', {
      env: { FLEET_TEST_CANARY: canary, OTHER_TOKEN: 'tok-5e6f7a8b9c' },
    }));
    expect(error.kind).toBe('spawn_failed');
    expect(error.message).toContain('exited with code 1');
    expect(error.message).toContain(`FLEET_TEST_CANARY=${MASK}`);
    expect(error.message).toContain(`OTHER_TOKEN=${MASK}`);
    expect(error.message).not.toContain(canary);
    expect(error.message).not.toContain('tok-5e6f7a8b9c');
  });

  it('no answer to initialize is a timeout naming the seconds, and the child is gone', async () => {
    const pidFile = join(tempDir(), 'pid');
    // The shell writes its pid first thing, and `exec` keeps it for sleep, which never answers. (A node
    // child could still be booting on a busy machine when the 1 s timeout kills it, its pid file unwritten.)
    const error = await connectError('hang', fixtureConfig('hang-on-init', {
      command: ['/bin/sh', '-c', 'echo $$ > "$FIXTURE_PID_FILE"; exec sleep 60'],
      env: { FIXTURE_PID_FILE: pidFile }, timeout_seconds: 1,
    }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe('no answer to initialize within 1s');
    expect(isAlive(await waitForPidFile(pidFile))).toBe(false);
  });

  it('a child that ignores SIGTERM is killed with SIGKILL after the grace period', async () => {
    const pidFile = join(tempDir(), 'pid');
    const started = Date.now();
    // The shell ignores SIGTERM before anything else runs, and `exec` keeps that (and the pid) for sleep,
    // which never answers initialize. A node child could still be booting on a busy machine when the 1 s
    // timeout's SIGTERM comes, and die of it before its handler is in place.
    const error = await connectError('stubborn', fixtureConfig('hang-on-init', {
      command: ['/bin/sh', '-c', 'trap "" TERM; echo $$ > "$FIXTURE_PID_FILE"; exec sleep 60'],
      env: { FIXTURE_PID_FILE: pidFile }, timeout_seconds: 1,
    }));
    expect(error.kind).toBe('timeout');
    expect(error.message).toBe('no answer to initialize within 1s');
    // It survived SIGTERM, so connect had to wait out the grace before SIGKILL.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000 + KILL_GRACE_MS - 50);
    expect(isAlive(await waitForPidFile(pidFile))).toBe(false);
  });

  it('a slow starter past timeout_seconds is a timeout too', async () => {
    const error = await connectError('late', fixtureConfig('slow-start', {
      env: { FIXTURE_DELAY_MS: '5000' }, timeout_seconds: 0.5,
    }));
    expect(error.kind).toBe('timeout');
  });

  it('aborting the signal during connect rejects with an AbortError and kills the child', async () => {
    const pidFile = join(tempDir(), 'pid');
    const controller = new AbortController();
    const pending = connect('hang', fixtureConfig('hang-on-init', { env: { FIXTURE_PID_FILE: pidFile }, timeout_seconds: 30 }), {
      signal: controller.signal,
    });
    const pid = await waitForPidFile(pidFile);
    expect(isAlive(pid)).toBe(true);
    controller.abort();
    const error = await pending.then(() => undefined, (err: unknown) => err);
    expect(isAbortError(error)).toBe(true);
    expect(isAlive(pid)).toBe(false);
  });

  it('an already aborted signal spawns nothing', async () => {
    const pidFile = join(tempDir(), 'pid');
    const error = await connect('hang', fixtureConfig('hang-on-init', { env: { FIXTURE_PID_FILE: pidFile } }), {
      signal: AbortSignal.abort(),
    }).then(() => undefined, (err: unknown) => err);
    expect(isAbortError(error)).toBe(true);
    // The same fixture connected after it, and allowed to start, has written its pid file: the first never did.
    const later = join(tempDir(), 'pid');
    const controller = new AbortController();
    const pending = connect('hang', fixtureConfig('hang-on-init', { env: { FIXTURE_PID_FILE: later }, timeout_seconds: 30 }), { signal: controller.signal });
    await waitForPidFile(later);
    controller.abort();
    expect(isAbortError(await pending.then(() => undefined, (err: unknown) => err))).toBe(true);
    expect(existsSync(pidFile)).toBe(false);
  });

  it('close() resolves once the child is gone, is idempotent, and does not call onClose', async () => {
    let closes = 0;
    const connection = await connect('healthy', fixtureConfig('healthy'), { onClose: () => void (closes += 1) });
    const pid = connection.pid!;
    expect(isAlive(pid)).toBe(true);
    await Promise.all([connection.close(), connection.close()]);
    expect(isAlive(pid)).toBe(false);
    await connection.close();
    // A connection whose child dies, after the close above, is reported by then: this one never is.
    const crashed = new Promise<void>((reported) => {
      void connect('crashy', fixtureConfig('healthy'), { onClose: () => reported() }).then((other) => process.kill(other.pid!, 'SIGKILL'));
    });
    await crashed;
    expect(closes).toBe(0);
  });

  it('fixtureCommand runs a fixture with this node', () => {
    const [node, path] = fixtureCommand('healthy');
    expect(node).toBe(process.execPath);
    expect(path).toMatch(/test\/fixtures\/healthy\.mjs$/);
  });
});
