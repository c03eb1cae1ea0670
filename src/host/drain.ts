/**
 * Work that outlives the actor that started it and must still finish before
 * a shutdown resolves: a connect abandoned mid-handshake closes its child in
 * the background. Nothing here is keyed by server: it only counts what is left.
 */
export interface Drain {
  /** Tracks `work` until it settles; returns it. */
  add<T>(work: Promise<T>): Promise<T>;
  /** Resolves once every tracked piece of work has settled (including any added meanwhile). */
  empty(): Promise<void>;
}

export function createDrain(): Drain {
  const running = new Set<Promise<unknown>>();
  return {
    add(work) {
      const settled: Promise<unknown> = work.then(
        () => running.delete(settled),
        () => running.delete(settled),
      );
      running.add(settled);
      return work;
    },
    async empty() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}
