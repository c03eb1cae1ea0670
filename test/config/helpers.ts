import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** A fresh directory under the OS temp dir; removed by the returned cleanup. */
export async function tempDir(prefix = 'mcp-fleet-config-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

/** Removes directories made by {@link tempDir}. */
export async function removeDirs(dirs: string[]): Promise<void> {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

/** Permission bits of a file, e.g. 0o600. */
export async function modeOf(file: string): Promise<number> {
  return (await stat(file)).mode & 0o777;
}

/** Names of leftover temp files of the store in `dir`. */
export async function tempFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith('.tmp'));
}

/** A warn-only logger that records its lines. */
export function recordingLogger(): { warn(message: string): void; lines: string[] } {
  const lines: string[] = [];
  return { lines, warn: (message: string) => void lines.push(message) };
}
