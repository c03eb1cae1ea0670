// Garbage on stdout, the JSON-RPC channel. Lines that are not JSON-RPC are
// skipped (the SDK reports each and reads on), so a server that logs to
// stdout before, after and during the session stays ready and answers right.
// A server that never answers with JSON-RPC at all is an `error` of kind
// `protocol` that says what stdout carried, not a bare timeout.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { closeAndExpectNoChild, expectStillServing, hostile, isAlive, pidFile, readPid, startWithHealthy, type Fleet } from './helpers.js';

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startWithHealthy((dir) => ({
    noisy: hostile(dir, 'noisy', 'garbage-stdout'),
    // Its junk must come before the timeout: room for a busy machine to start node and the SDK it imports.
    broken: hostile(dir, 'broken', 'garbage-stdout', { timeout_seconds: 5 }, '--broken-handshake'),
  }));
});
afterAll(async () => {
  if (fleet) await closeAndExpectNoChild(fleet, ['noisy', 'broken'].map((name) => readPid(pidFile(fleet.dir, name))));
});

describe('garbage on stdout', () => {
  test('junk before and after the handshake and mid-session is skipped: the server is ready and answers right', async () => {
    expect(fleet.host.server('noisy')).toMatchObject({ state: 'ready', error: null, tool_count: 1 });
    for (const text of ['first', 'second', 'third']) {
      const [result] = await Promise.all([fleet.host.callTool('noisy__garbage', { text }), expectStillServing(fleet, text)]);
      // Not the junk response to id 987654, not a half object: the answer to this call.
      expect(result).toMatchObject({ details: { is_error: false }, content: [{ type: 'text', text }] });
    }
    expect(fleet.host.server('noisy')).toMatchObject({ state: 'ready', error: null });
  });

  test('a server that answers initialize with junk only is an error of kind protocol saying so, and is stopped', async () => {
    const view = fleet.host.server('broken')!;
    expect(view).toMatchObject({ state: 'error', error_kind: 'protocol' });
    expect(view.error).toMatch(/^no valid answer to initialize within 5s: the server wrote \d+ line\(s\) on stdout that are not JSON-RPC \(last: /);
    expect(view.error).toContain('stdout must carry only MCP messages');
    expect(isAlive(readPid(pidFile(fleet.dir, 'broken')))).toBe(false);
    await expectStillServing(fleet);
  });
});
