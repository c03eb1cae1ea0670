import { readFileSync } from 'node:fs';
import { until } from './wait.js';

/**
 * Whether a process with this pid runs (signal 0 probes without sending
 * anything). A zombie has exited: an orphan stays one until init reaps it,
 * which some container inits do only every few seconds.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
  if (process.platform !== 'linux') return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Waits until none of `pids` exists (a killed child can take a moment to be reaped). */
export async function allGone(pids: number[], timeoutMs = 5_000): Promise<boolean> {
  return until(() => pids.every((pid) => !isAlive(pid)), 'every process gone', timeoutMs).then(
    () => true,
    () => false,
  );
}

/** The pid a fixture wrote to its `FIXTURE_PID_FILE`. */
export const readPid = (file: string): number => Number(readFileSync(file, 'utf8'));
