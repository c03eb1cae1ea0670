// callTool() against real fixture processes: results, progress, timeouts,
// cancellation, concurrency bounds, crashes and the child's environment.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ToolProgress } from '../../src/catalog/tools/agent-tool.js';
import { MASK } from '../../src/config/masking.js';
import { isAbortError } from '../../src/connection/call-limiter.js';
import { FleetError } from '../../src/errors.js';
import { untilValue } from '../support/wait.js';
import { connectTracked, firstText, fixtureConfig, isAlive, tempDir } from './helpers.js';

/** The file's text, or undefined while it is absent or empty. */
function readIfThere(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8') || undefined;
  } catch {
    return undefined;
  }
}

/** The error a call rejected with. */
async function callError(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => new Error('call resolved but should have failed'), (err: unknown) => err);
}

describe('callTool', () => {
  it('returns results, and tool errors as isError results', async () => {
    const connection = await connectTracked('healthy', fixtureConfig('healthy'));
    expect(firstText(await connection.callTool('echo', { text: 'hi there' }))).toBe('hi there');
    expect(firstText(await connection.callTool('add', { a: 2, b: 40 }))).toBe('42');
    const failed = await connection.callTool('fail', {});
    expect(failed.isError).toBe(true);
    expect(firstText(failed)).toBe('this tool always fails');
  });

  it("a tool error quoting the server's secret is masked; a result that is no error passes as the server wrote it", async () => {
    const secret = 'quoted-canary-5e8a2c91';
    const connection = await connectTracked('healthy', fixtureConfig('healthy', { env: { API_KEY: secret } }));
    const failed = await connection.callTool('fail', { quote: 'API_KEY' });
    expect(failed.isError).toBe(true);
    expect(firstText(failed)).toBe(`auth failed for key ${MASK}`);
    expect(JSON.parse(firstText(await connection.callTool('env', { name: 'API_KEY', reveal: true }))).value).toBe(secret);
  });

  it('a JSON-RPC error from the server is a protocol error, with secrets redacted', async () => {
    const secret = 'echoed-canary-3b9d1f';
    const connection = await connectTracked('many', fixtureConfig('many-tools', { env: { TOKEN: secret } }));
    expect(firstText(await connection.callTool('tool_0999', {}))).toBe('called tool_0999');
    // The server echoes the unknown name into its error; here that name is a secret.
    const error = await callError(connection.callTool(secret, {}));
    expect(error).toBeInstanceOf(FleetError);
    expect((error as FleetError).kind).toBe('protocol');
    expect((error as FleetError).message).toMatch(/^tool "••••" failed: MCP error -32602: .*unknown tool ••••$/);
    expect((error as FleetError).message).not.toContain(secret);
  });

  it('progress reaches onProgress and keeps a call alive past call_timeout_seconds', async () => {
    // A step every 250 ms against a 2 s timeout: a busy machine may delay a notification, not by eight steps.
    const connection = await connectTracked('healthy', fixtureConfig('healthy', { call_timeout_seconds: 2 }));
    const progress: ToolProgress[] = [];
    const started = Date.now();
    const result = await connection.callTool('slow', { ms: 4000, steps: 16 }, { onProgress: (p) => progress.push(p) });
    expect(Date.now() - started).toBeGreaterThan(3900);
    expect(JSON.parse(firstText(result))).toMatchObject({ done: true });
    // The last notification can race the result (the SDK handles notifications a tick later).
    expect(progress.length).toBeGreaterThanOrEqual(15);
    expect(progress[0]).toEqual({ progress: 1, total: 16, message: 'step 1' });
  });

  it('a call without progress times out after call_timeout_seconds', async () => {
    const connection = await connectTracked('healthy', fixtureConfig('healthy', { call_timeout_seconds: 1 }));
    const started = Date.now();
    // The tool answers after 30 s: a `timeout` error is the call timeout's, not the tool's answer.
    const error = await callError(connection.callTool('slow', { ms: 30_000, steps: 0 }));
    expect(error).toBeInstanceOf(FleetError);
    expect((error as FleetError).kind).toBe('timeout');
    expect((error as FleetError).message).toBe('tool "slow" did not answer within 1s');
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    // The connection survives a timed-out call.
    expect(firstText(await connection.callTool('echo', { text: 'still here' }))).toBe('still here');
  });

  it('aborting a call rejects it as cancelled and the server gets notifications/cancelled', async () => {
    const log = join(tempDir(), 'cancel.log');
    const arrived = join(tempDir(), 'wait.log');
    const connection = await connectTracked('healthy', fixtureConfig('healthy', { env: { FIXTURE_CANCEL_LOG: log, FIXTURE_WAIT_LOG: arrived } }));
    const controller = new AbortController();
    const pending = connection.callTool('wait_for_cancel', {}, { signal: controller.signal });
    // Aborted once the server has the call.
    await untilValue(() => readIfThere(arrived), 'the server to have the call');
    controller.abort();
    const error = await callError(pending);
    expect(isAbortError(error)).toBe(true);
    expect((error as Error).message).toContain('was cancelled');
    // The fixture only logs when its request is aborted; with the connection still
    // open, that can only be the cancelled notification.
    const line = await untilValue(() => {
      try {
        return readFileSync(log, 'utf8').trim() || undefined;
      } catch {
        return undefined;
      }
    }, 'the cancellation in the log');
    expect(line).toMatch(/^cancelled \d+$/);
    expect(isAlive(connection.pid!)).toBe(true);
  });

  it('max_concurrent_calls 1 serializes calls', async () => {
    const connection = await connectTracked('healthy', fixtureConfig('healthy', { max_concurrent_calls: 1 }));
    const started = Date.now();
    const results = await Promise.all([0, 1, 2].map(() => connection.callTool('slow', { ms: 200 })));
    expect(Date.now() - started).toBeGreaterThanOrEqual(580);
    for (const result of results) expect(JSON.parse(firstText(result)).peak).toBe(1);
  });

  it('max_concurrent_calls 4 runs four at once, and no more', async () => {
    const connection = await connectTracked('healthy', fixtureConfig('healthy', { max_concurrent_calls: 4 }));
    const results = await Promise.all([0, 1, 2, 3, 4, 5].map(() => connection.callTool('slow', { ms: 400 })));
    const peaks = results.map((result) => JSON.parse(firstText(result)).peak as number);
    expect(Math.max(...peaks)).toBe(4);
  });

  it('a call queued behind the limit can be aborted without ever reaching the server', async () => {
    const log = join(tempDir(), 'cancel.log');
    const connection = await connectTracked('healthy', fixtureConfig('healthy', {
      max_concurrent_calls: 1, env: { FIXTURE_CANCEL_LOG: log },
    }));
    const running = connection.callTool('slow', { ms: 300 });
    const controller = new AbortController();
    const queued = connection.callTool('wait_for_cancel', {}, { signal: controller.signal });
    controller.abort();
    expect(isAbortError(await callError(queued))).toBe(true);
    await running;
    expect(() => readFileSync(log)).toThrow();
  });

  it('a crash mid-call rejects the call promptly and onClose reports transport_closed once', async () => {
    const closes: FleetError[] = [];
    const connection = await connectTracked('crashy', fixtureConfig('crash-mid-call'), {
      onClose: (error) => void closes.push(error),
    });
    const error = await callError(connection.callTool('crash', {}));
    // The crash's own error, not the call timeout's (that one would be `timeout`).
    expect(error).toBeInstanceOf(FleetError);
    expect((error as FleetError).kind).toBe('transport_closed');
    expect((error as FleetError).message).toMatch(/^call to tool "crash" failed: process exited with code 7: .*crash-mid-call: exiting/);

    await untilValue(() => closes.length > 0, 'onClose');
    expect(closes).toHaveLength(1);
    expect(closes[0]!.kind).toBe('transport_closed');
    expect(closes[0]!.message).toMatch(/^process exited with code 7: .*crash-mid-call: exiting with code 7/);
    expect(isAlive(connection.pid!)).toBe(false);

    const after = await callError(connection.callTool('ok', {}));
    expect((after as FleetError).kind).toBe('transport_closed');
  });

  it('calls after close() fail as transport_closed', async () => {
    const connection = await connectTracked('healthy', fixtureConfig('healthy'));
    await connection.close();
    const error = await callError(connection.callTool('echo', { text: 'x' }));
    expect(error).toBeInstanceOf(FleetError);
    expect((error as FleetError).kind).toBe('transport_closed');
  });

  it('stderrTail() redacts secrets the server writes at run time', async () => {
    const secret = 'runtime-canary-71d0c3';
    const connection = await connectTracked('healthy', fixtureConfig('healthy', { env: { API_KEY: secret } }));
    await connection.callTool('stderr', { text: `debug: using key ${secret}` });
    const tail = await untilValue(() => (connection.stderrTail().includes('debug:') ? connection.stderrTail() : undefined), 'debug: on stderr');
    expect(tail).toContain(`debug: using key ${MASK}`);
    expect(tail).not.toContain(secret);
  });
});

describe('the child environment', () => {
  const parentOnly = 'MCP_FLEET_TEST_PARENT_ONLY';
  afterEach(() => {
    delete process.env[parentOnly];
  });

  it('has config.env and the safe default env, but not other parent variables', async () => {
    process.env[parentOnly] = 'parent-value';
    const connection = await connectTracked('healthy', fixtureConfig('healthy', { env: { FLEET_GIVEN: 'from-config-123' } }));
    const env = async (name: string) => JSON.parse(firstText(await connection.callTool('env', { name, reveal: true })));

    expect(await env('FLEET_GIVEN')).toEqual({ set: true, length: 15, value: 'from-config-123' });
    expect(await env('PATH')).toMatchObject({ set: true, value: process.env.PATH });
    expect(await env(parentOnly)).toEqual({ set: false, length: 0 });
    // Without reveal the fixture reports only presence and length.
    expect(JSON.parse(firstText(await connection.callTool('env', { name: 'FLEET_GIVEN' })))).toEqual({ set: true, length: 15 });
  });

  it('passes on the worker variables named in inherit_env, and only those; their values are redacted too', async () => {
    process.env[parentOnly] = 'inherited-value-5150';
    const connection = await connectTracked('healthy', fixtureConfig('healthy', { inherit_env: [parentOnly, 'MCP_FLEET_TEST_UNSET'] }));
    const env = async (name: string) => JSON.parse(firstText(await connection.callTool('env', { name, reveal: true })));
    expect(await env(parentOnly)).toEqual({ set: true, length: 20, value: 'inherited-value-5150' });
    expect(await env('MCP_FLEET_TEST_UNSET')).toEqual({ set: false, length: 0 });
    await connection.callTool('stderr', { text: `leaking inherited-value-5150` });
    const tail = await untilValue(() => (connection.stderrTail().includes('leaking') ? connection.stderrTail() : undefined), 'leaking on stderr');
    expect(tail).toContain(`leaking ${MASK}`);
  });

  it('runs in config.cwd when set', async () => {
    const dir = tempDir();
    const connection = await connectTracked('healthy', fixtureConfig('healthy', {
      cwd: dir, env: { FIXTURE_CANCEL_LOG: 'relative.log', FIXTURE_WAIT_LOG: 'relative-wait.log' },
    }));
    const controller = new AbortController();
    const pending = connection.callTool('wait_for_cancel', {}, { signal: controller.signal });
    await untilValue(() => readIfThere(join(dir, 'relative-wait.log')), 'the server to have the call');
    controller.abort();
    await callError(pending);
    // The fixture resolved its relative log path against its own cwd.
    const line = await untilValue(() => {
      try {
        return readFileSync(join(dir, 'relative.log'), 'utf8');
      } catch {
        return undefined;
      }
    }, 'the cancellation in the relative log');
    expect(line).toMatch(/^cancelled/);
  });
});
