/**
 * `mkdir -p`: each missing folder on the way made with `mode`. Node's own
 * `mkdir(…, { recursive: true })` loops for ever on a path the kernel
 * refuses with ENOENT although the parent exists (`/proc/x`); this climbs
 * only while a parent is really missing, and then fails with that error.
 */
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';

export async function makeDirs(dir: string, mode?: number): Promise<void> {
  try {
    await mkdir(dir, { mode });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' && (await isDirectory(dir))) return;
    const parent = path.dirname(dir);
    if (code !== 'ENOENT' || parent === dir) throw error;
    await makeDirs(parent, mode);
    // Once: a parent that exists and still ENOENT is the kernel's answer.
    await mkdir(dir, { mode }).catch(async (again: NodeJS.ErrnoException) => {
      if (again.code !== 'EEXIST' || !(await isDirectory(dir))) throw again;
    });
  }
}

async function isDirectory(dir: string): Promise<boolean> {
  return stat(dir).then((found) => found.isDirectory(), () => false);
}
