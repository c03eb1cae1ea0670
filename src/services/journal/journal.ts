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
  const emitter = mitt<{ event: JournalEvent }>();
  let events: JournalEvent[] = [];
  let seq = 0;

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
      events.push(event);
      if (events.length > maxInMemory) events = events.slice(-maxInMemory);
      persist(event);
      emitter.emit('event', event);
      return event;
    },
    since(since = 0) {
      const start = events.findIndex((event) => event.seq > since);
      return start === -1 ? [] : events.slice(start);
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
