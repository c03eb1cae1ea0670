// log_level → logging/setLevel, and notifications/message into the journal
// (`server.log`) and the worker log, secrets redacted.
import { afterEach, describe, expect, test, vi } from 'vitest';
import { MAX_LOG_MESSAGE_CHARS, MAX_LOGS_PER_SECOND } from '../../src/connection/capabilities/logging.js';
import { catalogServer, startHost, textOf, type Running } from './helpers.js';

const SECRET = 'canary-log-SECRET-000123';
/** Another server's: a server may log a key it shares with it. */
const OTHER = 'canary-other-SECRET-000456';

let running: Running | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe('server logging', () => {
  test('log_level is sent once ready; messages reach the journal and the worker log, redacted', async () => {
    const lines: string[] = [];
    const logger = { info: (line: string) => lines.push(`info ${line}`), warn: (line: string) => lines.push(`warn ${line}`) };
    running = await startHost(
      (dir) => ({
        cat: catalogServer(dir, 'cat', { log_level: 'warning', env: { API_KEY: SECRET } }),
        other: { type: 'remote', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${OTHER}` }, enabled: false },
      }),
      ['cat'],
      { logger },
    );
    const { host } = running;
    await vi.waitFor(async () => expect(textOf(await host.callTool('cat__level', {}))).toBe('warning'), { timeout: 20_000 });

    await host.callTool('cat__log', { level: 'error', logger: 'db', data: `connect failed with key ${SECRET} and ${OTHER}` });
    await host.callTool('cat__log', { level: 'info', data: { rows: 3, key: SECRET } });
    await vi.waitFor(() => expect(running!.events('server.log')).toHaveLength(2), { timeout: 20_000 });
    const [first, second] = running.events('server.log');
    expect(first).toMatchObject({ server: 'cat', level: 'error', logger: 'db', message: 'connect failed with key •••• and ••••' });
    expect(second).toMatchObject({ level: 'info', logger: null, message: '{"rows":3,"key":"••••"}' });
    expect(lines).toContain('warn server cat [error] db: connect failed with key •••• and ••••');
    expect(lines).toContain('info server cat [info]: {"rows":3,"key":"••••"}');
    expect(JSON.stringify(host.events())).not.toContain(SECRET);
    expect(lines.join('\n')).not.toContain(SECRET);
    expect(JSON.stringify(host.events())).not.toContain(OTHER);
  });

  test('without log_level no logging/setLevel is sent; a long message is cut', async () => {
    running = await startHost((dir) => ({ cat: catalogServer(dir, 'cat') }), ['cat']);
    const { host } = running;
    expect(textOf(await host.callTool('cat__level', {}))).toBe('unset');
    await host.callTool('cat__log', { level: 'debug', data: 'x'.repeat(MAX_LOG_MESSAGE_CHARS + 10) });
    await vi.waitFor(() => expect(running!.events('server.log')).toHaveLength(1), { timeout: 20_000 });
    expect(running.events('server.log')[0]!.message).toBe(
      `${'x'.repeat(MAX_LOG_MESSAGE_CHARS)} [truncated: ${MAX_LOG_MESSAGE_CHARS + 10} characters]`,
    );
  });

  test('a flood is cut at MAX_LOGS_PER_SECOND and the rest reported as one warning', async () => {
    running = await startHost((dir) => ({ cat: catalogServer(dir, 'cat') }), ['cat']);
    // Time is the subject: the clock stands still (past the first second) while the burst comes in, so it
    // all falls in one second however slowly a busy machine reads it. Timers still run: the report comes
    // when that second is over.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 5_000 });
    try {
      await running.host.callTool('cat__log_burst', { count: MAX_LOGS_PER_SECOND + 70 });
      await vi.waitFor(() => expect(running!.events('server.log').at(-1)?.logger).toBe('mcp-fleet'), { timeout: 20_000 });
    } finally {
      vi.useRealTimers();
    }
    const logs = running.events('server.log');
    expect(logs).toHaveLength(MAX_LOGS_PER_SECOND + 1);
    expect(logs.at(-1)).toMatchObject({ level: 'warning', message: `dropped 70 log message(s): more than ${MAX_LOGS_PER_SECOND} per second` });
  });

  test('server-everything: log_level debug lets its simulated log messages through to the journal', async () => {
    const EVERYTHING = ['node', 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];
    running = await startHost(() => ({ everything: { type: 'local', command: EVERYTHING, log_level: 'debug' } }), ['everything']);
    await running.host.callTool('everything__toggle-simulated-logging', {});
    await vi.waitFor(() => expect(running!.events('server.log').length).toBeGreaterThan(0), { timeout: 20_000 });
    expect(running.events('server.log')[0]).toMatchObject({ server: 'everything', message: expect.stringMatching(/message/i) });
  });
});
