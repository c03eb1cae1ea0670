// A server that answers tools/call with a response that is no valid JSON-RPC
// (`"result": null`, a result that is a string, an error without a code): the
// call ends at once with an error result saying the answer was malformed,
// rather than waiting out its call timeout for an answer that was dropped,
// and the server stays ready.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { closeAndExpectNoChild, expectStillServing, hostile, pidFile, readPid, startWithHealthy, type Fleet } from './helpers.js';

let fleet: Fleet;
beforeAll(async () => {
  // A call timeout far above what the test waits: only an answer at once passes.
  fleet = await startWithHealthy((dir) => ({ bad: hostile(dir, 'bad', 'malformed-answer', { call_timeout_seconds: 60 }) }));
});
afterAll(async () => {
  if (fleet) await closeAndExpectNoChild(fleet, [readPid(pidFile(fleet.dir, 'bad'))]);
});

test.each([
  ['null_result', 'its result is not a valid JSON-RPC result (result: expected object, received null)'],
  ['text_result', 'its result is not a valid JSON-RPC result (result: expected object, received string)'],
  ['bad_error', 'its error is not a valid JSON-RPC error (error.code: expected number, received undefined)'],
])('an answer of %s is an error result at once, saying it was malformed', async (tool, why) => {
  const began = Date.now();
  const result = await fleet.host.callTool(`bad__${tool}`, {});
  expect(Date.now() - began).toBeLessThan(5_000);
  expect(result).toMatchObject({
    content: [{ type: 'text', text: `tool "${tool}" failed: the server's answer was malformed: ${why}` }],
    details: { is_error: true, server: 'bad', tool },
  });
  expect(fleet.host.server('bad')?.state).toBe('ready');
  expect(await fleet.host.callTool('bad__ok', {})).toMatchObject({ content: [{ type: 'text', text: 'ok' }], details: { is_error: false } });
  await expectStillServing(fleet);
}, 20_000);
