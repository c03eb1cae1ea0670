import { appendFileSync, mkdirSync, renameSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import _mitt from 'mitt';
import type { JournalEvent, JournalEventInput } from './events.js';

const mitt = _mitt as unknown as typeof _mitt.default;

export interface JournalOptions {
  /** Where to append (`<state_dir>/events.jsonl`); looked up on every append. `null` keeps it in memory only. */
  file: () => string | null;
  /** Rotate the file to `<file>.1` once it grows past this many bytes. */
  maxFileBytes?: number;
  /** Events kept in memory for `events(since)`; older ones stay only on disk. */
  maxInMemory?: number;
  /**
   * Also bounds memory by what the kept events list: each counts 1 plus its
   * names (a 5,000-tool registration counts 5,001), so a big catalog that
   * changes often cannot fill memory with registrations. The newest event is
   * always kept.
   */
  maxInMemoryEntries?: number;
  /** Told when the file cannot be written; the journal goes on in memory. */
  onWriteError?: (error: Error) => void;
}

export interface Journal {
  append(event: JournalEventInput): JournalEvent;
  /** Events with `seq > since`, oldest first. */
  since(since?: number): JournalEvent[];
  subscribe(listener: (event: JournalEvent) => void): () => void;
  readonly lastSeq: number;
}

/**
 * The append-only record of every transition and registration. Writes are
 * synchronous so the file order is the `seq` order, and they happen only on
 * lifecycle changes, never per tool call.
 */
export function createJournal(options: JournalOptions): Journal {
  const maxFileBytes = options.maxFileBytes ?? 5 * 1024 * 1024;
  const maxInMemory = options.maxInMemory ?? 10_000;
  const maxEntries = options.maxInMemoryEntries ?? 200_000;
  const emitter = mitt<{ event: JournalEvent }>();
  const events: JournalEvent[] = [];
  let entries = 0;
  let seq = 0;

  function keep(event: JournalEvent): void {
    events.push(event);
    entries += entriesOf(event);
    // shift() lets go of the dropped event at once (V8 trims the array's front in place).
    while (events.length > 1 && (events.length > maxInMemory || entries > maxEntries)) {
      entries -= entriesOf(events.shift() as JournalEvent);
    }
  }

  function persist(event: JournalEvent): void {
    const file = options.file();
    if (!file) return;
    try {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      rotateIfFull(file, maxFileBytes);
      appendFileSync(file, `${JSON.stringify(event)}\n`, { mode: 0o600 });
    } catch (error) {
      options.onWriteError?.(error as Error);
    }
  }

  return {
    append(input) {
      const event = { ...input, seq: ++seq, at: new Date().toISOString() } as JournalEvent;
      keep(event);
      persist(event);
      emitter.emit('event', event);
      return event;
    },
    since(since = 0) {
      // `seq` grows along the array: find the first event after `since` by bisection.
      let low = 0;
      let high = events.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if ((events[middle] as JournalEvent).seq > since) high = middle;
        else low = middle + 1;
      }
      return events.slice(low);
    },
    subscribe(listener) {
      const handler = (event: JournalEvent) => listener(event);
      emitter.on('event', handler);
      return () => emitter.off('event', handler);
    },
    get lastSeq() {
      return seq;
    },
  };
}

function rotateIfFull(file: string, maxBytes: number): void {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return;
  }
  if (size >= maxBytes) renameSync(file, `${file}.1`);
}

/** What an event weighs in memory: 1, plus the names it lists. */
function entriesOf(event: JournalEvent): number {
  switch (event.type) {
    case 'tools.registered':
    case 'tools.unregistered':
      return 1 + event.tools.length;
    case 'catalog.changed':
      return 1 + event.added.length + event.removed.length + event.changed.length;
    default:
      return 1;
  }
}
