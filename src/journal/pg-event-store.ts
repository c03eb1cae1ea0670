/**
 * The event store the fleet shares: the `events` and `snapshots` tables of
 * the PostgreSQL that several workers use (`--database-url`).
 *
 * - One history: every event gets a global `seq` (1, 2, 3… across workers)
 *   and the `worker` that wrote it. `seq` is assigned inside the append's
 *   transaction under an advisory lock, so seq order is commit order and has
 *   no gaps: a reader that has seen seq N never later finds a new one ≤ N.
 *   Each `append` call is all or none; appends made while a transaction
 *   commits share the next one (a burst costs a few round trips); they run
 *   one after another, so its seq order is its call order.
 * - Subscribers are told every event of the fleet, own and others', in seq
 *   order, each once: an append commits with `NOTIFY mcp_fleet_events`, and
 *   every store LISTENs on a connection of its own and reads what it was not
 *   told yet. A journal folds only its own worker's events into its
 *   projection (`JournalOptions.ownWorker`); the others' are for readers
 *   (`GET /api/mcp/events`, the SSE stream).
 * - `load()` gives this worker's snapshot and its own events after it.
 * - Nothing is pruned in this version: other workers may still need any event
 *   (`read` never answers `gone` unless rows were deleted by hand).
 * - The listening connection comes back by itself (backoff 250 ms doubling to
 *   5 s) and then reads everything after the last event told: nothing is
 *   lost, nothing told twice. An append while the database is away rejects
 *   with `DatabaseUnavailableError`. A database that comes back without
 *   events it had committed gives their seqs again: the store then tells
 *   from there again (`rewind`), so new events are not taken as told.
 */
import { createHash } from 'node:crypto';
import { DatabaseUnavailableError, isConnectionError, withTransaction, type Database } from '../fleet/database.js';
import { createRetry, listen, type Listening } from '../fleet/pg-listen.js';
import { createListeners, type EventStore, type JournalSnapshot } from './event-store.js';
import type { JournalEvent, JournalEventInput } from './events.js';

export interface PgEventStoreOptions {
  /** The shared database, migrated; the caller owns it (`close()` leaves it open). */
  db: Database;
  /** This worker's id: written with each of its events and naming its snapshot. Unique among live workers. */
  workerId: string;
  /** Told of what goes wrong outside an append (the listening connection lost, a read failed): once per run of failures. */
  onError?: (error: Error) => void;
  /** `wantsSnapshot` once this many of this worker's own events were told since its last snapshot (default 1000). */
  snapshotEvery?: number;
}

export interface PgEventStore extends EventStore {
  readonly workerId: string;
}

/** The channel appends NOTIFY with the last seq they stored. */
export const EVENTS_CHANNEL = 'mcp_fleet_events';

/** The advisory lock appends take to assign seq: sha256('mcp-fleet:events')'s first 8 bytes, as migrations.ts does. */
export const EVENTS_LOCK_KEY: string = createHash('sha256').update('mcp-fleet:events').digest().readBigInt64BE(0).toString();

/** Events read per query when catching up. */
const READ_BATCH = 1000;

/** A stored row's event, stamp first. */
function eventOf(row: { event: unknown }): JournalEvent {
  // jsonb sorts keys by length: put the stamp first again, as the other stores write it.
  const { seq, at, worker, ...rest } = row.event as JournalEvent;
  return { seq: Number(seq), at, worker, ...rest } as JournalEvent;
}

export function createPgEventStore(options: PgEventStoreOptions): PgEventStore {
  const { db, workerId } = options;
  const snapshotEvery = options.snapshotEvery ?? 1000;
  const listeners = createListeners(report);

  /** The highest seq told to subscribers (the global max at `load()`). */
  let told = 0;
  /** Own events stored but not yet told, by seq: told without a read once their turn comes. */
  const known = new Map<number, JournalEvent>();
  /** The history's end an append found below `told` (the database lost events); rewound to by the next tell. */
  let lostAfter: number | null = null;
  /** Reads and tells, one after another. */
  let telling: Promise<void> = Promise.resolve();
  let ownSinceSnapshot = 0;
  let ownTold = 0;
  let loaded = false;
  /** `close()` was called: no append starts. */
  let closing = false;
  /** Pending appends are through: nothing is told any more. */
  let closed = false;
  const pending = new Set<Promise<unknown>>();
  /** This store's appends, one transaction after another: seq order is call order (the journal relies on it). */
  let appending: Promise<unknown> = Promise.resolve();
  let closeDone: Promise<void> | undefined;

  /** The LISTEN connection (database/listen.ts), from `load()` on. */
  let listening: Listening | null = null;
  const retry = createRetry(() => void recover());
  /** A failure was told: the next is not, until something succeeds. */
  let failing = false;

  function report(error: unknown): void {
    options.onError?.(error instanceof Error ? error : new Error(String(error)));
  }

  /** One message per run of failures; then read again after the backoff. */
  function trouble(error: unknown): void {
    if (!failing) {
      failing = true;
      report(
        isConnectionError(error)
          ? new DatabaseUnavailableError(db.url, { cause: error })
          : new Error(`the event store of worker ${workerId} could not read events: ${messageOf(error)}`, { cause: error }),
      );
    }
    if (closed || retry.waiting) return;
    retry.schedule();
  }

  async function recover(): Promise<void> {
    if (closed) return;
    try {
      await tellUpTo(Infinity);
      failing = false;
      retry.succeeded();
    } catch (error) {
      trouble(error);
    }
  }

  function onNotification(payload: string): void {
    const seq = Number(payload);
    // Before `load()` sets `told`, the read after it finds these events.
    if (!loaded || closed || !Number.isSafeInteger(seq)) return;
    tellUpTo(seq).catch(trouble);
  }

  function tell(event: JournalEvent): void {
    told = event.seq;
    if (event.worker === workerId) {
      ownTold += 1;
      ownSinceSnapshot += 1;
    }
    listeners.tell([event]);
  }

  /** Tells the own events whose turn it is. */
  function tellKnown(): void {
    for (let next = known.get(told + 1); next !== undefined; next = known.get(told + 1)) {
      known.delete(next.seq);
      tell(next);
    }
    for (const seq of known.keys()) if (seq <= told) known.delete(seq);
  }

  /**
   * The database came back without events it had committed and this store
   * had told (a crash with `synchronous_commit = off`, a failover to a standby
   * that lagged, a restore): their seqs are given again to new events. Told
   * from `to` on again, so those reach the subscribers instead of being taken
   * for events already told; what was told of the lost ones stays told.
   */
  function rewind(to: number): void {
    report(
      new Error(
        `the event store of worker ${workerId}: the database has lost events it had committed (seq ${to + 1} to ${told}); ` +
          'the events stored from now on are told with the seqs given again',
      ),
    );
    told = to;
    for (const seq of known.keys()) if (seq > to) known.delete(seq);
  }

  /**
   * Tells every event up to `needed` (Infinity: all there is), in seq order:
   * own ones from memory when it is their turn, the rest read. Queued behind
   * any earlier call; rejects if a read fails (what is told stays told).
   */
  function tellUpTo(needed: number, own: readonly JournalEvent[] = []): Promise<void> {
    const step = telling.then(async function catchUp() {
      // A catch-up (a reconnect, a retry) first asks whether the history still reaches what was told.
      if (needed === Infinity && !closed) {
        const { rows } = await db.pool.query<{ last: string }>('select coalesce(max(seq), 0)::text as last from events');
        const last = Number(rows[0]?.last ?? 0);
        if (last < told) rewind(last);
      }
      // An append of this store found the history shorter than what was told.
      if (lostAfter !== null) {
        if (lostAfter < told) rewind(lostAfter);
        lostAfter = null;
      }
      for (const event of own) if (event.seq > told) known.set(event.seq, event);
      tellKnown();
      while (told < needed && !closed) {
        const { rows } = await db.pool.query<{ event: unknown }>(
          'select event from events where seq > $1 order by seq limit $2',
          [told, READ_BATCH],
        );
        for (const row of rows) {
          const event = eventOf(row);
          if (event.seq > told) tell(event);
        }
        tellKnown();
        if (rows.length < READ_BATCH) break;
      }
    });
    telling = step.catch(() => {});
    return step;
  }

  async function load(): Promise<{ snapshot: JournalSnapshot | null; events: JournalEvent[] }> {
    if (loaded) throw new Error('the event store is already loaded');
    try {
      const max = await db.pool.query<{ last: string }>('select coalesce(max(seq), 0)::text as last from events');
      const last = Number(max.rows[0]?.last ?? 0);
      const saved = await db.pool.query<{ seq: string; at: Date; state: JournalSnapshot['state'] }>(
        'select seq::text as seq, at, state from snapshots where worker = $1',
        [workerId],
      );
      const row = saved.rows[0];
      const snapshot: JournalSnapshot | null = row ? { seq: Number(row.seq), at: row.at.toISOString(), state: row.state } : null;
      const own = await db.pool.query<{ event: unknown }>(
        'select event from events where worker = $1 and seq > $2 and seq <= $3 order by seq',
        [workerId, snapshot?.seq ?? 0, last],
      );
      const events = own.rows.map(eventOf);
      told = last;
      ownSinceSnapshot = events.length;
      // Listening before anything is told; what is committed meanwhile is read below. A LISTEN
      // that fails now is told to trouble() and retried; its reconnect catches up by reading.
      listening ??= listen(db, EVENTS_CHANNEL, onNotification, {
        applicationName: db.pool.options.application_name,
        onError: trouble,
        onReconnect: () => void tellUpTo(Infinity).catch(trouble),
      });
      await listening.started;
      loaded = true;
      // What was committed between the max above and LISTEN. Told after the
      // caller subscribes: a read answers in a later turn of the event loop.
      tellUpTo(Infinity).catch(trouble);
      return { snapshot, events };
    } catch (error) {
      throw isConnectionError(error) ? new DatabaseUnavailableError(db.url, { cause: error }) : error;
    }
  }

  /** One transaction: the lock, the seqs after the last, the rows, the NOTIFY (sent at commit). */
  async function store(inputs: readonly JournalEventInput[]): Promise<JournalEvent[]> {
    try {
      return await withTransaction(db.pool, async function insertEvents(client) {
        await client.query('select pg_advisory_xact_lock($1::bigint)', [EVENTS_LOCK_KEY]);
        // A statement after the lock: its snapshot sees every append committed before.
        const { rows } = await client.query<{ last: string; now: Date }>(
          'select coalesce(max(seq), 0)::text as last, clock_timestamp() as now from events',
        );
        const last = Number(rows[0]?.last ?? 0);
        // Every event told was committed, and none commits past the lock meanwhile: fewer now means some were lost.
        if (last < told) lostAfter = Math.min(lostAfter ?? last, last);
        const at = (rows[0]?.now ?? new Date()).toISOString();
        let events = inputs.map((input, index) => {
          const seq = last + index + 1;
          // Assigned last as well, so an input carrying a stale stamp cannot override it.
          return Object.assign({ seq, at, worker: workerId }, input, { seq, at, worker: workerId }) as JournalEvent;
        });
        let text = JSON.stringify(events);
        // jsonb refuses U+0000 (a server's log line may carry one): stored as U+FFFD, and told as stored.
        if (text.includes('\\u0000')) {
          text = JSON.stringify(events, (_key, value: unknown) =>
            typeof value === 'string' ? value.replaceAll('\u0000', '\uFFFD') : value,
          );
          events = JSON.parse(text) as JournalEvent[];
        }
        await client.query(
          `insert into events (seq, worker, at, event)
           select (e->>'seq')::bigint, $2, $3, e from jsonb_array_elements($1::jsonb) as e`,
          [text, workerId, at],
        );
        await client.query('select pg_notify($1, $2)', [EVENTS_CHANNEL, String(last + events.length)]);
        return events;
      });
    } catch (error) {
      throw isConnectionError(error) ? new DatabaseUnavailableError(db.url, { cause: error }) : error;
    }
  }

  /** Appends waiting for the next transaction: every append made while one commits goes into the next one. */
  let queued: Array<{ inputs: readonly JournalEventInput[]; resolve: (events: JournalEvent[]) => void; reject: (error: unknown) => void }> = [];

  /**
   * Stores `inputs` in the next transaction, with whatever else was appended
   * meanwhile: a burst (a startup of 200 servers) is a few transactions, not
   * one per event. Call order is kept; each append is still all or none.
   */
  function enqueue(inputs: readonly JournalEventInput[]): Promise<JournalEvent[]> {
    return new Promise((resolve, reject) => {
      queued.push({ inputs, resolve, reject });
      if (queued.length === 1) appending = appending.then(storeQueued);
    });
  }

  async function storeQueued(): Promise<void> {
    const taken = queued;
    queued = [];
    try {
      const events = await store(taken.flatMap((entry) => entry.inputs));
      let from = 0;
      for (const entry of taken) {
        entry.resolve(events.slice(from, from + entry.inputs.length));
        from += entry.inputs.length;
      }
    } catch (error) {
      for (const entry of taken) entry.reject(error);
    }
  }

  /** Waits for pending appends, stops telling and ends the listening connection; the database stays open. */
  async function closeStore(): Promise<void> {
    closing = true;
    // Appends under way finish (and are told); none start.
    await Promise.allSettled([...pending]);
    closed = true;
    retry.cancel();
    await telling;
    await listening?.();
  }

  return {
    workerId,
    load,
    append(inputs) {
      if (!loaded || closing) return Promise.reject(new Error(`the event store is ${closing ? 'closed' : 'not loaded'}`));
      if (inputs.length === 0) return Promise.resolve([]);
      const stored = enqueue(inputs);
      const appended = (async function appendEvents() {
        const events = await stored;
        // Stored: if the read that tells them fails, they are told once the store catches up.
        await tellUpTo((events.at(-1) as JournalEvent).seq, events).catch(trouble);
        return events;
      })();
      const forget = () => pending.delete(appended);
      pending.add(appended);
      appended.then(forget, forget);
      return appended;
    },
    async read(since, limit = Infinity) {
      if (limit <= 0) return [];
      try {
        const { rows } = await db.pool.query<{ event: unknown }>(
          'select event from events where seq > $1 order by seq limit $2',
          [since, Number.isFinite(limit) ? limit : null],
        );
        const events = rows.map(eventOf);
        if (events[0]?.seq === since + 1) return events;
        // Nothing right after `since`: were the events there deleted?
        const bounds = await db.pool.query<{ oldest: string | null; newest: string | null }>(
          'select min(seq)::text as oldest, max(seq)::text as newest from events',
        );
        const oldest = bounds.rows[0]?.oldest;
        const newest = Number(bounds.rows[0]?.newest ?? 0);
        if (oldest != null && since + 1 < Number(oldest) && since < newest) return { gone: Number(oldest) };
        return events;
      } catch (error) {
        throw isConnectionError(error) ? new DatabaseUnavailableError(db.url, { cause: error }) : error;
      }
    },
    subscribe: listeners.add,
    get lastSeq() {
      return told;
    },
    async saveSnapshot(snapshot) {
      if (snapshot.seq > told) throw new RangeError(`snapshot at seq ${snapshot.seq} is past the last event (${told})`);
      const ownBefore = ownTold;
      try {
        // Never replaced by an older one (a slow save finishing after a newer).
        await db.pool.query(
          `insert into snapshots (worker, seq, at, state) values ($1, $2, $3, $4)
           on conflict (worker) do update set seq = excluded.seq, at = excluded.at, state = excluded.state
           where snapshots.seq <= excluded.seq`,
          [workerId, snapshot.seq, snapshot.at, JSON.stringify(snapshot.state)],
        );
      } catch (error) {
        throw isConnectionError(error) ? new DatabaseUnavailableError(db.url, { cause: error }) : error;
      }
      ownSinceSnapshot = ownTold - ownBefore;
    },
    get wantsSnapshot() {
      return ownSinceSnapshot >= snapshotEvery;
    },
    close() {
      closeDone ??= closeStore();
      return closeDone;
    },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
