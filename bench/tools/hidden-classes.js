// The hidden classes (V8 maps) the memory sample makes: heap snapshots (one
// inspector session, so object ids match) after memory-probe.js's warm-up and
// after COUNT servers started and called, and every map of the second that the
// first lacks, grouped by the objects that use it and the property names it
// describes. A map no live object uses is a step of a transition chain: an
// object built property by property (an object literal too) leaves one map
// per property. Maps of objects that all died with the warm-up's host are made
// again in the sample, so this shows what of it is shape metadata.
//   node --expose-gc bench/tools/hidden-classes.js [fleet|raw|…] [COUNT=20] [--top 40]
import { Session } from 'node:inspector/promises';
import { contenderByKey } from '../lib/contenders.js';
import { idsOf, indexSnapshot, takeSnapshot } from '../lib/heap-snapshot.js';
import { startAndCall, warmUp } from '../lib/memory-sample.js';

const args = process.argv.slice(2);
const top = args.includes('--top') ? Number(args[args.indexOf('--top') + 1]) : 40;
const [key = 'fleet', countText = '20'] = args.filter((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--top');
const count = Number(countText);
const contender = contenderByKey(key);

const session = new Session();
session.connect();
await warmUp(contender);
const oldIds = idsOf(await takeSnapshot(session));

const handle = await startAndCall(contender, count);
const graph = indexSnapshot(await takeSnapshot(session));
const { nodes, edges, strings, nodeWidth, edgeWidth, nType, nName, nId, nSize, eType, eName, eTo, nodeTypes, edgeTypes, total, firstEdge } = graph;
const name = (n) => strings[nodes[n * nodeWidth + nName]];
const type = (n) => nodeTypes[nodes[n * nodeWidth + nType]];
const isMap = (n) => name(n) === 'system / Map';
const SHAPES = ['system / Map', 'system / DescriptorArray', 'system / TransitionArray'];

// Who uses each map (its `map` edge), and each map's descriptor array.
const users = new Map();
const descriptors = new Map();
for (let n = 0; n < total; n += 1) {
  for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += edgeWidth) {
    const edgeType = edgeTypes[edges[e + eType]];
    if (edgeType === 'element' || edgeType === 'hidden') continue;
    const label = strings[edges[e + eName]];
    const to = edges[e + eTo] / nodeWidth;
    if (label === 'map' && isMap(to)) {
      if (!users.has(to)) users.set(to, []);
      users.get(to).push(n);
    }
    else if (label === 'descriptors' && isMap(n)) descriptors.set(n, to);
  }
}
const keysOf = (array) => {
  const keys = [];
  if (array === undefined) return keys;
  for (let e = firstEdge[array]; e < firstEdge[array + 1]; e += edgeWidth) {
    const to = edges[e + eTo] / nodeWidth;
    if (type(to) === 'string' && !['value', 'get', 'set'].includes(name(to))) keys.push(name(to));
  }
  return keys;
};

const groups = new Map();
const shapeBytes = Object.fromEntries(SHAPES.map((shape) => [shape, { count: 0, bytes: 0 }]));
for (let n = 0; n < total; n += 1) {
  if (oldIds.has(nodes[n * nodeWidth + nId]) || !SHAPES.includes(name(n))) continue;
  shapeBytes[name(n)].count += 1;
  shapeBytes[name(n)].bytes += nodes[n * nodeWidth + nSize];
  if (!isMap(n)) continue;
  const used = users.get(n) ?? [];
  const by = used.length === 0 ? '(chain step)' : [...new Set(used.map((u) => name(u) || type(u)))].slice(0, 2).join(',');
  const keys = keysOf(descriptors.get(n));
  const label = `${by} [${keys.length}] ${keys.slice(0, 3).join(',')}${keys.length > 5 ? ' … ' : ','}${keys.slice(Math.max(3, keys.length - 2)).join(',')}`;
  groups.set(label, (groups.get(label) ?? 0) + 1);
}
const kib = (bytes) => (bytes / 1024 / count).toFixed(2);
console.log(`${key}, ${count} servers: new shape metadata per server`);
for (const [shape, { count: made, bytes }] of Object.entries(shapeBytes)) {
  console.log(`  ${shape.padEnd(26)}${(made / count).toFixed(1).padStart(7)} objects ${kib(bytes).padStart(7)} KiB`);
}
console.log('new maps by the objects that use them and the properties they describe (a shape of N properties built one by one leaves N):');
for (const [label, made] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${String(made).padStart(6)}  ${label.slice(0, 150)}`);
await handle.close();
process.exit(0);
