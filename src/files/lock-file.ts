/**
 * A lock that processes honour around a read-modify-write of one file: the
 * worker's API writes and an `import` of the same config run in two
 * processes, and each write is whole, so without it the later one silently
 * drops what the other added. The lock is `.<file>.lock` beside it, made
 * exclusively and holding its owner's pid; a lock whose owner is gone
 * (killed mid-write) is taken over. One process's own writes are ordered
 * by its caller (a queue per file), never by this lock.
 */
import { open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { makeDirs } from './make-dirs.js';
import { processAlive } from './process-alive.js';

/** How long a writer waits for another's lock before it gives up, saying who holds it. */
const WAIT_MS = 10_000;
/** A lock with no pid in it yet is being made; one that stays so this long was left by a writer killed in between. */
const UNNAMED_STALE_MS = 2_000;

/** How long a writer that saw another process waiting leaves the lock free before taking it again. */
const YIELD_MS = 40;

/** Per lock of this process: until when it leaves the lock to a process that was waiting for it. */
const yielding = new Map<string, number>();

/** Runs `task` holding the lock of `file`; throws, naming the holder, when it stays held past {@link WAIT_MS}. */
export async function withLockFile<T>(file: string, task: () => Promise<T>): Promise<T> {
  const lock = path.join(path.dirname(file), `.${path.basename(file)}.lock`);
  const wanted = `${lock}-wanted`;
  const until = yielding.get(lock);
  if (until !== undefined) {
    yielding.delete(lock);
    const wait = until - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
  await acquire(lock, wanted, file);
  try {
    return await task();
  } finally {
    await rm(lock, { force: true });
    // Another process polls for the lock: a burst of this process's writes must not keep taking it first.
    const asked = await stat(wanted).then((found) => found.mtimeMs, () => null);
    if (asked !== null && Date.now() - asked < YIELD_MS * 4) yielding.set(lock, Date.now() + YIELD_MS);
  }
}

async function acquire(lock: string, wanted: string, file: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  for (let tries = 0; ; tries += 1) {
    try {
      const handle = await open(lock, 'wx', 0o600);
      try {
        await handle.writeFile(String(process.pid));
      } finally {
        await handle.close();
      }
      if (tries > 0) await rm(wanted, { force: true });
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        await makeDirs(path.dirname(lock), 0o700);
        continue;
      }
      if (code !== 'EEXIST') throw err;
    }
    const holder = await holderOf(lock);
    if (holder === 'gone') {
      await rm(lock, { force: true });
      continue;
    }
    // Says this process waits (the holder then leaves a gap before its own next write).
    await writeFile(wanted, String(process.pid), { mode: 0o600 }).catch(() => {});
    if (Date.now() > deadline) {
      throw new Error(`${file} stays locked by process ${holder ?? 'unknown'} (${lock}); retry once it is done, or remove the lock if no such process writes it`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 15));
  }
}

/** The live process holding `lock`, null while its maker has not named itself yet, or `gone`. */
async function holderOf(lock: string): Promise<number | null | 'gone'> {
  // Released meanwhile (or replaced): try again at once rather than take a lock someone just made for a stale one.
  const text = await readFile(lock, 'utf8').catch(() => null);
  if (text === null) return null;
  const pid = Number(text.trim());
  if (text.trim() === '' || !Number.isInteger(pid) || pid <= 0) {
    const made = await stat(lock).then((found) => found.mtimeMs, () => null);
    return made !== null && Date.now() - made > UNNAMED_STALE_MS ? 'gone' : null;
  }
  // This process's own lock is a leftover: its writes to a file are one at a time.
  return pid === process.pid || !processAlive(pid) ? 'gone' : pid;
}
