/**
 * The one way mcp-fleet writes a file that holds secrets (the config, OAuth
 * credentials): atomic and owner-only.
 */
import { randomBytes } from 'node:crypto';
import { open, readdir, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { makeDirs } from './make-dirs.js';
import { processAlive } from './process-alive.js';

/**
 * Writes `text` to `file`: a 0600 temp file created in one `open` (never
 * readable by others, not even briefly), written, fsynced, renamed over the
 * target (which takes the temp's mode, narrowing an old 0644 file), then the
 * directory fsynced so the rename itself survives a crash. The temp is named
 * `.<file>.<pid>.<hex>.tmp`; after the write, temps of `file` left by writers
 * that died mid-save (SIGKILL, power loss) are removed: they hold secrets and
 * would pile up. That sweep is best effort (the write already succeeded): its
 * failure goes to `onSweepError`.
 */
export async function writeOwnerOnly(
  file: string,
  text: string,
  onSweepError: (error: unknown) => void = () => {},
): Promise<void> {
  const dir = path.dirname(file);
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await openTemp(dir, temp);
  try {
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await syncDirectory(dir);
  await sweepDeadWritersTemps(file).catch(onSweepError);
}

/**
 * The temp, created in its folder, which is made (owner-only) when the first
 * try fails: the folder is almost always there, and a failure is reported as
 * making it would (a parent that is a file) or as opening the temp would.
 */
async function openTemp(dir: string, temp: string): Promise<FileHandle> {
  try {
    return await open(temp, 'wx', 0o600);
  } catch {
    await makeDirs(dir, 0o700);
    return open(temp, 'wx', 0o600);
  }
}

/** A live process's temp is left alone: it may be about to rename it. */
async function sweepDeadWritersTemps(file: string): Promise<void> {
  const dir = path.dirname(file);
  const prefix = `.${path.basename(file)}.`;
  for (const name of await readdir(dir)) {
    if (!name.startsWith(prefix) || !name.endsWith('.tmp')) continue;
    const match = /^(\d+)\.[0-9a-f]+\.tmp$/.exec(name.slice(prefix.length));
    const pid = Number(match?.[1]);
    if (Number.isInteger(pid) && pid !== process.pid && !processAlive(pid)) await rm(path.join(dir, name), { force: true });
  }
}


async function syncDirectory(dir: string): Promise<void> {
  // Windows cannot open a directory for fsync; there the rename is as durable as it gets.
  if (process.platform === 'win32') return;
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
