import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { backoffMs } from '../../src/machines/server.machine.js';
import { ServerConfig } from '../../src/config/schema.js';
import { fixtureCommand } from '../fixtures/index.js';
import { isAlive, readPid } from '../support/processes.js';
import { stateDirWith, untilState } from './helpers.js';

let host: McpHost | undefined;
afterEach(async () => {
  await host?.shutdown();
  host = undefined;
});

const quickReconnect = { max_attempts: 3, initial_delay_seconds: 0.05, max_delay_seconds: 0.2 };

/** Every state the server went through, from the journal. */
function states(name: string): string[] {
  return host!.events().flatMap((event) => (event.type === 'server.transitioned' && event.server === name ? [event.to] : []));
}

describe('backoff', () => {
  const config = ServerConfig.parse({
    type: 'local',
    command: ['x'],
    reconnect: { max_attempts: 9, initial_delay_seconds: 1, max_delay_seconds: 30 },
  });
  test('doubles per failure up to the cap, with ±25 % jitter', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffMs(config, n, () => 0.5))).toEqual([
      1000, 2000, 4000, 8000, 16000, 30000, 30000,
    ]);
    expect(backoffMs(config, 3, () => 0)).toBe(3000);
    expect(backoffMs(config, 3, () => 0.999999)).toBe(5000);
  });
});

describe('recovery of a ready server', () => {
  test('a crash moves it to error (transport_closed), then it reconnects by itself with a new process', async () => {
    const dir = stateDirWith({});
    const pidFile = join(dir, 'crashy.pid');
    await writeConfig(dir, {
      crashy: { type: 'local', command: fixtureCommand('crash-mid-call'), env: { FIXTURE_PID_FILE: pidFile }, reconnect: quickReconnect },
    });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'crashy', 'ready');
    const first = readPid(pidFile);

    const inFlight = await host.callTool('crashy__crash', {});
    expect(inFlight.details.is_error).toBe(true);
    expect(inFlight.content[0]).toMatchObject({ text: expect.stringContaining('process exited with code 7') });
    // The call answered once the journal had the crash: the server is not shown ready with its process dead.
    expect(states('crashy').slice(0, 3)).toEqual(['pending', 'ready', 'error']);
    await untilState(host, 'crashy', 'ready');
    expect(states('crashy')).toEqual(['pending', 'ready', 'error', 'pending', 'ready']);
    expect(host.events().find((e) => e.type === 'server.transitioned' && e.to === 'error')).toMatchObject({
      error_kind: 'transport_closed',
    });
    expect(readPid(pidFile)).not.toBe(first);
    expect(isAlive(first)).toBe(false);
    expect((await host.callTool('crashy__ok', {})).content[0]).toEqual({ type: 'text', text: 'ok' });
  });

  test('a read-only tool whose call lost the connection is retried once after the reconnect; other tools never', async () => {
    const dir = stateDirWith({});
    await writeConfig(dir, {
      reader: { type: 'local', command: fixtureCommand('crash-mid-call'), env: { FIXTURE_MARKER: join(dir, 'r.marker') }, reconnect: quickReconnect },
      writer: { type: 'local', command: fixtureCommand('crash-mid-call'), env: { FIXTURE_MARKER: join(dir, 'w.marker') }, reconnect: quickReconnect },
    });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await host.settled();

    const read = await host.callTool('reader__read_once', {});
    expect(read).toMatchObject({ details: { is_error: false }, content: [{ type: 'text', text: 'read after reconnect' }] });

    const write = await host.callTool('writer__write_once', {});
    expect(write.details.is_error).toBe(true);
    expect(write.content[0]).toMatchObject({ text: expect.stringContaining('process exited with code 7') });
    // It had left `ready` when the call answered; it did reconnect, the call was simply not run again.
    expect(states('writer').slice(0, 3)).toEqual(['pending', 'ready', 'error']);
    await untilState(host, 'writer', 'ready');
    expect(states('writer')).toEqual(['pending', 'ready', 'error', 'pending', 'ready']);
  });

  test('calls made while it reconnects fail fast with the reason', async () => {
    const dir = stateDirWith({});
    await writeConfig(dir, {
      slowback: {
        type: 'local',
        command: fixtureCommand('crash-mid-call'),
        reconnect: { max_attempts: 3, initial_delay_seconds: 2, max_delay_seconds: 2 },
      },
    });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'slowback', 'ready');
    await host.callTool('slowback__crash', {});
    await untilState(host, 'slowback', 'error');
    const seq = host.events().at(-1)!.seq;
    const during = await host.callTool('slowback__ok', {});
    // Fast: the call did not wait for the reconnect (2 s away); nothing happened to the server while it ran.
    expect(host.events(seq).filter((event) => event.type === 'server.transitioned')).toEqual([]);
    expect(during.details.is_error).toBe(true);
    expect(during.content[0]).toMatchObject({ text: expect.stringContaining('is not ready (state: error — process exited with code 7') });
    // Named as any result of the server names it: the server's own name of the tool.
    expect(during.details).toMatchObject({ server: 'slowback', tool: 'ok' });
    await untilState(host, 'slowback', 'ready');
  });

  test('a server lost again after each reconnect opens the circuit and says so in its status', async () => {
    const dir = stateDirWith({});
    await writeConfig(dir, {
      // Each reconnect succeeds; the connection is lost again (a crash) before it counts as stable (max_delay_seconds).
      shortlived: { type: 'local', command: fixtureCommand('crash-mid-call'), reconnect: { max_attempts: 2, initial_delay_seconds: 0.05, max_delay_seconds: 30 } },
    });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    for (let loss = 0; loss < 3; loss += 1) {
      await untilState(host, 'shortlived', 'ready');
      await host.callTool('shortlived__crash', {});
    }
    await expect.poll(() => host!.server('shortlived')?.error ?? '', { timeout: 20_000 }).toContain('gave up after 2 reconnect attempt(s)');
    expect(host.server('shortlived')?.state).toBe('error');
    // The journal says it too: whoever reads the events sees the circuit open, not a server waiting to retry.
    const last = host.events().filter((event) => event.type === 'server.transitioned' && event.server === 'shortlived').at(-1);
    expect(last).toMatchObject({ to: 'error', error: expect.stringContaining('gave up after 2 reconnect attempt(s)') });
  });

  test('a server that keeps failing opens the circuit and says so in its status', async () => {
    const dir = stateDirWith({});
    const marker = join(dir, 'flaky.marker');
    await writeConfig(dir, {
      // It becomes ready, then every reconnect fails: the command starts failing once the marker exists.
      flaky: {
        type: 'local',
        command: [process.execPath, '-e', `require('fs').existsSync(${JSON.stringify(marker)}) ? process.exit(4) : import(${JSON.stringify(fixtureCommand('crash-mid-call')[1])})`],
        reconnect: { max_attempts: 2, initial_delay_seconds: 0.05, max_delay_seconds: 0.1 },
      },
    });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'flaky', 'ready');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(marker, 'fail from now on');
    await host.callTool('flaky__crash', {});
    await expect.poll(() => host!.server('flaky')?.error ?? '', { timeout: 20_000 }).toContain('gave up after 2 reconnect attempt(s)');
    expect(host.server('flaky')).toMatchObject({ state: 'error', error_kind: 'spawn_failed' });
    expect(states('flaky')).toEqual(['pending', 'ready', 'error', 'pending', 'error', 'pending', 'error']);
    // A restart by hand closes the circuit again.
    const { rmSync } = await import('node:fs');
    rmSync(marker);
    expect((await host.restartServer('flaky')).state).toBe('ready');
  });

  // Waits out a ping timeout, then a reconnect: longer than the default on a busy machine.
  test('a hung server (alive, silent) is found by ping, killed and replaced', { timeout: 90_000 }, async () => {
    const dir = stateDirWith({});
    const pidFile = join(dir, 'frozen.pid');
    await writeConfig(dir, {
      frozen: {
        type: 'local',
        command: fixtureCommand('freeze'),
        env: { FIXTURE_PID_FILE: pidFile },
        // Bounds each ping and also the reconnect's spawn + initialize (node and the SDK): room for a
        // busy machine, where a 3 s bound made every reconnect time out and the circuit open.
        timeout_seconds: 8,
        ping_interval_seconds: 0.2,
        reconnect: quickReconnect,
      },
    });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'frozen', 'ready');
    const hung = readPid(pidFile);
    // A call the hung server never answers is cut off with the server: it is told why, not only that it was closed.
    const cut = host.callTool('frozen__hang', {});
    await untilState(host, 'frozen', 'error', 30_000);
    expect(host.server('frozen')).toMatchObject({ error_kind: 'timeout', error: expect.stringContaining('no answer to ping within 8s') });
    const answer = await cut;
    expect(answer.details.is_error).toBe(true);
    expect(answer.content[0]).toMatchObject({ text: expect.stringContaining('call to tool "hang" failed: no answer to ping within 8s: the server hung') });
    await untilState(host, 'frozen', 'ready', 30_000);
    expect(readPid(pidFile)).not.toBe(hung);
    expect(isAlive(hung)).toBe(false);
  });
});

async function writeConfig(dir: string, servers: Record<string, unknown>): Promise<void> {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers }));
}
