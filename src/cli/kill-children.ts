/**
 * What `serve` does on its way out without waiting (a second Ctrl-C or
 * SIGTERM while it stops): SIGKILL to each child process's group, so a
 * server that ignores SIGTERM does not outlive the worker. The children run
 * in process groups of their own (a terminal's Ctrl-C reaches the worker
 * alone), so nothing else would ever stop them. Synchronous: the process
 * exits right after.
 */
import { spawnSync } from 'node:child_process';

/** The pids of this process's children, from `ps` (empty when it cannot say). */
function childPids(): number[] {
  const listed = spawnSync('ps', ['-A', '-o', 'pid=,ppid='], { encoding: 'utf8', timeout: 2_000 });
  if (listed.status !== 0 || typeof listed.stdout !== 'string') return [];
  return listed.stdout.split('\n').flatMap((line) => {
    const [pid, ppid] = line.trim().split(/\s+/).map(Number);
    return pid !== undefined && ppid === process.pid && Number.isInteger(pid) ? [pid] : [];
  });
}

export function killChildrenNow(): void {
  for (const pid of childPids()) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  }
}
