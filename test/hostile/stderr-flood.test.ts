// A server that writes 50 MB to stderr as fast as the pipe takes it: the
// worker drains it while serving, keeps only a short tail (what an error
// message shows), and holds no more memory once it is over.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TAIL_CHARS } from '../../src/connection/stderr-tail.js';
import {
  closeAndExpectNoChild,
  expectStillServing,
  hostile,
  isAlive,
  pidFile,
  readPid,
  startWithHealthy,
  untilState,
  type Fleet,
} from './helpers.js';

let fleet: Fleet;
let pid: number;
beforeAll(async () => {
  fleet = await startWithHealthy((dir) => ({ chatty: hostile(dir, 'chatty', 'stderr-flood') }));
  pid = readPid(pidFile(fleet.dir, 'chatty'));
});
afterAll(async () => {
  if (fleet) await closeAndExpectNoChild(fleet, [pid]);
});

describe('a flood of stderr', () => {
  // The memory it leaves held is measured by bench/suites/bounds.js.
  test('50 MB is drained while the worker serves', async () => {
    const flood = fleet.host.callTool('chatty__flood', { mb: 50 });
    await expectStillServing(fleet, 'during the flood');
    // The call only ends once the child wrote everything: the worker kept reading.
    expect(await flood).toMatchObject({ details: { is_error: false }, content: [{ type: 'text', text: 'flooded 50 MB' }] });
    expect(fleet.host.server('chatty')).toMatchObject({ state: 'ready', error: null });
  });

  test('when the server then dies, its error carries a short tail ending with its last line', async () => {
    const result = await fleet.host.callTool('chatty__crash', {});
    expect(result.details.is_error).toBe(true);
    await untilState(fleet.host, 'chatty', 'error');
    const { error, error_kind } = fleet.host.server('chatty')!;
    expect(error_kind).toBe('transport_closed');
    expect(error).toMatch(/^process exited with code 3: /);
    expect(error).toContain('flood done 50');
    expect(error!.length).toBeLessThan(TAIL_CHARS + 200);
    expect(isAlive(pid)).toBe(false);
    await expectStillServing(fleet);
  });
});
