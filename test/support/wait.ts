// One way to wait for something a test cannot be told about: poll it, bounded.

/**
 * Resolves with what `read` returns once it is neither undefined nor false,
 * polling every 25 ms; rejects naming `what` after `timeoutMs`.
 */
export async function untilValue<T>(
  read: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Resolves once `predicate` holds; rejects naming `what` after `timeoutMs`. */
export async function until(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  await untilValue(predicate, what, timeoutMs);
}

/**
 * Resolves with `find()`'s first answer that is neither undefined nor false,
 * checked now and on every notification `subscribe` delivers (a journal, a
 * host's status): no polling. Rejects naming `what` after `timeoutMs`.
 */
export function waitForEvent<T>(
  subscribe: (listener: () => void) => () => void,
  find: () => T | undefined | false,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const found = find();
  if (found !== undefined && found !== false) return Promise.resolve(found);
  return new Promise<T>((resolve, reject) => {
    const unsubscribe = subscribe(() => {
      const value = find();
      if (value === undefined || value === false) return;
      clearTimeout(timer);
      unsubscribe();
      resolve(value);
    });
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`waited ${timeoutMs} ms for ${what}; it did not come`));
    }, timeoutMs);
  });
}
