// Rate limits against a real server that imposes them (rate-limited-http.mjs):
// a 429 with Retry-After is waited out and retried once for a read-only or
// idempotent tool; any other tool gets an error result naming the wait; an
// in-band "rate limited, retry after N" result is treated alike. The
// fixture's call log shows what reached it and when.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RemoteServerConfig } from '../../src/config/schema.js';
import { parseRetryAfter, rateLimitOfResult } from '../../src/connection/rate-limits.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { connectTracked, firstText, tempDir } from './helpers.js';

interface LoggedCall {
  tool: string;
  at: number;
  status: number;
}

const servers: HttpFixture[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

async function limitedServer(retryAfterSeconds: number, overrides: Record<string, unknown> = {}) {
  const log = join(tempDir(), 'calls.log');
  const server = await startHttpFixture('rate-limited-http', ['--retry-after', String(retryAfterSeconds)], { FIXTURE_CALL_LOG: log });
  servers.push(server);
  const config = RemoteServerConfig.parse({ type: 'remote', url: server.url, transport: 'streamable_http', ...overrides });
  const connection = await connectTracked('limited', config);
  const calls = (): LoggedCall[] =>
    existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as LoggedCall) : [];
  return { connection, calls };
}

describe('HTTP 429 with Retry-After', () => {
  it('a read-only tool waits Retry-After out and is retried once, successfully', async () => {
    const { connection, calls } = await limitedServer(1);
    const result = await connection.callTool('read_thing', { key: 'k' });
    expect(result.isError).not.toBe(true);
    expect(firstText(result)).toBe('value of k');
    const [refused, retried] = calls();
    expect([refused?.status, retried?.status]).toEqual([429, 200]);
    // Waited the full second the server asked for (the log's clock is the fixture's).
    expect(retried!.at - refused!.at).toBeGreaterThanOrEqual(1000);
  });

  it('a tool that is neither read-only nor idempotent is not retried: its result names the wait', async () => {
    const { connection, calls } = await limitedServer(7);
    const result = await connection.callTool('write_thing', { key: 'k', value: 'v' });
    expect(result.isError).toBe(true);
    expect(firstText(result)).toBe(
      'tool "write_thing" was rate limited by the server: retry after 7s; not retried: the tool is neither read-only nor idempotent',
    );
    expect(calls().map((call) => call.status)).toEqual([429]);
  });

  it('a wait longer than the call timeout is not waited: the result says so at once', async () => {
    const { connection, calls } = await limitedServer(30, { call_timeout_seconds: 2 });
    // Not waited: the one request made, and the result says why it was not retried.
    const result = await connection.callTool('read_thing', {});
    expect(firstText(result)).toBe(
      "tool \"read_thing\" was rate limited by the server: retry after 30s; not retried: that is longer than the call's timeout allows",
    );
    expect(calls()).toHaveLength(1);
  });
});

describe('a rate-limited tool result', () => {
  it('an idempotent tool whose result says "rate limited, retry after N" is retried after N seconds', async () => {
    const { connection, calls } = await limitedServer(1);
    const result = await connection.callTool('soft_limited', {});
    expect(firstText(result)).toBe('ok');
    const [first, second] = calls();
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(1000);
  });

  it('is recognised by its structured retry-after or its text, and only when it is an error', () => {
    const text = (value: string, isError = true) => ({ content: [{ type: 'text' as const, text: value }], isError });
    expect(rateLimitOfResult(text('Rate limit exceeded. Retry after 2.5 seconds'))).toEqual({ retryAfterMs: 2500 });
    expect(rateLimitOfResult(text('too many requests; retry-after: 300ms'))).toEqual({ retryAfterMs: 300 });
    expect(rateLimitOfResult({ ...text('slow down'), structuredContent: { retry_after: 4 } })).toEqual({ retryAfterMs: 4000 });
    expect(rateLimitOfResult(text('rate limited, retry after 3 seconds', false))).toBeNull();
    expect(rateLimitOfResult(text('file not found'))).toBeNull();
    expect(rateLimitOfResult(text('rate limited'))).toBeNull();
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:10 GMT', Date.parse('Wed, 21 Oct 2015 07:28:00 GMT'))).toBe(10_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });
});
