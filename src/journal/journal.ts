import { createListeners, firstAfter, type EventStore } from './event-store.js';
import type { JournalEvent, JournalEventInput } from './events.js';
import { createProjection, emptyProjection, project, type Projection } from './projection.js';

export interface JournalOptions {
  store: EventStore;
  /** Told when the store refuses an append or a snapshot; the journal goes on. */
  onWriteError?: (error: Error) => void;
  /** Told when a subscriber throws (the other subscribers are told all the same); default `onWriteError`. */
  onSubscriberError?: (error: Error) => void;
  /** Events kept in memory for `since()`; older ones are read from the store. */
  maxInMemory?: number;
  /**
   * Also bounds memory by what the kept events list: each counts 1 plus its
   * names (a 5,000-tool registration counts 5,001), so a big catalog that
   * changes often cannot fill memory with registrations. The newest event is
   * always kept.
   */
  maxInMemoryEntries?: number;
  /**
   * In a store the fleet shares (PostgreSQL), this worker's id: only events
   * it wrote (or without a `worker`) are folded into the projection, while
   * subscribers, `since` and `read` get every worker's. The events `load()`
   * gives (this worker's only) then do not start the in-memory window, which
   * holds the fleet's events from `open` on. Unset: every event is folded.
   */
  ownWorker?: string;
}

export interface Journal {
  /** Loads the store, folds snapshot + tail into the projection, then appends one run-boundary event (`worker.started`). Call once before anything else. */
  open(): Promise<void>;
  /**
   * Fire-and-forget append in call order; the projection sees it at once for
   * local stores. Never throws. Appends before `open` wait for it (after
   * `worker.started`); appends after `close` are dropped.
   */
  append(event: JournalEventInput): void;
  /** Resolves when everything appended so far is stored and projected (at once before `open`). */
  flushed(): Promise<void>;
  /** Whether some of this worker's appends are not in the projection yet (a shared store tells them once stored; a local one at once). */
  readonly behind: boolean;
  /** Events kept in memory with seq > since (a bounded window: maxInMemory / maxInMemoryEntries). Synchronous. */
  since(since?: number): JournalEvent[];
  /** Events with seq > since, at most `limit`: from memory when the window reaches back that far, else from the store (which says `gone` when compacted). */
  read(since: number, limit?: number): Promise<JournalEvent[] | { gone: number }>;
  subscribe(listener: (event: JournalEvent) => void): () => void;
  readonly lastSeq: number;
  /** The status views, folded from every event (an `@xstate/store`). */
  readonly projection: Projection;
  /** Waits for pending appends and snapshots, then closes the store. */
  close(): Promise<void>;
}

/**
 * The journal the host writes to: appends go to the event store, whose
 * events feed the projection, a bounded in-memory window and subscribers.
 * A snapshot of the projection is handed to the store whenever it asks for
 * one, so the next start folds only what came after.
 */
/** Retries of events a store refused while away: from this, doubling up to `MAX_RETRY_MS`. */
const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 5_000;
/** Events kept for a store that is away; beyond, the oldest are dropped (and that is said). */
const MAX_WAITING = 10_000;

/** A refusal because the store is away (a shared database down): worth trying again, unlike any other. */
function isStoreAway(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'database_unavailable';
}

export function createJournal(options: JournalOptions): Journal {
  const { store } = options;
  const maxInMemory = options.maxInMemory ?? 10_000;
  const maxEntries = options.maxInMemoryEntries ?? 200_000;
  const report = (error: unknown) => options.onWriteError?.(error instanceof Error ? error : new Error(String(error)));
  const projection = createProjection();
  const listeners = createListeners((error) => {
    const failure = error instanceof Error ? error : new Error(String(error));
    if (options.onSubscriberError === undefined) report(failure);
    else options.onSubscriberError(failure);
  });
  const events: JournalEvent[] = [];
  let entries = 0;
  let phase: 'new' | 'opening' | 'open' | 'closed' = 'new';
  let opening: Promise<void> = Promise.resolve();
  /** Appended before `open`: they belong to this run, after its `worker.started`. */
  const early: JournalEventInput[] = [];
  /** Settles once every append so far has. */
  let stored: Promise<unknown> = Promise.resolve();
  let snapshotting: Promise<void> | null = null;
  let unsubscribe = () => {};

  function keep(event: JournalEvent): void {
    events.push(event);
    entries += entriesOf(event);
    // shift() lets go of the dropped event at once (V8 trims the array's front in place).
    while (events.length > 1 && (events.length > maxInMemory || entries > maxEntries)) {
      entries -= entriesOf(events.shift() as JournalEvent);
    }
  }

  /** This worker's appends not received back yet. */
  let unseen = 0;

  function receive(event: JournalEvent): void {
    if (options.ownWorker === undefined || event.worker === undefined || event.worker === options.ownWorker) {
      projection.apply(event);
      unseen = Math.max(0, unseen - 1);
    }
    keep(event);
    listeners.tell([event]);
  }

  /**
   * Events a shared store refused because it was away (its database down),
   * oldest first: kept and stored again once it answers, so what happened
   * meanwhile reaches the views and the history late, not never. Later
   * events queue behind them, so the order holds.
   */
  const waiting: JournalEventInput[] = [];
  let retry: NodeJS.Timeout | undefined;
  let retryMs = FIRST_RETRY_MS;

  function write(input: JournalEventInput): void {
    if (waiting.length > 0) return hold(input);
    unseen += 1;
    let appended: Promise<unknown>;
    try {
      appended = store.append([input]);
    } catch (error) {
      appended = Promise.reject(error);
    }
    // A refused append never comes back: it is not awaited as unseen.
    const settled = appended.catch((error: unknown) => {
      unseen = Math.max(0, unseen - 1);
      if (isStoreAway(error) && phase === 'open') {
        // Said once per outage: the first refusal.
        if (waiting.length === 0) report(error);
        hold(input);
      } else report(error);
    });
    stored = stored.then(() => settled);
    if (store.wantsSnapshot) takeSnapshot();
  }

  function hold(input: JournalEventInput): void {
    waiting.push(input);
    if (waiting.length > MAX_WAITING) {
      waiting.splice(0, waiting.length - MAX_WAITING);
      report(new Error(`more than ${MAX_WAITING} events waited for the store: the oldest were dropped`));
    }
    if (retry === undefined) {
      retry = setTimeout(storeWaiting, retryMs);
      retry.unref();
    }
  }

  /** Stores the waiting events in one append, or waits longer (doubling up to `MAX_RETRY_MS`). */
  function storeWaiting(): void {
    const batch = waiting.splice(0);
    store.append(batch).then(
      () => {
        retry = undefined;
        retryMs = FIRST_RETRY_MS;
        // What was appended while this one was under way.
        if (waiting.length > 0) storeWaiting();
      },
      (error: unknown) => {
        waiting.unshift(...batch);
        retry = undefined;
        if (phase !== 'open' || !isStoreAway(error)) {
          report(error);
          return;
        }
        retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
        retry = setTimeout(storeWaiting, retryMs);
        retry.unref();
      },
    );
  }

  function takeSnapshot(): void {
    if (snapshotting) return;
    // For a local store the projection is at the store's lastSeq here; its own `lastSeq` says which seq it is at in any case.
    const state = projection.context;
    snapshotting = store
      .saveSnapshot({ seq: state.lastSeq, at: new Date().toISOString(), state })
      .catch(report)
      .finally(() => {
        snapshotting = null;
      });
  }

  async function open(): Promise<void> {
    const { snapshot, events: tail } = await store.load();
    // One fold, one notification: a snapshot plus its tail, not one store update per event.
    projection.restore(tail.reduce(project, snapshot?.state ?? emptyProjection()));
    // Another worker's events fall between a shared store's own ones: the window must not skip them.
    if (options.ownWorker === undefined) for (const event of tail) keep(event);
    unsubscribe = store.subscribe(receive);
    phase = 'open';
    write({ type: 'worker.started', pid: process.pid });
    for (const input of early.splice(0)) write(input);
  }

  return {
    open() {
      if (phase !== 'new') return Promise.reject(new Error('the journal is already open'));
      phase = 'opening';
      opening = open();
      return opening;
    },
    append(input) {
      if (phase === 'open') write(input);
      else if (phase !== 'closed') early.push(input);
    },
    async flushed() {
      await stored;
    },
    get behind() {
      return unseen > 0;
    },
    since(since = 0) {
      return events.slice(firstAfter(events, since));
    },
    read(since, limit = Infinity) {
      // The window holds every event from its first to the last: it answers whatever starts inside it,
      // unless the store compacted that part away (then the store's answer, `gone`, is the same as after a restart).
      const compacted = store.oldestSeq !== undefined && since < store.lastSeq && since + 1 < store.oldestSeq;
      if (events.length > 0 && (events[0] as JournalEvent).seq <= since + 1 && !compacted) {
        const start = firstAfter(events, since);
        return Promise.resolve(events.slice(start, start + limit));
      }
      return store.read(since, limit);
    },
    subscribe: listeners.add,
    get lastSeq() {
      return store.lastSeq;
    },
    projection,
    async close() {
      await opening.catch(() => {});
      phase = 'closed';
      clearTimeout(retry);
      if (waiting.length > 0) report(new Error(`${waiting.length} events could not be stored before the journal closed: the store stayed away`));
      await stored;
      await snapshotting;
      unsubscribe();
      await store.close();
    },
  };
}

/** What an event weighs in memory: 1, plus the names it lists. */
function entriesOf(event: JournalEvent): number {
  switch (event.type) {
    case 'tools.registered':
    case 'tools.unregistered':
      return 1 + event.tools.length;
    case 'catalog.changed':
      return 1 + event.added.length + event.removed.length + event.changed.length;
    case 'resources.listed':
      return 1 + event.resources.length + event.templates.length;
    case 'prompts.listed':
      return 1 + event.prompts.length;
    default:
      return 1;
  }
}
