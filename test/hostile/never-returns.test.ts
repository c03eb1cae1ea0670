// Tools that never answer and ignore cancellation. A call is bounded by
// call_timeout_seconds and the server stays usable; a server whose event loop
// is stuck stops answering pings, goes to `error` (timeout) and is killed —
// with SIGKILL, as it ignores SIGTERM. The worker keeps serving meanwhile.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { allGone, closeAndExpectNoChild, expectStillServing, hostile, pidFile, readPid, startWithHealthy, untilState, type Fleet } from './helpers.js';

let fleet: Fleet;
let pid: number;
beforeAll(async () => {
  fleet = await startWithHealthy((dir) => ({
    // timeout_seconds bounds the connect and each ping: short, but not so short a busy machine fails the start.
    stuck: hostile(dir, 'stuck', 'never-returns', { call_timeout_seconds: 1, timeout_seconds: 3, ping_interval_seconds: 0.5 }),
  }));
  pid = readPid(pidFile(fleet.dir, 'stuck'));
});
afterAll(async () => {
  if (fleet) await closeAndExpectNoChild(fleet, [pid]);
});

describe('a tool that never returns', () => {
  test('the call ends after call_timeout_seconds with an error saying so; the server stays ready', async () => {
    const [result] = await Promise.all([fleet.host.callTool('stuck__hang', {}), expectStillServing(fleet, 'during the hang')]);
    expect(result).toMatchObject({
      details: { is_error: true },
      content: [{ type: 'text', text: 'tool "hang" did not answer within 1s' }],
    });
    expect(fleet.host.server('stuck')).toMatchObject({ state: 'ready', error: null });
    expect(await fleet.host.callTool('stuck__ok', {})).toMatchObject({ content: [{ type: 'text', text: 'ok' }] });
  });

  test('a server whose event loop is stuck is found by ping, goes to error (timeout) and is killed', async () => {
    const result = await fleet.host.callTool('stuck__spin', {});
    expect(result).toMatchObject({ details: { is_error: true } });
    await expectStillServing(fleet, 'while it spins');
    await untilState(fleet.host, 'stuck', 'error');
    expect(fleet.host.server('stuck')).toMatchObject({ error_kind: 'timeout' });
    // It ignores SIGTERM: only the SIGKILL after the grace period ends it.
    expect(await allGone([pid], 8_000)).toBe(true);
    await expectStillServing(fleet);
  });
});
