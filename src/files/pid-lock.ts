/**
 * A lock held by a process: a file holding its pid, made exclusively, so of
 * two processes claiming it at the same moment one gets it. A lock whose
 * process is gone (killed) is taken over. What `serve` claims its state dir
 * with, and a host its journal.
 */
import { promises as fs } from 'node:fs';
import { processAlive } from './process-alive.js';

export interface PidLock {
  /** The live process that holds it, else null: then this process holds it, until `release`. */
  holder: number | null;
  release(): Promise<void>;
}

/** Claims `lock` for this process; a lock this very process holds already counts as taken by it again. */
export async function claimPidLock(lock: string): Promise<PidLock> {
  const release = async () => {
    const text = await fs.readFile(lock, 'utf8').catch(() => '');
    if (Number(text.trim()) === process.pid) await fs.rm(lock, { force: true });
  };
  for (let attempt = 0; attempt < 40; attempt += 1) {
    try {
      const handle = await fs.open(lock, 'wx', 0o600);
      try {
        await handle.writeFile(String(process.pid));
      } finally {
        await handle.close();
      }
      return { holder: null, release };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const text = await fs.readFile(lock, 'utf8').catch(() => null);
    if (text === null) continue; // released meanwhile
    const pid = Number(text.trim());
    // Empty: its maker is writing its pid this very moment (or was killed doing so: then it stays empty).
    if (text.trim() === '' && attempt < 39) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      continue;
    }
    if (pid > 0 && pid !== process.pid && processAlive(pid)) return { holder: pid, release: async () => {} };
    await fs.rm(lock, { force: true });
  }
  throw new Error(`cannot claim ${lock}: it keeps changing`);
}
