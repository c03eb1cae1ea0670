// Where a real `mcp-fleet serve` worker's event loop stalls while its servers
// start: runs the worker under `--cpu-prof` with stall-probe.mjs preloaded,
// polls its /healthz every 10 ms as the startup suite does, and sums the CPU
// profile's samples inside each stall by the outermost mcp-fleet (or else
// library) function on the stack.
//   node bench/tools/profile-startup.js [--servers 50] [--concurrency 1] [--dir /tmp/startup-prof] [--top 25]
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { MINI_SERVER, ROOT, serverSpecs, sleep, stateDirFor } from '../lib/env.js';
import { API_TOKEN } from '../lib/processes.js';
import { percentile } from '../lib/stats.js';

const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const servers = Number(opt('--servers', 50));
const concurrency = Number(opt('--concurrency', 1));
const dir = opt('--dir', '/tmp/startup-prof');
const top = Number(opt('--top', 25));
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const state = stateDirFor(serverSpecs(servers, MINI_SERVER));
const stallFile = join(dir, 'stalls.json');
const child = spawn(
  process.execPath,
  [
    `--cpu-prof`,
    `--cpu-prof-dir=${dir}`,
    '--cpu-prof-interval=250',
    '--import',
    new URL('./stall-probe.mjs', import.meta.url).pathname,
    join(ROOT, 'bin', 'mcp-fleet.js'),
    'serve', '--state-dir', state.dir, '--port', '0', '--log-level', 'warn', '--startup-concurrency', String(concurrency),
  ],
  { env: { ...process.env, MCP_FLEET_API_TOKEN: API_TOKEN, STALL_PROBE_OUT: stallFile }, stdio: ['ignore', 'pipe', 'inherit'] },
);
let stdout = '';
child.stdout.setEncoding('utf8');
const ready = new Promise((resolve) => child.stdout.on('data', (chunk) => {
  stdout += chunk;
  if (/enabled servers ready/.test(stdout)) resolve();
}));
const workerFile = join(state.dir, 'worker.json');
while (!existsSync(workerFile)) await sleep(5);
await sleep(20);
const url = JSON.parse(readFileSync(workerFile, 'utf8')).url.replace(/\/$/, '');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const latencies = [];
/** Each request's [start, end] in µs of the monotonic clock. */
const requests = [];
const windowStart = Number(process.hrtime.bigint() / 1000n);
let done = false;
void ready.then(() => (done = true));
while (!done) {
  const started = performance.now();
  const from = Number(process.hrtime.bigint() / 1000n);
  await new Promise((resolve, reject) => http.get(`${url}/healthz`, { agent }, (res) => res.resume().on('end', resolve)).on('error', reject));
  latencies.push(performance.now() - started);
  requests.push([from, Number(process.hrtime.bigint() / 1000n)]);
  await sleep(10);
}
const windowEnd = Number(process.hrtime.bigint() / 1000n);
agent.destroy();
child.kill('SIGTERM');
await new Promise((resolve) => child.once('exit', resolve));
state.remove();
console.log(`/healthz during startup: ${latencies.length} requests, p50 ${percentile(latencies, 50).toFixed(2)} ms, p99 ${percentile(latencies, 99).toFixed(2)} ms, max ${Math.max(...latencies).toFixed(1)} ms`);

// Only what happened while /healthz was polled: from the worker's listening to its servers' readiness.
const inWindow = ([a, b]) => a >= windowStart && b <= windowEnd;
const probed = JSON.parse(readFileSync(stallFile, 'utf8'));
const stalls = probed.stalls.filter(inWindow);
const spawns = probed.spawns.filter(inWindow);
const profileFile = readdirSync(dir).find((name) => name.endsWith('.cpuprofile') && readFileSync(join(dir, name), 'utf8').includes('mcp-fleet'));
const profile = JSON.parse(readFileSync(join(dir, profileFile), 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const c of node.children ?? []) parent.set(c, node.id);
// Inside a stall, a sample is blamed on the outermost frame of mcp-fleet's src, else the innermost named frame.
function blame(id) {
  let outer = null;
  for (let at = id; at !== undefined; at = parent.get(at)) {
    const { functionName, url } = byId.get(at).callFrame;
    if (url.includes('/src/') && !url.includes('node_modules')) outer = `${functionName || '(anonymous)'} ${url.split('/src/')[1]}`;
  }
  if (outer) return outer;
  const { functionName, url } = byId.get(id).callFrame;
  return `${functionName || `(${url.split('/').slice(-2).join('/') || 'native'})`} ${url.split('node_modules/').at(-1)?.split('/').slice(0, 2).join('/') ?? ''}`;
}
const blamed = new Map();
const selfBlamed = new Map();
let t = profile.startTime;
let inStall = 0;
let stallIndex = 0;
const sorted = stalls.sort((a, b) => a[0] - b[0]);
for (let i = 0; i < profile.samples.length; i += 1) {
  t += profile.timeDeltas[i];
  while (stallIndex < sorted.length && sorted[stallIndex][1] < t) stallIndex += 1;
  const stall = sorted[stallIndex];
  if (!stall || t < stall[0]) continue;
  const key = blame(profile.samples[i]);
  const us = profile.timeDeltas[i + 1] ?? 250;
  blamed.set(key, (blamed.get(key) ?? 0) + us);
  const { functionName, url } = byId.get(profile.samples[i]).callFrame;
  const selfKey = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}`;
  selfBlamed.set(selfKey, (selfBlamed.get(selfKey) ?? 0) + us);
  inStall += us;
}
const stallMs = stalls.map(([a, b]) => (b - a) / 1000);
const spawnMs = spawns.map(([a, b]) => (b - a) / 1000).sort((a, b) => a - b);
console.log(`stalls > ${process.env.STALL_PROBE_MS ?? 2} ms: ${stalls.length}, ${stallMs.reduce((a, b) => a + b, 0).toFixed(0)} ms in all, longest ${Math.max(0, ...stallMs).toFixed(1)} ms`);
console.log(`spawn() calls: ${spawns.length}, blocking median ${percentile(spawnMs, 50).toFixed(2)} ms, max ${Math.max(0, ...spawnMs).toFixed(1)} ms`);
console.log(`samples inside stalls: ${(inStall / 1000).toFixed(0)} ms, by outermost mcp-fleet function (else innermost frame):`);
for (const [key, us] of [...blamed].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${(us / 1000).toFixed(1).padStart(8)} ms  ${key}`);
console.log('the same samples by function (self time):');
for (const [key, us] of [...selfBlamed].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${(us / 1000).toFixed(1).padStart(8)} ms  ${key}`);

// The slowest requests (the 1 % that make p99, at least 5): what the worker did while each waited.
const slowest = requests
  .map((span, i) => ({ span, ms: latencies[i] }))
  .sort((a, b) => b.ms - a.ms)
  .slice(0, Math.max(5, Math.ceil(requests.length / 100)));
console.log(`the ${slowest.length} slowest requests, and what the worker's main thread did meanwhile (profile samples):`);
const starts = [];
{
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i += 1) starts.push((at += profile.timeDeltas[i]));
}
let withSpawn = 0;
let withGc = 0;
for (const { span: [from, to], ms } of slowest) {
  const overlapping = spawns.filter(([a, b]) => b > from && a < to).map(([a, b]) => ((b - a) / 1000).toFixed(1));
  if (overlapping.length > 0) withSpawn += 1;
  const during = new Map();
  for (let i = 0; i < starts.length; i += 1) {
    if (starts[i] < from || starts[i] > to) continue;
    const key = blame(profile.samples[i]);
    during.set(key, (during.get(key) ?? 0) + (profile.timeDeltas[i + 1] ?? 250));
  }
  if ((during.get('(garbage collector) ') ?? 0) >= 5000) withGc += 1;
  const what = [...during].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([k, us]) => `${k.trim()} ${(us / 1000).toFixed(1)}`).join('; ');
  console.log(`  ${ms.toFixed(1).padStart(6)} ms  spawns ${overlapping.length ? overlapping.join(', ') + ' ms' : 'none'}  |  ${what}`);
}
console.log(`of these ${slowest.length}: ${withSpawn} waited while spawn() blocked, ${withGc} while the garbage collector ran ≥ 5 ms`);
