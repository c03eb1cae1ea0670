// One sample of the users suite, in a fresh process (run with --expose-gc),
// with a Streamable HTTP server of its own (test/fixtures/whoami.mjs --http,
// a child: its memory is not this process's). Prints one JSON line.
//   node --expose-gc bench/suites/users-probe.js first PRINCIPALS   → ms of each new principal's first call, mcp-fleet and raw SDK (with and without listTools) in turns
//   node --expose-gc bench/suites/users-probe.js percall CALLS WARMUP → µs per call, per_user session and shared server in 100-call chunks
//   node --expose-gc bench/suites/users-probe.js memory PRINCIPALS  → heap per idle session, what is left once they ended, heap per raw SDK client
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '../../node_modules/@modelcontextprotocol/client/dist/index.mjs';
import { fleet } from '../lib/contenders.js';
import { ROOT, settleHeap, sleep } from '../lib/env.js';
import { noChildren, startListening } from '../lib/processes.js';

const { StreamableHTTPClientTransport } = await import('../../node_modules/@modelcontextprotocol/client/dist/index.mjs');
const [mode, countText, warmupText] = process.argv.slice(2);
const count = Number(countText);
const silent = { info() {}, warn() {} };

const fixture = await startFixture();
const stateDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-bench-users-'));
// One remote server per scope, the same fixture behind both; each session carries its principal's token as a header.
const idle = 3600;
writeFileSync(
  join(stateDir, 'mcp_servers.json'),
  JSON.stringify({
    servers: {
      mine: {
        type: 'remote',
        url: fixture.url,
        headers: { 'x-user-token': '${user.TOKEN}' },
        scope: 'per_user',
        user_inputs: { TOKEN: { description: 'your token' } },
        max_sessions: 100_000,
        idle_timeout_seconds: idle,
      },
      ours: { type: 'remote', url: fixture.url, headers: { 'x-user-token': 'shared' } },
    },
  }),
  { mode: 0o600 },
);
const host = fleet.createMcpHost({ stateDir, logger: silent });
await host.start();
await host.settled();

const principal = (i) => ({ id: `user${String(i).padStart(5, '0')}` });
let nextPrincipal = 0;
/** A principal that has set its input but never called: its first call starts its session. */
async function newPrincipal() {
  const p = principal((nextPrincipal += 1));
  await host.setInputs('mine', { TOKEN: `token-${p.id}` }, { principal: p });
  return p;
}
async function fleetCall(name, p) {
  const result = await host.callTool(name, {}, p ? { principal: p } : {});
  if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
  return result;
}
const rawClients = [];
/** The baseline of a first call: a raw SDK client connecting to the same server with the same header, then the call. */
async function rawFirstCall(token, { list = false, keep = rawClients } = {}) {
  const client = new Client({ name: 'bench-raw', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(fixture.url), { requestInit: { headers: { 'x-user-token': token } } }));
  // mcp-fleet lists a session's tools (its catalog) before the call: `list` does too.
  if (list) await client.listTools();
  const result = await client.callTool({ name: 'whoami', arguments: {} });
  if (result.isError) throw new Error(`raw: ${JSON.stringify(result.content)}`);
  keep.push(client);
}

let out;
try {
  if (mode === 'first') out = await first();
  else if (mode === 'percall') out = await percall(Number(warmupText));
  else if (mode === 'memory') out = await memory();
  else throw new Error(`unknown mode "${mode}"`);
} finally {
  await Promise.all(rawClients.map((client) => client.close()));
  await host.shutdown();
  await fixture.stop();
  rmSync(stateDir, { recursive: true, force: true });
  await noChildren();
}
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);

async function first() {
  // Compiles both paths before the clock starts.
  for (let i = 0; i < 5; i += 1) {
    await fleetCall('mine__whoami', await newPrincipal());
    await rawFirstCall(`warm-${i}`);
    await rawFirstCall(`warm-listed-${i}`, { list: true });
  }
  await settleHeap();
  const fleetMs = [];
  const rawMs = [];
  const rawListedMs = [];
  for (let i = 0; i < count; i += 1) {
    const p = await newPrincipal();
    const runs = [
      async () => {
        const started = performance.now();
        await fleetCall('mine__whoami', p);
        fleetMs.push(performance.now() - started);
      },
      async () => {
        const started = performance.now();
        await rawFirstCall(`raw-${i}`);
        rawMs.push(performance.now() - started);
      },
      async () => {
        const started = performance.now();
        await rawFirstCall(`raw-listed-${i}`, { list: true });
        rawListedMs.push(performance.now() - started);
      },
    ];
    // The order rotates, so none always goes first.
    for (let k = 0; k < runs.length; k += 1) await runs[(i + k) % runs.length]();
  }
  return { fleetMs, rawMs, rawListedMs };
}

async function percall(warmup) {
  const p = await newPrincipal();
  const chunk = 100;
  const chunkUs = async (name, who) => {
    const started = performance.now();
    for (let i = 0; i < chunk; i += 1) await fleetCall(name, who);
    return ((performance.now() - started) * 1000) / chunk;
  };
  for (let i = 0; i < warmup / chunk; i += 1) {
    await chunkUs('mine__whoami', p);
    await chunkUs('ours__whoami', p);
  }
  await settleHeap();
  const perUser = [];
  const shared = [];
  for (let round = 0; round < count / chunk; round += 1) {
    const pair = {};
    const order = round % 2 === 0 ? ['mine', 'ours'] : ['ours', 'mine'];
    for (const server of order) pair[server] = await chunkUs(`${server}__whoami`, p);
    perUser.push(pair.mine);
    shared.push(pair.ours);
  }
  return { perUser, shared };
}

async function memory() {
  const kib = (bytes) => bytes / 1024 / count;
  // Warm-up: sessions started, called and ended the same way, so what grows after is per-session state.
  for (let i = 0; i < 20; i += 1) await fleetCall('mine__whoami', await newPrincipal());
  await endAll(idle - 1);
  await settleHeap();
  const start = process.memoryUsage();
  const principals = [];
  for (let i = 0; i < count; i += 1) principals.push(await newPrincipal());
  await settleHeap();
  const inputsSet = process.memoryUsage();
  for (const p of principals) await fleetCall('mine__whoami', p);
  const open = host.sessions().filter((s) => s.server === 'mine' && s.state === 'ready').length;
  if (open !== count) throw new Error(`${open} sessions ready, expected ${count}`);
  await settleHeap();
  const sessionsOpen = process.memoryUsage();
  await endAll(idle);
  // Sockets of ended sessions idle in fetch's keep-alive pool until the server's keep-alive timeout (Node's 5 s) closes them.
  await sleep(6000);
  await settleHeap();
  const ended = process.memoryUsage();
  // The baseline of a session's heap: as many raw SDK clients, each connected with its header and called once.
  const warm = [];
  for (let i = 0; i < 20; i += 1) await rawFirstCall(`warm-${i}`, { keep: warm });
  await Promise.all(warm.map((client) => client.close()));
  await settleHeap();
  const rawStart = process.memoryUsage();
  const raw = [];
  for (let i = 0; i < count; i += 1) await rawFirstCall(`raw-${i}`, { keep: raw });
  await settleHeap();
  const rawOpen = process.memoryUsage();
  await Promise.all(raw.map((client) => client.close()));
  return {
    principals: count,
    inputsPerPrincipalKiB: kib(inputsSet.heapUsed - start.heapUsed),
    heapPerSessionKiB: kib(sessionsOpen.heapUsed - inputsSet.heapUsed),
    rssPerSessionKiB: kib(sessionsOpen.rss - inputsSet.rss),
    leftPerSessionKiB: kib(ended.heapUsed - inputsSet.heapUsed),
    rawHeapPerClientKiB: kib(rawOpen.heapUsed - rawStart.heapUsed),
  };
}

/** Ends every session of `mine` the way a changed config does (the library's updateServer), and waits until none is left. */
async function endAll(idleTimeout) {
  await host.updateServer('mine', { idle_timeout_seconds: idleTimeout });
  const until = Date.now() + 60_000;
  while (host.sessions().some((s) => s.server === 'mine')) {
    if (Date.now() > until) throw new Error(`sessions still open: ${host.sessions().length}`);
    await sleep(20);
  }
}

/** The whoami fixture over Streamable HTTP on a free port; resolves with its URL. */
function startFixture() {
  return startListening([join(ROOT, 'test', 'fixtures', 'whoami.mjs'), '--http'], { pattern: /listening (http:\/\/\S+)/, name: 'whoami fixture' });
}
