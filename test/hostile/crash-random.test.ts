// A server that crashes at a random point of a call (before answering, after
// a progress notification, halfway through writing its answer) after a random
// delay: the call fails at once with the exit code and the stderr tail, the
// server goes to `error` (transport_closed) and comes back with a new process,
// the old one gone. The worker keeps serving meanwhile.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { closeAndExpectNoChild, expectStillServing, hostile, isAlive, pidFile, readPid, startWithHealthy, untilState, type Fleet } from './helpers.js';

let fleet: Fleet;
const pids: number[] = [];
const pidOfCrashy = () => readPid(pidFile(fleet.dir, 'crashy'));
beforeAll(async () => {
  fleet = await startWithHealthy((dir) => ({
    crashy: hostile(dir, 'crashy', 'crash-random', {
      reconnect: { max_attempts: 10, initial_delay_seconds: 0.05, max_delay_seconds: 0.1 },
    }),
  }));
});
afterAll(async () => {
  if (fleet) await closeAndExpectNoChild(fleet, [...pids, pidOfCrashy()]);
});

describe('a crash at a random point of a call', () => {
  // Each point once, then one left to chance.
  test.each(['before-answer', 'after-progress', 'mid-answer', undefined])('point: %s', async (point) => {
    await untilState(fleet.host, 'crashy', 'ready');
    const pid = pidOfCrashy();
    pids.push(pid);
    const seq = fleet.host.events().at(-1)!.seq;
    const progress: unknown[] = [];
    const call = fleet.host
      .callTool('crashy__work', point === undefined ? {} : { point }, { onProgress: (p) => progress.push(p) })
      // Where the journal stood when the caller heard of the crash.
      .then((answer) => ({ answer, states: statesSince(seq) }));
    const [{ answer: result, states }] = await Promise.all([call, expectStillServing(fleet, `crash ${point}`)]);
    // The failed call answers only once the server has left `ready`.
    expect(states[0]).toBe('error');

    expect(result.details.is_error).toBe(true);
    const text = (result.content[0] as { text: string }).text;
    expect(text).toMatch(/^call to tool "work" failed: process exited with code \d+: /);
    const [, said] = text.match(/crash-random: crashing (\S+) with code (\d+)/) ?? [];
    if (point !== undefined) expect(said).toBe(point);
    if (said === 'after-progress') expect(progress).toHaveLength(1);

    expect(await untilGone(pid)).toBe(true);
    // It left `ready` before the call answered: the next `ready` is the reconnect's.
    await untilState(fleet.host, 'crashy', 'ready');
    expect(statesSince(seq)).toEqual(['error', 'pending', 'ready']);
    expect(pidOfCrashy()).not.toBe(pid);
    expect(await fleet.host.callTool('crashy__ok', {})).toMatchObject({ content: [{ type: 'text', text: 'ok' }] });
  });

  test('every crash went through error (transport_closed)', () => {
    const errors = fleet.host
      .events()
      .filter((event) => event.type === 'server.transitioned' && event.server === 'crashy' && event.to === 'error');
    expect(errors).toHaveLength(4);
    for (const event of errors) expect(event).toMatchObject({ error_kind: 'transport_closed' });
  });
});

/** Where crashy went after journal position `seq`. */
function statesSince(seq: number): string[] {
  return fleet.host
    .events(seq)
    .flatMap((event) => (event.type === 'server.transitioned' && event.server === 'crashy' ? [event.to] : []));
}

/** The crashed process is gone (it is reaped as the server leaves ready). */
async function untilGone(pid: number): Promise<boolean> {
  const deadline = Date.now() + 15_000;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return !isAlive(pid);
}
