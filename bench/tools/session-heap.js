// Heap snapshots of the users suite's memory sample (users-probe.js memory),
// diffed by constructor: what an idle per_user session keeps, and what is
// left once the sessions ended. Run with --expose-gc.
//   node --expose-gc bench/tools/session-heap.js [COUNT=200] [--top 40] [--ended] [--retainers NAME]
// --ended diffs inputs-set → every session ended (the leak) instead of → every session open;
// --retainers NAME prints, for the last few objects named NAME, the chain that keeps each alive.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fleet } from '../lib/contenders.js';
import { ROOT, settleHeap, sleep } from '../lib/env.js';
import { noChildren } from '../lib/processes.js';

const args = process.argv.slice(2);
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const count = Number(args.find((arg) => /^\d+$/.test(arg)) ?? 200);
const top = Number(option('--top') ?? 40);
const ended = args.includes('--ended');
const retainersOf = option('--retainers');
const silent = { info() {}, warn() {} };

const child = spawn(process.execPath, [join(ROOT, 'test', 'fixtures', 'whoami.mjs'), '--http'], { stdio: ['ignore', 'pipe', 'inherit'] });
const exited = new Promise((resolve) => child.once('exit', resolve));
const url = await new Promise((resolve) => {
  let text = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (data) => {
    text += data;
    const match = /listening (http:\/\/\S+)/.exec(text);
    if (match) resolve(match[1]);
  });
});
const stateDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-session-heap-'));
const idle = 3600;
writeFileSync(
  join(stateDir, 'mcp_servers.json'),
  JSON.stringify({
    servers: {
      mine: {
        type: 'remote',
        url,
        headers: { 'x-user-token': '${user.TOKEN}' },
        scope: 'per_user',
        user_inputs: { TOKEN: { description: 'your token' } },
        max_sessions: 100_000,
        idle_timeout_seconds: idle,
      },
    },
  }),
  { mode: 0o600 },
);
const host = fleet.createMcpHost({ stateDir, logger: silent });
await host.start();
await host.settled();
let next = 0;
async function newPrincipal() {
  const principal = { id: `user${String((next += 1)).padStart(5, '0')}` };
  await host.setInputs('mine', { TOKEN: `token-${principal.id}` }, { principal });
  return principal;
}
async function endAll(idleTimeout) {
  await host.updateServer('mine', { idle_timeout_seconds: idleTimeout });
  while (host.sessions().some((s) => s.server === 'mine')) await sleep(20);
}

for (let i = 0; i < 20; i += 1) await host.callTool('mine__whoami', {}, { principal: await newPrincipal() });
await endAll(idle - 1);
const principals = [];
for (let i = 0; i < count; i += 1) principals.push(await newPrincipal());
// The first snapshot keeps only its totals and ids: its parsed JSON would be in the second.
const before = await snapshot({ keep: false });
for (const principal of principals) await host.callTool('mine__whoami', {}, { principal });
if (ended) {
  await endAll(idle);
  await sleep(6000);
}
const after = await snapshot({ keep: true });

const diff = [];
for (const [name, entry] of after.totals) {
  const was = before.totals.get(name) ?? { size: 0, count: 0 };
  diff.push({ name, size: entry.size - was.size, count: entry.count - was.count });
}
const total = diff.reduce((sum, d) => sum + d.size, 0);
console.log(`${ended ? 'left once ended' : 'idle sessions'}: ${(total / 1024 / count).toFixed(1)} KiB per session (snapshot self sizes), top growth:`);
for (const d of diff.sort((a, b) => b.size - a.size).slice(0, top)) {
  console.log(`  ${(d.size / 1024 / count).toFixed(2).padStart(7)} KiB  ${String((d.count / count).toFixed(2)).padStart(7)} objs  ${d.name.slice(0, 100)}`);
}
if (retainersOf !== undefined) {
  // Object ids differ between inspector sessions: the last few of that name stand for the new ones.
  const named = after.nodesNamed(retainersOf);
  console.log(`\n${named.length} objects named ${retainersOf}; retainers of the last few:`);
  for (const id of named.slice(-3)) console.log(after.chain(id).join('\n    ← '), '\n');
}

await host.shutdown();
child.kill('SIGTERM');
await exited;
rmSync(stateDir, { recursive: true, force: true });
await noChildren();
process.exit(0);

async function snapshot({ keep }) {
  await settleHeap();
  const inspector = new Session();
  inspector.connect();
  const chunks = [];
  inspector.on('HeapProfiler.addHeapSnapshotChunk', (message) => chunks.push(message.params.chunk));
  await inspector.post('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  inspector.disconnect();
  const snap = JSON.parse(chunks.join(''));
  const meta = snap.snapshot.meta;
  const width = meta.node_fields.length;
  const [iType, iName, iId, iSize, iEdges] = ['type', 'name', 'id', 'self_size', 'edge_count'].map((f) => meta.node_fields.indexOf(f));
  const types = meta.node_types[0];
  const edgeWidth = meta.edge_fields.length;
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f));
  const edgeTypes = meta.edge_types[0];
  const nameOf = (i) => {
    const type = types[snap.nodes[i + iType]];
    const name = snap.strings[snap.nodes[i + iName]];
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') return '(string)';
    if (type === 'code') return `(code) ${name.slice(0, 40)}`;
    if (type === 'array') return `(array) ${name}`;
    if (type === 'closure') return `(closure) ${name}`;
    if (type !== 'object') return `(${type}) ${name}`;
    return name;
  };
  const totals = new Map();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const name = nameOf(i);
    const entry = totals.get(name) ?? { size: 0, count: 0 };
    entry.size += snap.nodes[i + iSize];
    entry.count += 1;
    totals.set(name, entry);
  }
  if (!keep) return { totals };
  let reverse;
  const buildReverse = () => {
    // retainers[node index] = [[from node index, edge label], …]
    reverse = new Map();
    let edge = 0;
    for (let i = 0; i < snap.nodes.length; i += width) {
      for (let k = 0; k < snap.nodes[i + iEdges]; k += 1, edge += edgeWidth) {
        const type = edgeTypes[snap.edges[edge + eType]];
        if (type === 'weak') continue;
        const to = snap.edges[edge + eTo];
        const label = type === 'element' || type === 'hidden' ? `[${snap.edges[edge + eName]}]` : snap.strings[snap.edges[edge + eName]];
        if (!reverse.has(to)) reverse.set(to, []);
        reverse.get(to).push([i, `${type}:${label}`]);
      }
    }
  };
  return {
    totals,
    nodesNamed(name) {
      const found = [];
      for (let i = 0; i < snap.nodes.length; i += width) if (nameOf(i) === name) found.push(snap.nodes[i + iId]);
      return found;
    },
    /** One shortest retaining path from a GC root to the node with `id` (breadth first over retainers). */
    chain(id) {
      if (reverse === undefined) buildReverse();
      let start = -1;
      for (let i = 0; i < snap.nodes.length; i += width) if (snap.nodes[i + iId] === id) start = i;
      const seen = new Map([[start, null]]);
      const queue = [start];
      let root = -1;
      while (queue.length > 0 && root < 0) {
        const at = queue.shift();
        for (const [from, label] of reverse.get(at) ?? []) {
          if (seen.has(from)) continue;
          seen.set(from, [at, label]);
          if (types[snap.nodes[from + iType]] === 'synthetic') {
            root = from;
            break;
          }
          queue.push(from);
        }
      }
      const lines = [];
      for (let at = root; at >= 0 && at !== start; ) {
        const [to, label] = seen.get(at);
        lines.push(`${nameOf(at)} .${label}`);
        at = to;
      }
      lines.push(nameOf(start));
      return lines.reverse();
    },
  };
}
