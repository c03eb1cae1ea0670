// Preloaded into a process (`node --import bench/tools/stall-probe.mjs …`):
// records every stall of its event loop longer than STALL_PROBE_MS (default
// 2 ms), as [start, end] in µs of the monotonic clock (the clock of
// `--cpu-prof` timestamps), plus what `child_process.spawn` itself blocked,
// and writes them to STALL_PROBE_OUT when the process exits. Read by
// profile-startup.js, which lines the stalls up with the CPU profile.
import { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const threshold = Number(process.env.STALL_PROBE_MS ?? 2) * 1000;
const out = process.env.STALL_PROBE_OUT;
const now = () => Number(process.hrtime.bigint() / 1000n);
const stalls = [];
const spawns = [];
let last = now();
// A 1 ms timer: a gap much longer than that is a stall (the loop was busy, or waiting on nothing else).
setInterval(() => {
  const t = now();
  if (t - last > threshold) stalls.push([last, t]);
  last = t;
}, 1).unref();
const spawn = ChildProcess.prototype.spawn;
ChildProcess.prototype.spawn = function timedSpawn(...args) {
  const started = now();
  try {
    return spawn.apply(this, args);
  } finally {
    spawns.push([started, now()]);
  }
};
process.on('exit', () => {
  if (out) writeFileSync(out, JSON.stringify({ stalls, spawns }));
});
