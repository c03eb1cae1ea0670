import { promises as fs } from 'node:fs';
import path from 'node:path';
import { writeOwnerOnly } from '../files/owner-only-file.js';
import { claimPidLock, type PidLock } from '../files/pid-lock.js';

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


/** `<stateDir>/worker.lock`: the pid of the worker that holds the state dir, from its start to its stop. */
export function workerLockPath(stateDir: string): string {
  return path.join(stateDir, 'worker.lock');
}

/**
 * Claims the state dir for this process: `worker.lock`, made exclusively, so
 * of two workers started at the same moment one gets it (worker.json is
 * written only once the port listens, too late to decide). A lock whose
 * process is gone (a worker killed) is taken over. `holder`: the live
 * process that has it, else null and `release` gives it back.
 */
export async function claimStateDir(stateDir: string): Promise<PidLock> {
  return claimPidLock(workerLockPath(stateDir));
}
