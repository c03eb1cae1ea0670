import { describe, expect, it } from 'vitest';
import { AbortError, createCallLimiter, isAbortError } from '../../src/connection/call-limiter.js';

/** A task the test finishes by hand, recording when it started. */
function deferredTask(log: string[], id: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    task: async () => {
      log.push(`start ${id}`);
      await done;
      log.push(`end ${id}`);
      return id;
    },
    finish: () => finish(),
  };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('createCallLimiter', () => {
  it('runs at most max tasks at once and starts waiters in FIFO order', async () => {
    const limiter = createCallLimiter(2);
    const log: string[] = [];
    const tasks = ['a', 'b', 'c', 'd', 'e'].map((id) => deferredTask(log, id));
    const results = tasks.map((t) => limiter.run(t.task));
    await tick();
    expect(log).toEqual(['start a', 'start b']);
    expect([limiter.active, limiter.waiting]).toEqual([2, 3]);

    tasks[1]!.finish();
    await tick();
    expect(log.slice(2)).toEqual(['end b', 'start c']);
    tasks[0]!.finish();
    await tick();
    expect(log.slice(4)).toEqual(['end a', 'start d']);
    for (const t of tasks) t.finish();
    expect(await Promise.all(results)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect([limiter.active, limiter.waiting]).toEqual([0, 0]);
  });

  it('with max 1 never overlaps two tasks', async () => {
    const limiter = createCallLimiter(1);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        limiter.run(async () => {
          running += 1;
          peak = Math.max(peak, running);
          order.push(i);
          await new Promise((resolve) => setTimeout(resolve, 5));
          running -= 1;
        }),
      ),
    );
    expect(peak).toBe(1);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('drops a waiter whose signal aborts, without it taking a slot', async () => {
    const limiter = createCallLimiter(1);
    const log: string[] = [];
    const first = deferredTask(log, 'first');
    const skipped = deferredTask(log, 'skipped');
    const last = deferredTask(log, 'last');
    const controller = new AbortController();

    const running = limiter.run(first.task);
    const aborted = limiter.run(skipped.task, controller.signal);
    const after = limiter.run(last.task);
    await tick();
    expect(limiter.waiting).toBe(2);

    controller.abort();
    await expect(aborted).rejects.toBeInstanceOf(AbortError);
    expect(limiter.waiting).toBe(1);
    expect(limiter.active).toBe(1);

    first.finish();
    last.finish();
    await Promise.all([running, after]);
    expect(log).toEqual(['start first', 'end first', 'start last', 'end last']);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const limiter = createCallLimiter(4);
    let ran = false;
    const error = await limiter.run(async () => (ran = true), AbortSignal.abort()).catch((err: unknown) => err);
    expect(isAbortError(error)).toBe(true);
    expect(ran).toBe(false);
    expect(limiter.active).toBe(0);
  });

  it('frees the slot when a task throws', async () => {
    const limiter = createCallLimiter(1);
    await expect(limiter.run(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await limiter.run(async () => 'next')).toBe('next');
    expect(limiter.active).toBe(0);
  });

  it('setMax raises the bound and starts waiters at once', async () => {
    const limiter = createCallLimiter(1);
    const log: string[] = [];
    const tasks = ['a', 'b', 'c'].map((id) => deferredTask(log, id));
    const results = tasks.map((t) => limiter.run(t.task));
    await tick();
    expect(log).toEqual(['start a']);
    limiter.setMax(3);
    await tick();
    expect(log).toEqual(['start a', 'start b', 'start c']);
    for (const t of tasks) t.finish();
    await Promise.all(results);
    expect(() => limiter.setMax(0)).toThrow(RangeError);
  });
});
