import type { JournalEvent, JournalEventInput } from './events.js';
import type { ProjectionContext } from './projection.js';

/** The projection as of `seq`, saved so a reopened journal need not fold every event since the first. */
export interface JournalSnapshot {
  seq: number;
  at: string;
  /** Plain JSON. */
  state: ProjectionContext;
}

/**
 * Where journal events live (a durable event store: docs/lifecycle.md, The journal). Callers never
 * rely on `append` finishing synchronously: a store shared by several
 * processes (PostgreSQL) assigns `seq` only once stored. The local stores
 * (file, memory) do assign `seq` and tell subscribers before `append`'s first
 * await, so the in-process projection is current as soon as it is called, and
 * store afterwards: no write is on the event loop's path at startup.
 */
export interface EventStore {
  /** What is stored: the latest snapshot (or null) and every event after it, oldest first. Called once, before append. */
  load(): Promise<{ snapshot: JournalSnapshot | null; events: JournalEvent[] }>;
  /** Assigns seq (lastSeq+1…) and `at`, stores, tells subscribers in seq order; resolves once durable. */
  append(events: JournalEventInput[]): Promise<JournalEvent[]>;
  /** Events with seq > since, oldest first, at most `limit`; `{ gone: oldest }` when events after `since` were compacted away (oldest = the oldest seq still readable). */
  read(since: number, limit?: number): Promise<JournalEvent[] | { gone: number }>;
  subscribe(listener: (event: JournalEvent) => void): () => void;
  readonly lastSeq: number;
  /**
   * The oldest `seq` still stored, for a store that compacts events into
   * snapshots (absent: it never does). A journal that still holds older
   * events in memory answers from the store below it, so a page reads the
   * same before and after a restart.
   */
  readonly oldestSeq?: number;
  /** Saves the projection as of `snapshot.seq` (must be <= lastSeq) and drops stored events only it needs. */
  saveSnapshot(snapshot: JournalSnapshot): Promise<void>;
  /** Whether enough was appended since the last snapshot that one should be taken (the journal asks after appends). */
  readonly wantsSnapshot: boolean;
  /** Waits for pending writes; no append after. */
  close(): Promise<void>;
}

/**
 * Stamps inputs with the next `seq`s and one `at`: the local stores'
 * synchronous half of `append`. `seq` comes first, so a stored line's `seq`
 * can be read without parsing the line.
 */
export function stamp(inputs: readonly JournalEventInput[], lastSeq: number): JournalEvent[] {
  const at = new Date().toISOString();
  // Assigned last as well, so an input carrying a stale `seq` or `at` cannot override them.
  return inputs.map((input, index) => {
    const seq = lastSeq + index + 1;
    return Object.assign({ seq, at }, input, { seq, at }) as JournalEvent;
  });
}

/**
 * Subscribers, told synchronously in `seq` order. With `onError`, a listener
 * that throws is told there and the others are still told; without, the
 * error reaches the teller.
 */
export function createListeners(onError?: (error: unknown) => void) {
  const listeners = new Set<(event: JournalEvent) => void>();
  return {
    add(listener: (event: JournalEvent) => void): () => void {
      // A wrapper per subscription: the same function subscribed twice is told twice, as with mitt.
      const entry = (event: JournalEvent) => listener(event);
      listeners.add(entry);
      return () => {
        listeners.delete(entry);
      };
    },
    tell(events: readonly JournalEvent[]): void {
      // forEach, not for…of: every event is told twice (store, then journal), and a Set's
      // iterator and its result objects were most of what telling allocated.
      for (let index = 0; index < events.length; index += 1) {
        const event = events[index] as JournalEvent;
        if (onError === undefined) listeners.forEach((listener) => listener(event));
        else {
          listeners.forEach((listener) => {
            try {
              listener(event);
            } catch (error) {
              onError(error);
            }
          });
        }
      }
    },
  };
}

/** Index of the first event with `seq > since` in an array ordered by `seq`. */
export function firstAfter(events: readonly JournalEvent[], since: number): number {
  let low = 0;
  let high = events.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((events[middle] as JournalEvent).seq > since) high = middle;
    else low = middle + 1;
  }
  return low;
}

export interface MemoryEventStoreOptions {
  /** `wantsSnapshot` once this many events were appended since the last snapshot (default: never). */
  snapshotEvery?: number;
}

/**
 * A store in this process's memory, for tests and for a host that keeps no
 * journal on disk. A snapshot drops the events it covers, so `read` below it
 * answers `gone`, as the file store does once it drops segments.
 */
export function createMemoryEventStore(options: MemoryEventStoreOptions = {}): EventStore {
  const snapshotEvery = options.snapshotEvery ?? Infinity;
  const listeners = createListeners();
  let events: JournalEvent[] = [];
  let snapshot: JournalSnapshot | null = null;
  let lastSeq = 0;
  let sinceSnapshot = 0;
  let closed = false;

  return {
    async load() {
      return { snapshot, events: events.slice(firstAfter(events, snapshot?.seq ?? 0)) };
    },
    append(inputs) {
      if (closed) return Promise.reject(new Error('the event store is closed'));
      const stamped = stamp(inputs, lastSeq);
      lastSeq += stamped.length;
      sinceSnapshot += stamped.length;
      events.push(...stamped);
      listeners.tell(stamped);
      return Promise.resolve(stamped);
    },
    async read(since, limit = Infinity) {
      const oldest = events[0]?.seq ?? lastSeq + 1;
      if (since < lastSeq && since + 1 < oldest) return { gone: oldest };
      const start = firstAfter(events, since);
      return events.slice(start, start + limit);
    },
    subscribe: listeners.add,
    get lastSeq() {
      return lastSeq;
    },
    get oldestSeq() {
      return events[0]?.seq ?? lastSeq + 1;
    },
    async saveSnapshot(next) {
      if (next.seq > lastSeq) throw new RangeError(`snapshot at seq ${next.seq} is past the last event (${lastSeq})`);
      // Through JSON, as a stored snapshot: what does not survive it would not survive a restart.
      snapshot = JSON.parse(JSON.stringify(next)) as JournalSnapshot;
      sinceSnapshot = lastSeq - next.seq;
      events = events.slice(firstAfter(events, next.seq));
    },
    get wantsSnapshot() {
      return sinceSnapshot >= snapshotEvery;
    },
    async close() {
      closed = true;
    },
  };
}
