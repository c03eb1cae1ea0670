// Where a contender allocates while COUNT servers start and are called once
// (what memory-probe.js measures), garbage included: V8's sampling heap
// profiler keeping objects the GC already collected. Young garbage decides how
// many new-space pages a start touches, and so most of the RSS it costs.
//   node --expose-gc bench/tools/alloc-profile.js [fleet|raw|…] [COUNT=20] [--top 40]
import { Session } from 'node:inspector/promises';
import { contenderByKey } from '../lib/contenders.js';
import { settleHeap } from '../lib/env.js';
import { startAndCall, warmUp } from '../lib/memory-sample.js';

const [key = 'fleet', countText = '20'] = process.argv.slice(2);
const top = process.argv.includes('--top') ? Number(process.argv[process.argv.indexOf('--top') + 1]) : 40;
const count = Number(countText);
// --via TEXT: only samples with a frame whose function or file contains TEXT (e.g. zod's `$constructor`).
const via = process.argv.includes('--via') ? process.argv[process.argv.indexOf('--via') + 1] : null;
// --live: only what is still reachable after full collections (what the heap figure counts), not the garbage.
const live = process.argv.includes('--live');
const contender = contenderByKey(key);

await warmUp(contender);
const session = new Session();
session.connect();
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 512,
  includeObjectsCollectedByMajorGC: !live,
  includeObjectsCollectedByMinorGC: !live,
});
const handle = await startAndCall(contender, count);
if (live) await settleHeap();
const { profile } = await session.post('HeapProfiler.stopSampling');
session.disconnect();

// Self bytes by function (file:line), and inclusive bytes by function name.
const self = new Map();
// Each sample put on the innermost frame of mcp-fleet's own code (dist/ modules, not bundled chunks).
const ours = new Map();
// mcp-fleet's own modules: files of the project's dist/, not of node_modules.
const isOurs = (url) => url.includes('/dist/') && !url.includes('/node_modules/');
// Builtins (`Set`, `next`, `push`) say little: their bytes are also put on the innermost frame with a file.
const byCaller = new Map();
const inclusive = new Map();
let total = 0;
function walk(node, stack, owner = '(outside)', caller = '(none)') {
  const f = node.callFrame;
  const where = `${f.functionName || '(anon)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^.*\/(dist|src)\//, '$1/')}:${f.lineNumber + 1}`;
  const bytes = via === null || [...stack, where].some((frame) => frame.includes(via)) ? node.selfSize : 0;
  total += bytes;
  self.set(where, (self.get(where) ?? 0) + bytes);
  if (isOurs(f.url)) owner = where;
  ours.set(owner, (ours.get(owner) ?? 0) + bytes);
  if (f.url !== '') caller = where;
  byCaller.set(caller, (byCaller.get(caller) ?? 0) + bytes);
  const sub = [];
  const here = [...stack, where];
  for (const child of node.children) sub.push(walk(child, here, owner, caller));
  const sum = bytes + sub.reduce((a, b) => a + b, 0);
  if (!stack.includes(where)) inclusive.set(where, (inclusive.get(where) ?? 0) + sum);
  return sum;
}
walk(profile.head, []);
const kib = (b) => (b / 1024 / count).toFixed(1).padStart(7);
console.log(`${key}: ${kib(total)} KiB ${live ? 'still reachable' : 'allocated'} per server (sampled${live ? '' : ', garbage included'})`);
console.log('-- self');
for (const [where, bytes] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(kib(bytes), where);
console.log('-- self, builtins put on their innermost caller with a file');
for (const [where, bytes] of [...byCaller].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(kib(bytes), where);
console.log('-- by innermost mcp-fleet frame');
for (const [where, bytes] of [...ours].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(kib(bytes), where);
console.log('-- inclusive');
for (const [where, bytes] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(kib(bytes), where);
await handle.close();
process.exit(0);
