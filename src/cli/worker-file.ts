import { promises as fs } from 'node:fs';
import path from 'node:path';
import { writeOwnerOnly } from '../files/owner-only-file.js';

/** Where a running worker says how to reach it: `{url, pid}`. */
export interface WorkerInfo {
  url: string;
  pid: number;
}

/** `<stateDir>/worker.json`: written by `serve`, read by the client commands. */
export function workerFilePath(stateDir: string): string {
  return path.join(stateDir, 'worker.json');
}

/** Writes worker.json owner-only and atomically, as every file of the state dir. */
export async function writeWorkerFile(stateDir: string, info: WorkerInfo): Promise<void> {
  await writeOwnerOnly(workerFilePath(stateDir), `${JSON.stringify(info)}\n`);
}

/** The worker file's content, or `undefined` when there is none (or it is unreadable garbage). */
export async function readWorkerFile(stateDir: string): Promise<WorkerInfo | undefined> {
  let text: string;
  try {
    text = await fs.readFile(workerFilePath(stateDir), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const info = JSON.parse(text) as Partial<WorkerInfo>;
    return typeof info.url === 'string' && typeof info.pid === 'number' ? { url: info.url, pid: info.pid } : undefined;
  } catch {
    return undefined;
  }
}

/** Removes worker.json if it still names `pid`: a newer worker's file is left alone. */
export async function removeWorkerFile(stateDir: string, pid: number): Promise<void> {
  const info = await readWorkerFile(stateDir);
  if (info?.pid === pid) await fs.rm(workerFilePath(stateDir), { force: true });
}

/** True when a process with that pid exists (signal 0 probes without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
