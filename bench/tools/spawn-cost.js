// How long child_process.spawn() blocks the event loop, by the spawning
// process's RSS: Node forks synchronously, and a fork copies the parent's
// page tables, so a bigger parent blocks longer. Evidence for /healthz
// latency while servers start (every MCP client spawns the same way).
//   node bench/tools/spawn-cost.js
import { spawn } from 'node:child_process';

const ballast = [];
for (const targetMb of [50, 150, 400]) {
  while (process.memoryUsage().rss / 1e6 < targetMb) {
    ballast.push(Array.from({ length: 100_000 }, (_, i) => ({ i, s: `x${i}` })));
  }
  const times = [];
  for (let i = 0; i < 30; i += 1) {
    const started = performance.now();
    const child = spawn(process.execPath, ['-e', '0'], { stdio: ['pipe', 'pipe', 'pipe'] });
    times.push(performance.now() - started);
    await new Promise((resolve) => child.once('exit', resolve));
  }
  times.sort((a, b) => a - b);
  console.log(
    `RSS ${(process.memoryUsage().rss / 1e6).toFixed(0).padStart(4)} MB: spawn() blocks median ${times[15].toFixed(2)} ms, p90 ${times[27].toFixed(2)} ms, max ${times[29].toFixed(2)} ms`,
  );
}
