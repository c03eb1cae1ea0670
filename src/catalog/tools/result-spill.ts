/**
 * Where tool results above `max_result_bytes` are kept whole (`large_results:
 * "spill"`), for the `read_result` tool to page through: one owner-only file
 * per result in `<state_dir>/results/`, written whole (temp file + rename).
 *
 * A file's name says all the store needs to know of it, so a restarted worker
 * rebuilds its index from a directory listing:
 * `<server>.<kept at ms>.<expires at ms>.<id>.<owner>.txt`. Server names, ids
 * and owners have no `.`. The id is 128 random bits (base64url): holding it is
 * what allows a read, so it must not be guessable. The owner is the principal
 * whose call gave the result, as the SHA-256 of their id (base64url: no name
 * on disk, any id fits): only they may read it, to anyone else it is unknown,
 * so an id that reaches another user (a shared transcript, a log) reads nothing.
 * A file of an older run without an owner is the admin's.
 *
 * Offsets and lengths count UTF-8 bytes of the kept text (the unit of
 * `max_result_bytes`); a page never splits a character.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmod, open, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { SERVER_NAME_PATTERN } from '../../config/schema.js';
import { writeOwnerOnly } from '../../files/owner-only-file.js';
import { ADMIN_PRINCIPAL } from '../../users/principal.js';
import { createSerialQueue } from '../../files/serial-queue.js';
import { makeDirs } from '../../files/make-dirs.js';

/** How long a server's results are kept, and how much of them. */
export interface KeepLimits {
  /** Seconds a result stays readable, counted from when it is kept. */
  ttlSeconds: number;
  /** Bytes the server's results may take together; the oldest are removed first to stay below. */
  maxBytes: number;
}

/** A result just kept. */
export interface KeptResult {
  /** Opaque, unguessable: the only way to read the result. */
  id: string;
  /** Its size in UTF-8 bytes. */
  bytes: number;
}

/** One page of a kept result. */
export interface ResultPage {
  text: string;
  /** Byte offset of `text` in the result: the one asked for, moved back to the start of a character if it fell inside one. */
  offset: number;
  /** Bytes of `text`; `offset + length` is where the next page starts. */
  length: number;
  /** Bytes of the whole result. */
  total: number;
  /** Whether this page reaches the end. */
  done: boolean;
}

export interface ResultSpill {
  /**
   * Keeps `text` as a result of `server` for `principal` (the id of whose call gave it; the admin's when absent);
   * first removes what expired and, if needed, the server's oldest results.
   */
  keep(server: string, text: string, limits: KeepLimits, principal?: string): Promise<KeptResult>;
  /**
   * Up to `length` bytes from `offset` (at least one whole character unless at the end), for `principal` (the admin
   * when absent); rejects with a {@link ResultSpillError}: `unknown_id` for a result kept for someone else.
   */
  read(id: string, offset: number, length: number, principal?: string): Promise<ResultPage>;
  /** Whether any result is readable now by `principal` (the admin when absent; of a previous run too, once the startup scan is done). */
  hasResults(principal?: string): boolean;
  /** Removes every expired result. */
  prune(): Promise<void>;
  /** Stops the pruning timer. */
  close(): void;
}

export interface ResultSpillOptions {
  /** The directory of the results (`<state_dir>/results`); created owner-only on the first keep. */
  dir: string;
  /** The clock, in ms since the epoch (default `Date.now`): expiry outlives the process. */
  now?: () => number;
  /** How often expired results are removed between keeps (default 60 s). */
  pruneIntervalMs?: number;
  /** Failures of pruning that nobody awaits (the timer's, the startup scan's). */
  onError?: (error: unknown) => void;
}

/** Why a keep or a read was refused: `unknown_id` (never kept, expired, or removed to make room), `out_of_range`, `too_large`. */
export class ResultSpillError extends Error {
  override readonly name = 'ResultSpillError';
  constructor(
    readonly kind: 'unknown_id' | 'out_of_range' | 'too_large',
    message: string,
  ) {
    super(message);
  }
}

const ID_PATTERN = /^[A-Za-z0-9_-]{22}$/;
const FILE_PATTERN = /^([A-Za-z0-9_-]{1,64})\.(\d+)\.(\d+)\.([A-Za-z0-9_-]{22})(?:\.([A-Za-z0-9_-]{43}))?\.txt$/;
/** How a result's file names its principal: the SHA-256 of the id, base64url. */
export function ownerOf(principal: string = ADMIN_PRINCIPAL): string {
  return createHash('sha256').update(principal, 'utf8').digest('base64url');
}
/** A temp of `writeOwnerOnly` for a result file: `.<file>.<pid>.<hex>.tmp`. */
const TEMP_PATTERN = /^\.(.+)\.\d+\.[0-9a-f]+\.tmp$/;

interface Entry {
  id: string;
  server: string;
  /** {@link ownerOf} the principal it was kept for. */
  owner: string;
  file: string;
  bytes: number;
  keptAt: number;
  expiresAt: number;
}

function parseFileName(file: string): Entry | undefined {
  const match = FILE_PATTERN.exec(file);
  if (!match) return undefined;
  const [, server, keptAt, expiresAt, id, owner] = match as unknown as [string, string, string, string, string, string | undefined];
  return { id, server, owner: owner ?? ownerOf(ADMIN_PRINCIPAL), file, bytes: 0, keptAt: Number(keptAt), expiresAt: Number(expiresAt) };
}

const isContinuation = (byte: number | undefined): boolean => byte !== undefined && (byte & 0xc0) === 0x80;

export function createResultSpill(options: ResultSpillOptions): ResultSpill {
  const { dir, now = Date.now, pruneIntervalMs = 60_000, onError = () => {} } = options;
  /** Every kept result by id, oldest first. */
  const entries = new Map<string, Entry>();
  // Keeps of one server run one at a time, so two at once cannot both fit under its total.
  const keeps = createSerialQueue();
  let dirReady: Promise<void> | null = null;

  /** The previous run's results: indexed, and removed once expired (with temps of writes that never finished). */
  async function scan(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (error) {
      // No directory yet: nothing was ever kept (it is made on the first keep, not here).
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    const found: Entry[] = [];
    for (const name of names) {
      const entry = parseFileName(name) ?? parseFileName(TEMP_PATTERN.exec(name)?.[1] ?? '');
      if (entry === undefined) continue;
      const file = path.join(dir, name);
      if (entry.expiresAt <= now()) await rm(file, { force: true });
      else if (entry.file === name) {
        entry.bytes = (await stat(file)).size;
        found.push(entry);
      }
      // A temp whose result has not expired yet may still be written by a live worker: left alone until then.
    }
    for (const entry of found.sort((a, b) => a.keptAt - b.keptAt)) entries.set(entry.id, entry);
  }
  // A failed scan is reported once; the store goes on with the results it keeps from now on.
  const scanned = scan().catch(onError);

  const timer = setInterval(() => void prune().catch(onError), pruneIntervalMs);
  // Pruning is housekeeping: it never keeps the process alive.
  timer.unref();

  /** Forgets `entry` first (a read from now on is refused), then removes its file. */
  async function remove(entry: Entry): Promise<void> {
    entries.delete(entry.id);
    await rm(path.join(dir, entry.file), { force: true });
  }

  async function prune(): Promise<void> {
    await scanned;
    const at = now();
    await Promise.all([...entries.values()].filter((entry) => entry.expiresAt <= at).map(remove));
  }

  function ensureDir(): Promise<void> {
    dirReady ??= (async () => {
      await makeDirs(dir, 0o700);
      // A directory that existed already (or a umask) may have left it readable by others.
      await chmod(dir, 0o700);
    })();
    // A failure is not remembered: the next keep tries again.
    dirReady.catch(() => (dirReady = null));
    return dirReady;
  }

  async function keep(server: string, text: string, { ttlSeconds, maxBytes }: KeepLimits, principal?: string): Promise<KeptResult> {
    if (!SERVER_NAME_PATTERN.test(server)) throw new RangeError(`not a server name: ${JSON.stringify(server)}`);
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > maxBytes) {
      throw new ResultSpillError('too_large', `a result of ${bytes} bytes is above results_max_bytes (${maxBytes}) of server "${server}"`);
    }
    return keeps.run(server, async () => {
      await prune();
      const own = [...entries.values()].filter((entry) => entry.server === server);
      let total = own.reduce((sum, entry) => sum + entry.bytes, bytes);
      // `entries` is oldest first.
      for (const oldest of own) {
        if (total <= maxBytes) break;
        total -= oldest.bytes;
        await remove(oldest);
      }
      await ensureDir();
      const id = randomBytes(16).toString('base64url');
      const keptAt = now();
      const expiresAt = keptAt + ttlSeconds * 1000;
      const owner = ownerOf(principal);
      const file = `${server}.${keptAt}.${expiresAt}.${id}.${owner}.txt`;
      await writeOwnerOnly(path.join(dir, file), text, onError);
      entries.set(id, { id, server, owner, file, bytes, keptAt, expiresAt });
      return { id, bytes };
    });
  }

  async function read(id: string, offset: number, length: number, principal?: string): Promise<ResultPage> {
    await scanned;
    const entry = ID_PATTERN.test(id) ? entries.get(id) : undefined;
    const unknown = () => new ResultSpillError('unknown_id', `no kept result "${id}": it is unknown or has expired`);
    // Another principal's result is not found, exactly as one never kept: the id confirms nothing.
    if (entry === undefined || entry.owner !== ownerOf(principal)) throw unknown();
    if (entry.expiresAt <= now()) {
      await remove(entry);
      throw unknown();
    }
    const total = entry.bytes;
    if (!Number.isInteger(offset) || offset < 0 || offset > total) {
      throw new ResultSpillError('out_of_range', `offset ${offset} is outside result "${id}" (0 to ${total} bytes)`);
    }
    if (!Number.isInteger(length) || length < 1) {
      throw new ResultSpillError('out_of_range', `length must be a positive integer, got ${length}`);
    }
    // Up to 3 bytes either side: enough to find where the characters at both ends begin.
    const from = Math.max(0, offset - 3);
    const to = Math.min(total, offset + length + 3);
    const buffer = Buffer.alloc(to - from);
    const handle = await open(path.join(dir, entry.file), 'r').catch((error: NodeJS.ErrnoException) => {
      // Removed underneath (by hand, or by another worker on this state dir).
      throw error.code === 'ENOENT' ? unknown() : error;
    });
    try {
      await handle.read(buffer, 0, buffer.length, from);
    } finally {
      await handle.close();
    }
    let start = offset - from;
    while (start > 0 && isContinuation(buffer[start])) start -= 1;
    let end = Math.min(offset + length, total) - from;
    while (end > start && isContinuation(buffer[end])) end -= 1;
    if (end === start && start < buffer.length) {
      // `length` is shorter than the character here: give the whole character, or the reader never moves on.
      end = start + 1;
      while (isContinuation(buffer[end])) end += 1;
    }
    return {
      text: buffer.toString('utf8', start, end),
      offset: from + start,
      length: end - start,
      total,
      done: from + end >= total,
    };
  }

  return {
    keep,
    read,
    hasResults(principal) {
      const at = now();
      const owner = ownerOf(principal);
      for (const entry of entries.values()) if (entry.expiresAt > at && entry.owner === owner) return true;
      return false;
    },
    prune,
    close: () => clearInterval(timer),
  };
}
