// A bearer token the server stops taking while the server is ready (revoked,
// rotated): the server leaves `ready` for `needs_reauth` (a person gives a new
// token), whether a ping or a call meets the refusal first, and before that
// call answers. The server's 401 quotes the Authorization header it got, as
// some servers and proxies do: no view, event or journal line repeats it.
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { stateDirWith, untilState } from './helpers.js';
import { storedJournalLines } from '../support/journal-files.js';

const TOKEN = 'bearer-SECRET-token-4711';

let host: McpHost | undefined;
let server: HttpFixture;
beforeEach(async () => {
  server = await startHttpFixture('http-server', [], { FIXTURE_BEARER_TOKEN: TOKEN, FIXTURE_ECHO_REFUSED: '1' });
});
afterEach(async () => {
  await host?.shutdown();
  host = undefined;
  await server.stop();
});

/** The server takes another token from now on. */
async function revoke(): Promise<void> {
  const answer = await fetch(new URL('/token?to=another-token', server.url), { method: 'POST' });
  expect(answer.status).toBe(204);
}

function hostOn(fields: Record<string, unknown>): { host: McpHost; dir: string } {
  const dir = stateDirWith({
    b: { type: 'remote', url: server.url, auth: { kind: 'bearer', token: TOKEN }, reconnect: { max_attempts: 0 }, ...fields },
  });
  return { host: createMcpHost({ stateDir: dir }), dir };
}

describe('a bearer token refused while the server is ready', () => {
  test('a ping that meets the refusal takes the server to needs_reauth, quoting no token', async () => {
    const made = hostOn({ ping_interval_seconds: 1 });
    host = made.host;
    await host.start();
    await untilState(host, 'b', 'ready');
    await revoke();
    await untilState(host, 'b', 'needs_reauth');
    const view = host.server('b')!;
    expect(view).toMatchObject({ error_kind: 'needs_reauth', tool_count: 0 });
    expect(view.error).toContain('refused the credentials (HTTP 401)');
    // It went there at once, not through `error` and a reconnect.
    const moves = host.events().flatMap((event) => (event.type === 'server.transitioned' && event.server === 'b' ? [event.to] : []));
    expect(moves.slice(moves.lastIndexOf('ready'))).toEqual(['ready', 'needs_reauth']);
    expect(JSON.stringify(host.status())).not.toContain(TOKEN);
    expect(JSON.stringify(host.events())).not.toContain(TOKEN);
    await host.shutdown();
    expect(storedJournalLines(made.dir).join('\n')).not.toContain(TOKEN);
  });

  test('with no pings, the call that meets it fails as auth, and the server has left ready when it answers', async () => {
    host = hostOn({ ping_interval_seconds: 0 }).host;
    await host.start();
    await untilState(host, 'b', 'ready');
    await revoke();
    const failed = await host.callTool('b__echo', { text: 'x' });
    expect(failed.details.is_error).toBe(true);
    expect(JSON.stringify(failed.content)).toContain('refused the credentials (HTTP 401)');
    expect(JSON.stringify(failed)).not.toContain(TOKEN);
    expect(host.server('b')).toMatchObject({ state: 'needs_reauth', ready: false, error_kind: 'needs_reauth' });
    expect(host.hasTool('b__echo')).toBe(false);
  });
});
