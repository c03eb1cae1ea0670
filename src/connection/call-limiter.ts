/**
 * Bounds how many calls run at once on one server (`max_concurrent_calls`).
 * The rest wait in FIFO order; a waiter whose signal aborts leaves
 * the queue at once without ever taking a slot.
 */

/** A call that was cancelled by its AbortSignal, queued or running. */
export class AbortError extends Error {
  override readonly name = 'AbortError';
}

/** True for an {@link AbortError} or a DOM-style abort (`name === 'AbortError'`). */
export function isAbortError(err: unknown): boolean {
  return err instanceof AbortError || (err instanceof Error && err.name === 'AbortError');
}

export interface CallLimiter {
  /** Runs `task` once a slot is free; rejects with an {@link AbortError} if `signal` aborts while waiting. */
  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T>;
  /** Tasks running now. */
  readonly active: number;
  /** Tasks queued for a slot. */
  readonly waiting: number;
  /** Changes the bound; raising it starts waiters at once, lowering it lets running tasks finish. */
  setMax(max: number): void;
}

interface Waiter {
  start: () => void;
}

/** Creates a limiter that runs at most `max` tasks at once, the rest in FIFO order. */
export function createCallLimiter(max: number): CallLimiter {
  return new Limiter(max);
}

/** A class, not closures: every ready server keeps one, and most never queue a call. */
class Limiter implements CallLimiter {
  private limit: number;
  private running = 0;
  // A Set keeps insertion order (FIFO) and removes an aborted waiter in O(1); made when a call first waits.
  private queue: Set<Waiter> | null = null;

  constructor(max: number) {
    this.limit = checkMax(max);
  }

  get active(): number {
    return this.running;
  }

  get waiting(): number {
    return this.queue?.size ?? 0;
  }

  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(signal);
    try {
      return await task();
    } finally {
      this.running -= 1;
      this.startNext();
    }
  }

  setMax(next: number): void {
    this.limit = checkMax(next);
    this.startNext();
  }

  private startNext(): void {
    const queue = this.queue;
    if (queue === null) return;
    while (this.running < this.limit) {
      const next = queue.values().next();
      if (next.done) return;
      queue.delete(next.value);
      next.value.start();
    }
  }

  private acquire(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortError('call was cancelled before it started'));
    if (this.running < this.limit && this.waiting === 0) {
      this.running += 1;
      return Promise.resolve();
    }
    return this.wait(signal);
  }

  /** A slot once the calls before this one have had theirs. */
  private wait(signal: AbortSignal | undefined): Promise<void> {
    const queue = (this.queue ??= new Set());
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        queue.delete(waiter);
        reject(new AbortError('call was cancelled while waiting for a free slot'));
      };
      const waiter: Waiter = {
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          this.running += 1;
          resolve();
        },
      };
      queue.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function checkMax(max: number): number {
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`max must be an integer >= 1, got ${max}`);
  return max;
}
