import { readFileSync } from 'node:fs';

/** Whether a process with this pid exists (signal 0 probes without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/** Waits until none of `pids` exists (a killed child can take a moment to be reaped). */
export async function allGone(pids: number[], timeoutMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (pids.every((pid) => !isAlive(pid))) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return pids.every((pid) => !isAlive(pid));
}

/** The pid a fixture wrote to its `FIXTURE_PID_FILE`. */
export const readPid = (file: string): number => Number(readFileSync(file, 'utf8'));
