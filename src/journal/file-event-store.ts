/**
 * The default event store: `<state_dir>/journal/`, owner-only.
 *
 * - `segments/<first seq, 16 digits>.jsonl`: events as JSON lines, `seq`
 *   first; a new segment once the current one reaches `maxSegmentBytes`.
 * - `snapshot.json`: the projection as of some `seq`, written atomically.
 *   After it, segments holding only events it covers are deleted, but the
 *   newest `keepSegments` stay, so a reader resuming from a recent `seq`
 *   still finds its events.
 *
 * `seq` grows for the life of the state dir: `load()` continues after the
 * last stored event. A crash can leave the newest segment's last line torn;
 * `load()` cuts it off and goes on.
 *
 * The journal written before this store, `<state_dir>/events.jsonl` (and its
 * rotated `.1`), is left where it is and only read for its last `seq`, which
 * the first segment continues (so an SSE client of the old worker resumes
 * without a repeat). Its events are not moved in: `seq` restarted with each
 * run of the old journal, so they do not fit a store where it only grows.
 *
 * Appends assign `seq` and tell subscribers at once; lines are written after,
 * in order, batched, by one writer, in a later turn of the event loop. A
 * write is durable against the process dying, not fsynced per batch (that
 * would put a disk flush on every lifecycle change); the newest segment is
 * fsynced before each snapshot that covers it.
 */
import { write } from 'node:fs';
import { chmod, open, readdir, readFile, rm, truncate, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { journalDir, journalPath } from '../config/paths.js';
import { writeOwnerOnly } from '../files/owner-only-file.js';
import { createListeners, stamp, type EventStore, type JournalSnapshot } from './event-store.js';
import type { JournalEvent } from './events.js';
import { makeDirs } from '../files/make-dirs.js';
import { claimPidLock } from '../files/pid-lock.js';

export interface FileEventStoreOptions {
  stateDir: string;
  /** A new segment starts once the current one holds this many bytes (default 4 MiB). */
  maxSegmentBytes?: number;
  /** Segments kept after a snapshot even when it covers them (default 2, at least 1). */
  keepSegments?: number;
  /** `wantsSnapshot` once this many bytes were stored since the last snapshot (default `maxSegmentBytes`). */
  snapshotEveryBytes?: number;
  /**
   * Told when the store cannot write (once per run of failures: after a
   * success, the next failure is told again) or finds stored data it cannot
   * read. The store never throws these: it goes on, its events in memory.
   */
  onWriteError?: (error: Error) => void;
  /**
   * Refuse to load while another writer holds this journal: another host in
   * this process, or a live process (`journal/writer.lock`, its pid). Two
   * writers would each number their events from the same `seq`. A host's
   * store is exclusive; a reader of the files needs not be.
   */
  exclusive?: boolean;
}

/** The journals the stores of this process hold exclusively, by their lock file. */
const heldHere = new Set<string>();

/** Another writer holds the journal of a state dir. */
export class JournalInUseError extends Error {
  override readonly name = 'JournalInUseError';
  constructor(stateDir: string, holder: number | 'this process') {
    super(
      holder === 'this process'
        ? `the journal of ${stateDir} is in use by another host in this process: give each host its own state dir`
        : `the journal of ${stateDir} is in use by process ${holder} (a worker or host on the same state dir): give each its own state dir`,
    );
  }
}

const SEGMENT = /^(\d{16})\.jsonl$/;
const segmentName = (first: number) => `${String(first).padStart(16, '0')}.jsonl`;
/** A stored line's `seq` without parsing the line (`stamp` puts it first). */
const SEQ_PREFIX = /^\{"seq":(\d+)[,}]/;

export function createFileEventStore(options: FileEventStoreOptions): EventStore {
  const dir = journalDir(options.stateDir);
  const segmentsDir = path.join(dir, 'segments');
  const snapshotFile = path.join(dir, 'snapshot.json');
  const maxSegmentBytes = options.maxSegmentBytes ?? 4 * 1024 * 1024;
  const keepSegments = Math.max(1, options.keepSegments ?? 2);
  const snapshotEveryBytes = options.snapshotEveryBytes ?? maxSegmentBytes;
  const report = (error: unknown) => options.onWriteError?.(error instanceof Error ? error : new Error(String(error)));
  const segmentFile = (first: number) => path.join(segmentsDir, segmentName(first));
  const listeners = createListeners();

  /** First `seq` of each segment on disk, oldest first. */
  let segments: number[] = [];
  /** The segment being written: its size as written, its open handle (null until needed again). */
  let current: { first: number; size: number; handle: FileHandle | null } | null = null;
  let lastSeq = 0;
  /** Bytes stored of events after the latest snapshot asked for. */
  let storedSinceSnapshot = 0;
  let snapshotSeq = 0;
  let loaded = false;
  let closed = false;
  let dirsReady = false;
  /** A write failed: only a success re-arms the report. */
  let failing = false;
  /** The current segment may end in a partial line (a failed write): the next write ends it first. */
  let tornEnd = false;
  let queue: JournalEvent[] = [];
  /** The writer: drains and snapshots, one after another. */
  let chain: Promise<void> = Promise.resolve();
  let drainScheduled = false;

  async function prepareDirs(): Promise<void> {
    if (dirsReady) return;
    await makeDirs(segmentsDir, 0o700);
    // mkdir's mode does not narrow directories that already existed.
    await chmod(dir, 0o700);
    await chmod(segmentsDir, 0o700);
    dirsReady = true;
  }

  async function startSegment(first: number): Promise<void> {
    await prepareDirs();
    const handle = await open(segmentFile(first), 'a', 0o600);
    await current?.handle?.close().catch(() => {});
    segments.push(first);
    current = { first, size: 0, handle };
    tornEnd = false;
  }

  /** Appends `lines` (each without its newline; `bytes` counts them with it) as one buffer. */
  async function writeToCurrent(lines: readonly string[], bytes: number): Promise<void> {
    const segment = current as NonNullable<typeof current>;
    if (segment.handle === null) {
      await prepareDirs();
      segment.handle = await open(segmentFile(segment.first), 'a', 0o600);
    }
    // A partial line left by a failed write is ended, so the next line stands alone (and the partial one is skipped).
    const prefix = tornEnd ? 1 : 0;
    // Each line encoded straight into one buffer: no joined text, and no copy of it for the write.
    const buffer = Buffer.allocUnsafe(prefix + bytes);
    let at = 0;
    if (prefix === 1) buffer[at++] = NEWLINE;
    for (const line of lines) {
      at += buffer.write(line, at, 'utf8');
      buffer[at++] = NEWLINE;
    }
    const fd = segment.handle.fd;
    for (let written = 0; written < buffer.length; ) written += await writeFrom(fd, buffer, written);
    segment.size += bytes + prefix;
    tornEnd = false;
  }

  async function writeBatch(batch: readonly JournalEvent[]): Promise<void> {
    let lines: string[] = [];
    let bytes = 0;
    for (const event of batch) {
      if (current === null || current.size + bytes >= maxSegmentBytes) {
        if (lines.length > 0) await writeToCurrent(lines, bytes);
        lines = [];
        bytes = 0;
        await startSegment(event.seq);
      }
      const line = JSON.stringify(event);
      const lineBytes = Buffer.byteLength(line) + 1;
      lines.push(line);
      bytes += lineBytes;
      if (event.seq > snapshotSeq) storedSinceSnapshot += lineBytes;
    }
    if (lines.length > 0) await writeToCurrent(lines, bytes);
  }

  async function drain(): Promise<void> {
    drainScheduled = false;
    const batch = queue;
    queue = [];
    try {
      await writeBatch(batch);
      failing = false;
    } catch (error) {
      if (!failing) report(error);
      failing = true;
      tornEnd = true;
      // Reopened on the next write; a broken handle is not reused.
      await current?.handle?.close().catch(() => {});
      if (current) current.handle = null;
    }
  }

  /**
   * The writer runs after the current turn of the event loop and the I/O it
   * has waiting (`setImmediate`), not as a microtask of the code that
   * appended: serializing a batch (a 5,000-tool registration is ~750 KB) never
   * runs inside the turn that journals a change, and every event appended in
   * that turn goes out in one write.
   */
  function scheduleDrain(): Promise<void> {
    if (!drainScheduled) {
      drainScheduled = true;
      chain = chain.then(nextTurn).then(drain);
    }
    return chain;
  }

  /** Deletes the oldest segments whose every event is at or below `seq`, keeping the newest `keepSegments`. */
  async function dropCoveredSegments(seq: number): Promise<void> {
    while (segments.length > keepSegments && (segments[1] as number) - 1 <= seq) {
      const first = segments.shift() as number;
      await rm(segmentFile(first), { force: true });
    }
  }

  let releaseWriter: (() => Promise<void>) | undefined;
  /** Takes `journal/writer.lock` for this store, or throws naming who holds it. */
  async function claimWriter(): Promise<void> {
    const lock = path.join(dir, 'writer.lock');
    if (heldHere.has(lock)) throw new JournalInUseError(options.stateDir, 'this process');
    heldHere.add(lock);
    try {
      await makeDirs(dir, 0o700);
      const claimed = await claimPidLock(lock);
      if (claimed.holder !== null) throw new JournalInUseError(options.stateDir, claimed.holder);
      releaseWriter = async () => {
        heldHere.delete(lock);
        await claimed.release();
      };
    } catch (error) {
      heldHere.delete(lock);
      throw error;
    }
  }

  async function load(): Promise<{ snapshot: JournalSnapshot | null; events: JournalEvent[] }> {
    if (options.exclusive === true) await claimWriter();
    const snapshot = await readSnapshot();
    segments = await listSegments();
    const after = snapshot?.seq ?? 0;
    const events: JournalEvent[] = [];
    let bytes = 0;
    // The segment holding `after + 1`, and every later one.
    const start = Math.max(0, segments.findLastIndex((first) => first <= after + 1));
    for (let index = start; index < segments.length; index += 1) {
      const first = segments[index] as number;
      const newest = index === segments.length - 1;
      let content: Buffer;
      try {
        content = await readFile(segmentFile(first));
      } catch (error) {
        // Its events are lost to this run; its name still bounds `seq` below.
        report(error);
        continue;
      }
      // Everything after the last newline is a line torn by a crash.
      const end = content.lastIndexOf(0x0a) + 1;
      if (newest && end < content.length) await cutTornTail(first, end);
      for (const line of content.subarray(0, end).toString('utf8').split('\n')) {
        const event = parseLine(line, first);
        if (event === null || event.seq <= (events.at(-1)?.seq ?? after)) continue;
        events.push(event);
        bytes += Buffer.byteLength(line) + 1;
      }
      if (newest) current = { first, size: end, handle: null };
    }
    const newestFirst = segments.at(-1);
    lastSeq = Math.max(
      after,
      events.at(-1)?.seq ?? 0,
      // A segment is named by its first event: even if its lines were lost, that seq was given out.
      newestFirst === undefined ? 0 : newestFirst - 1,
      newestFirst === undefined && snapshot === null ? await lastLegacySeq(options.stateDir) : 0,
    );
    storedSinceSnapshot = bytes;
    snapshotSeq = after;
    loaded = true;
    return { snapshot, events };
  }

  async function cutTornTail(first: number, keepBytes: number): Promise<void> {
    try {
      await truncate(segmentFile(first), keepBytes);
    } catch (error) {
      report(error);
      // Appends would join the torn piece: end it on a fresh line instead.
      tornEnd = true;
    }
  }

  /** An event of a stored line; null for a blank or unreadable one (a torn line mid-segment after a failed write is told). */
  function parseLine(line: string, segment: number): JournalEvent | null {
    if (line === '') return null;
    try {
      const event = JSON.parse(line) as JournalEvent;
      if (Number.isInteger(event?.seq)) return event;
    } catch {
      // Told below.
    }
    report(new Error(`journal segment ${segmentName(segment)}: an unreadable line was skipped`));
    return null;
  }

  async function readSnapshot(): Promise<JournalSnapshot | null> {
    let text: string;
    try {
      text = await readFile(snapshotFile, 'utf8');
    } catch (error) {
      if (!absent(error)) report(error);
      return null;
    }
    try {
      const snapshot = JSON.parse(text) as JournalSnapshot;
      if (Number.isInteger(snapshot?.seq) && snapshot.state) return snapshot;
    } catch {
      // Told below.
    }
    report(new Error('journal snapshot.json is unreadable: the projection is folded from the stored events only'));
    return null;
  }

  async function listSegments(): Promise<number[]> {
    let names: string[];
    try {
      names = await readdir(segmentsDir);
    } catch (error) {
      if (!absent(error)) report(error);
      return [];
    }
    return names
      .map((name) => SEGMENT.exec(name)?.[1])
      .filter((first): first is string => first !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
  }

  async function read(since: number, limit = Infinity): Promise<JournalEvent[] | { gone: number }> {
    // Everything appended before this call is on disk once the writer is through (unless a write failed).
    await chain;
    if (since >= lastSeq || limit <= 0) return [];
    const oldest = segments[0] ?? lastSeq + 1;
    if (since + 1 < oldest) return { gone: oldest };
    const out: JournalEvent[] = [];
    const listed = [...segments];
    for (let index = Math.max(0, listed.findLastIndex((first) => first <= since + 1)); index < listed.length; index += 1) {
      const first = listed[index] as number;
      let text: string;
      try {
        text = await readFile(segmentFile(first), 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        // A snapshot dropped it meanwhile: answer as of the segments now on disk.
        if (!segments.includes(first)) return read(since, limit);
        // Deleted behind the store's back: its events are lost, the others are still worth reading.
        continue;
      }
      for (const line of text.split('\n')) {
        const seq = Number(SEQ_PREFIX.exec(line)?.[1] ?? NaN);
        // Only lines past `since` are parsed; torn or blank ones are skipped.
        if (!(seq > since) || seq <= (out.at(-1)?.seq ?? since)) continue;
        const event = parseQuietly(line);
        if (event === null) continue;
        out.push(event);
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  return {
    load,
    append(inputs) {
      if (!loaded || closed) return Promise.reject(new Error(`the event store is ${closed ? 'closed' : 'not loaded'}`));
      const events = stamp(inputs, lastSeq);
      lastSeq += events.length;
      queue.push(...events);
      listeners.tell(events);
      return scheduleDrain().then(() => events);
    },
    read,
    subscribe: listeners.add,
    get lastSeq() {
      return lastSeq;
    },
    get oldestSeq() {
      return segments[0] ?? lastSeq + 1;
    },
    saveSnapshot(snapshot) {
      if (snapshot.seq > lastSeq) {
        return Promise.reject(new RangeError(`snapshot at seq ${snapshot.seq} is past the last event (${lastSeq})`));
      }
      storedSinceSnapshot = 0;
      snapshotSeq = Math.max(snapshotSeq, snapshot.seq);
      // On the writer's chain: after the lines it covers, before any later ones.
      chain = chain.then(async () => {
        try {
          await current?.handle?.sync();
          await writeOwnerOnly(snapshotFile, JSON.stringify(snapshot), report);
          await dropCoveredSegments(snapshot.seq);
        } catch (error) {
          report(error);
        }
      });
      return chain;
    },
    get wantsSnapshot() {
      return storedSinceSnapshot >= snapshotEveryBytes;
    },
    async close() {
      closed = true;
      await chain;
      await current?.handle?.close().catch(report);
      if (current) current.handle = null;
      await releaseWriter?.();
      releaseWriter = undefined;
    },
  };
}

const NEWLINE = 0x0a;

/**
 * Writes `buffer` from `offset` to `fd`, resolving with the bytes written.
 * The callback form: the handle's promise form costs a request with its own
 * stats array, a reference count and a result object per write. Only the
 * writer writes, one write at a time, and the handle is closed only after.
 */
function writeFrom(fd: number, buffer: Buffer, offset: number): Promise<number> {
  return new Promise((resolve, reject) => {
    write(fd, buffer, offset, buffer.length - offset, null, (error, written) => (error ? reject(error) : resolve(written)));
  });
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Nothing is stored there (yet); the first write says what is wrong with the path, if anything. */
function absent(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function parseQuietly(line: string): JournalEvent | null {
  try {
    return JSON.parse(line) as JournalEvent;
  } catch {
    return null;
  }
}

/**
 * The `seq` of the last whole event in the journal file written before this
 * store (`events.jsonl`, else its rotated `.1`), read backwards from the end
 * in chunks: the file can be megabytes, one registration line hundreds of KiB.
 */
async function lastLegacySeq(stateDir: string): Promise<number> {
  for (const file of [journalPath(stateDir), `${journalPath(stateDir)}.1`]) {
    const seq = await lastSeqOf(file);
    if (seq > 0) return seq;
  }
  return 0;
}

async function lastSeqOf(file: string): Promise<number> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch {
    return 0;
  }
  try {
    let end = (await handle.stat()).size;
    // Bytes after the last newline seen so far; at the very end of the file, a torn line.
    let carry = Buffer.alloc(0);
    let atEnd = true;
    while (end > 0) {
      const start = Math.max(0, end - 64 * 1024);
      const chunk = Buffer.alloc(end - start);
      await handle.read(chunk, 0, chunk.length, start);
      const buffer = Buffer.concat([chunk, carry]);
      // Splitting bytes at '\n' is safe in UTF-8: no multi-byte character contains that byte.
      let lineEnd = atEnd ? buffer.lastIndexOf(0x0a) : buffer.length;
      if (lineEnd === -1) {
        // Still inside the torn tail: keep looking for the file's last newline.
        end = start;
        continue;
      }
      atEnd = false;
      while (lineEnd > 0) {
        const lineStart = buffer.lastIndexOf(0x0a, lineEnd - 1) + 1;
        if (lineStart === 0 && start > 0) break;
        const seq = parseQuietly(buffer.subarray(lineStart, lineEnd).toString('utf8'))?.seq;
        if (Number.isInteger(seq)) return seq as number;
        lineEnd = lineStart - 1;
      }
      carry = buffer.subarray(0, Math.max(0, lineEnd));
      end = start;
    }
    return 0;
  } finally {
    await handle.close();
  }
}
