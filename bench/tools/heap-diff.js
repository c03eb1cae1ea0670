// Heap snapshots of a contender before and after COUNT ready servers, diffed
// by constructor: what a ready server keeps alive. Run with --expose-gc.
//   node --expose-gc bench/tools/heap-diff.js [fleet|raw|…] [COUNT=20] [--top 30]
import { Session } from 'node:inspector/promises';
import { contenderByKey } from '../lib/contenders.js';
import { MINI_SERVER, serverSpecs, settleHeap } from '../lib/env.js';
import { noChildren } from '../lib/processes.js';

const [key = 'fleet', countText = '20'] = process.argv.slice(2);
const top = process.argv.includes('--top') ? Number(process.argv[process.argv.indexOf('--top') + 1]) : 30;
const count = Number(countText);
const contender = contenderByKey(key);

async function snapshot() {
  await settleHeap();
  const session = new Session();
  session.connect();
  const chunks = [];
  session.on('HeapProfiler.addHeapSnapshotChunk', (message) => chunks.push(message.params.chunk));
  await session.post('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  session.disconnect();
  const snap = JSON.parse(chunks.join(''));
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const [iType, iName, iSize] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const totals = new Map();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + iType]];
    let name = snap.strings[snap.nodes[i + iName]];
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = '(string)';
    else if (type === 'code') name = '(code)';
    else if (type === 'array') name = `(array) ${name}`;
    else if (type === 'closure') name = `(closure) ${name}`;
    else if (type !== 'object') name = `(${type}) ${name}`;
    const entry = totals.get(name) ?? { size: 0, count: 0 };
    entry.size += snap.nodes[i + iSize];
    entry.count += 1;
    totals.set(name, entry);
  }
  return totals;
}

const warm = await contender.open(serverSpecs(2, MINI_SERVER));
await warm.call('s00', 'echo', { text: 'warm' });
await warm.close();
await noChildren();
const before = await snapshot();
const handle = await contender.open(serverSpecs(count, MINI_SERVER));
for (let i = 0; i < count; i += 1) await handle.call(`s${String(i).padStart(2, '0')}`, 'echo', { text: 'x' });
const after = await snapshot();
const diff = [];
for (const [name, entry] of after) {
  const was = before.get(name) ?? { size: 0, count: 0 };
  diff.push({ name, size: entry.size - was.size, count: entry.count - was.count });
}
const total = diff.reduce((sum, d) => sum + d.size, 0);
console.log(`${key}: ${(total / 1024 / count).toFixed(1)} KiB per server (snapshot self sizes), top growth per server:`);
for (const d of diff.sort((a, b) => b.size - a.size).slice(0, top)) {
  console.log(`  ${(d.size / 1024 / count).toFixed(2).padStart(7)} KiB  ${String((d.count / count).toFixed(1)).padStart(6)} objs  ${d.name.slice(0, 90)}`);
}
await handle.close();
process.exit(0);
