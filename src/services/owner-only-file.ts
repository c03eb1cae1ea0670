/**
 * The one way mcp-fleet writes a file that holds secrets (the config, OAuth
 * credentials): atomic and owner-only.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * Writes `text` to `file`: a 0600 temp file created in one `open` (never
 * readable by others, not even briefly), written, fsynced, renamed over the
 * target (which takes the temp's mode, narrowing an old 0644 file), then the
 * directory fsynced so the rename itself survives a crash. The temp is named
 * `.<file>.<pid>.<hex>.tmp`, so a sweep can tell a dead writer's leftovers.
 */
export async function writeOwnerOnly(file: string, text: string): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o600);
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
