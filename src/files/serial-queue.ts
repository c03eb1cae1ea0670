/**
 * Runs async tasks one after another per key: writes to one file, changes to
 * one server. Tasks of different keys run independently.
 */
export interface SerialQueue {
  /**
   * Runs `task` once every earlier task of `key` has settled, and resolves or
   * rejects as it does. A failed task does not hold back the next one.
   */
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
  /** A task of `key` is running or waiting. False again by the time the caller of the last one resumes. */
  busy(key: string): boolean;
  /** Resolves once no task of `key` is running or waiting. */
  idle(key: string): Promise<void>;
}

export function createSerialQueue(): SerialQueue {
  /** The last task of each busy key, settled either way (never rejects); an idle key has no entry. */
  const tails = new Map<string, Promise<void>>();

  function run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const result = (tails.get(key) ?? Promise.resolve()).then(task);
    // Attached before the caller can await `result`, so the entry is gone when the caller resumes;
    // only the last task clears it (a later one has replaced the tail).
    const settled = (): void => {
      if (tails.get(key) === tail) tails.delete(key);
    };
    const tail = result.then(settled, settled);
    tails.set(key, tail);
    return result;
  }

  async function idle(key: string): Promise<void> {
    // A task queued while we waited extends the tail: wait for that one too.
    for (let tail = tails.get(key); tail !== undefined; tail = tails.get(key)) await tail;
  }

  return { run, busy: (key) => tails.has(key), idle };
}
