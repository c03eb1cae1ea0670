import { describe, expect, it } from 'vitest';
import { createSerialQueue } from '../../src/files/serial-queue.js';

/** A promise settled from outside, and whether the task holding it has started. */
function gate<T = void>() {
  let open!: (value: T) => void;
  let fail!: (error: Error) => void;
  const promise = new Promise<T>((resolve, reject) => ((open = resolve), (fail = reject)));
  return { promise, open, fail };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('createSerialQueue', () => {
  it('runs the tasks of one key one after another, in call order', async () => {
    const queue = createSerialQueue();
    const log: string[] = [];
    const gates = [gate(), gate(), gate()];
    const runs = gates.map((g, i) =>
      queue.run('k', async () => {
        log.push(`start ${i}`);
        await g.promise;
        log.push(`end ${i}`);
        return i;
      }),
    );
    await tick();
    expect(log).toEqual(['start 0']);
    // Finishing the later gates first changes nothing: 1 and 2 have not started.
    gates[2]!.open();
    gates[1]!.open();
    await tick();
    expect(log).toEqual(['start 0']);
    gates[0]!.open();
    expect(await Promise.all(runs)).toEqual([0, 1, 2]);
    expect(log).toEqual(['start 0', 'end 0', 'start 1', 'end 1', 'start 2', 'end 2']);
  });

  it('runs different keys side by side', async () => {
    const queue = createSerialQueue();
    const held = gate();
    const a = queue.run('a', () => held.promise.then(() => 'a'));
    const b = queue.run('b', async () => 'b');
    expect(await b).toBe('b');
    expect(queue.busy('a')).toBe(true);
    held.open();
    expect(await a).toBe('a');
  });

  it('a failure reaches its own caller only and does not block the next task', async () => {
    const queue = createSerialQueue();
    const failing = gate();
    const first = queue.run('k', () => failing.promise);
    const thrower = queue.run('k', () => {
      throw new Error('thrown synchronously');
    });
    const next = queue.run('k', async () => 'next');
    failing.fail(new Error('first failed'));
    await expect(first).rejects.toThrow('first failed');
    await expect(thrower).rejects.toThrow('thrown synchronously');
    expect(await next).toBe('next');
  });

  it('leaves no entry behind: busy only while a task of the key is running or waiting', async () => {
    const queue = createSerialQueue();
    expect(queue.busy('k')).toBe(false);
    const held = gate();
    const first = queue.run('k', () => held.promise);
    const second = queue.run('k', async () => 'second');
    expect(queue.busy('k')).toBe(true);
    held.open();
    await first;
    // The second task still runs (or waits): the entry stays until the last tail settles.
    expect(queue.busy('k')).toBe(true);
    await second;
    expect(queue.busy('k')).toBe(false);

    await expect(queue.run('k', () => Promise.reject(new Error('x')))).rejects.toThrow('x');
    expect(queue.busy('k')).toBe(false);

    // Many keys, all settled: nothing is kept for any of them.
    await Promise.all(Array.from({ length: 100 }, (_, i) => queue.run(`key-${i}`, async () => i)));
    expect(Array.from({ length: 100 }, (_, i) => queue.busy(`key-${i}`)).some(Boolean)).toBe(false);
  });
});
