// What a ready server retains, by owner: heap snapshots (one inspector session,
// so object ids match) after memory-probe.js's warm-up and after COUNT servers
// started and called; every object of the second that the first lacks is put
// on the path that reaches it from the GC roots (shortest, breadth first),
// labelled by the old object that holds it and the chain of new objects below
// that, up to --depth links, after the old
// ones above it (--above links). Run with --expose-gc.
//   node --expose-gc bench/tools/heap-owners.js [fleet|raw|…] [COUNT=20] [--depth 3] [--above 3] [--top 40] [--min 0.3]
import { Session } from 'node:inspector/promises';
import { contenderByKey } from '../lib/contenders.js';
import { idsOf, indexSnapshot, shortestPaths, takeSnapshot } from '../lib/heap-snapshot.js';
import { startAndCall, warmUp } from '../lib/memory-sample.js';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const [key = 'fleet', countText = '20'] = args.filter((arg) => !arg.startsWith('--') && !/^--/.test(args[args.indexOf(arg) - 1] ?? ''));
const count = Number(countText);
const depth = Number(option('--depth', 3));
const top = Number(option('--top', 40));
const min = Number(option('--min', 0.3));
const above = Number(option('--above', 3));
const contender = contenderByKey(key);

const session = new Session();
session.connect();
const snapshot = () => takeSnapshot(session);

await warmUp(contender);
const oldIds = idsOf(await snapshot());
const handle = await startAndCall(contender, count);
const second = await snapshot();

const graph = indexSnapshot(second);
const { nodes, edges, strings, nodeWidth, edgeWidth, nType, nName, nId, nSize, eType, eName, eTo, nodeTypes, edgeTypes, total, firstEdge } = graph;
const nameOf = (n) => {
  const type = nodeTypes[nodes[n * nodeWidth + nType]];
  const name = strings[nodes[n * nodeWidth + nName]];
  if (type === 'string' || type === 'concatenated string' || type === 'sliced string') return '(string)';
  if (type === 'code') return '(code)';
  if (type === 'closure') return `${name || 'anonymous'}()`;
  if (type === 'object') return name.length > 40 ? `${name.slice(0, 40)}…` : name;
  return `(${type} ${name.slice(0, 30)})`;
};
const edgeLabel = (e) => {
  const type = edgeTypes[edges[e + eType]];
  const name = edges[e + eName];
  if (type === 'element' || type === 'hidden') return `[${type === 'hidden' ? 'h' : ''}]`;
  return `.${strings[name]}`;
};

// Breadth first from the synthetic root, skipping weak edges: each node's parent edge.
const { parentEdge, parentNode, seen } = shortestPaths(graph);

const groups = new Map();
let newTotal = 0;
for (let n = 0; n < total; n += 1) {
  if (!seen[n] || oldIds.has(nodes[n * nodeWidth + nId])) continue;
  const size = nodes[n * nodeWidth + nSize];
  newTotal += size;
  // Walk up to the first old ancestor, keeping the chain of new ones.
  const chain = [];
  let at = n;
  while (parentNode[at] !== -1 && !oldIds.has(nodes[parentNode[at] * nodeWidth + nId])) {
    chain.push(at);
    at = parentNode[at];
  }
  // The old objects above it, up to --above links, say whose it is.
  let label = `${nameOf(at)}`;
  let up = at;
  for (let k = 0; k < above && parentNode[up] > 0; k += 1) {
    label = `${nameOf(parentNode[up])}${edgeLabel(parentEdge[up])} ⇒ ${label}`;
    up = parentNode[up];
  }
  const below = chain.reverse();
  for (let k = 1; k < Math.min(depth, below.length); k += 1) label += `${edgeLabel(parentEdge[below[k]])} → ${nameOf(below[k])}`;
  const entry = groups.get(label) ?? { size: 0, count: 0 };
  entry.size += size;
  entry.count += 1;
  groups.set(label, entry);
}

console.log(`${key}: ${(newTotal / 1024 / count).toFixed(1)} KiB new per server (snapshot self sizes), by holder:`);
for (const [label, { size, count: objects }] of [...groups].sort((a, b) => b[1].size - a[1].size).slice(0, top)) {
  if (size / 1024 / count < min) break;
  console.log(`  ${(size / 1024 / count).toFixed(2).padStart(7)} KiB ${(objects / count).toFixed(1).padStart(7)} objs  ${label}`);
}

// Dominators (Cooper–Harvey–Kennedy on the BFS order, strong edges only):
// each new object whose immediate dominator is old heads what it alone keeps
// alive; those heads, by holder and name, with the new bytes they retain.
const order = [];
{
  // Reverse postorder by an iterative depth-first walk.
  const visited = new Uint8Array(total);
  const stack = [0];
  const cursor = new Uint32Array(total);
  visited[0] = 1;
  for (let n = 0; n < total; n += 1) cursor[n] = firstEdge[n];
  while (stack.length > 0) {
    const n = stack.at(-1);
    let pushed = false;
    while (cursor[n] < firstEdge[n + 1]) {
      const e = cursor[n];
      cursor[n] += edgeWidth;
      if (edgeTypes[edges[e + eType]] === 'weak') continue;
      const to = edges[e + eTo] / nodeWidth;
      if (visited[to]) continue;
      visited[to] = 1;
      stack.push(to);
      pushed = true;
      break;
    }
    if (!pushed) order.push(stack.pop());
  }
  order.reverse();
}
const rank = new Int32Array(total).fill(-1);
order.forEach((n, i) => (rank[n] = i));
const preds = Array.from({ length: total }, () => []);
for (const n of order) {
  for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += edgeWidth) {
    if (edgeTypes[edges[e + eType]] === 'weak') continue;
    preds[edges[e + eTo] / nodeWidth].push(n);
  }
}
const idom = new Int32Array(total).fill(-1);
idom[0] = 0;
const intersect = (a, b) => {
  while (a !== b) {
    while (rank[a] > rank[b]) a = idom[a];
    while (rank[b] > rank[a]) b = idom[b];
  }
  return a;
};
for (let changed = true; changed; ) {
  changed = false;
  for (let i = 1; i < order.length; i += 1) {
    const n = order[i];
    let dom = -1;
    for (const p of preds[n]) if (idom[p] !== -1) dom = dom === -1 ? p : intersect(p, dom);
    if (dom !== idom[n]) {
      idom[n] = dom;
      changed = true;
    }
  }
}
const isNew = (n) => !oldIds.has(nodes[n * nodeWidth + nId]);
const retained = new Float64Array(total);
for (let i = order.length - 1; i > 0; i -= 1) {
  const n = order[i];
  if (isNew(n)) retained[n] += nodes[n * nodeWidth + nSize];
  retained[idom[n]] += retained[n];
}
const edgeTo = (from, to) => {
  for (let e = firstEdge[from]; e < firstEdge[from + 1]; e += edgeWidth) if (edges[e + eTo] / nodeWidth === to) return edgeLabel(e);
  return '~';
};
const heads = new Map();
const children = Array.from({ length: total }, () => []);
for (const n of order) if (n !== 0) children[idom[n]].push(n);
for (const n of order) {
  if (n === 0 || !isNew(n) || isNew(idom[n])) continue;
  const label = `${nameOf(idom[n])}${edgeTo(idom[n], n)} → ${nameOf(n)}`;
  const entry = heads.get(label) ?? { size: 0, count: 0, nodes: [] };
  entry.size += retained[n];
  entry.count += 1;
  entry.nodes.push(n);
  heads.set(label, entry);
}
console.log(`\nby dominator: new objects whose immediate dominator is old, with the new bytes each retains:`);
for (const [label, { size, count: objects, nodes: members }] of [...heads].sort((a, b) => b[1].size - a[1].size).slice(0, top)) {
  if (size / 1024 / count < min) break;
  console.log(`  ${(size / 1024 / count).toFixed(2).padStart(7)} KiB ${(objects / count).toFixed(1).padStart(7)}×  ${label}`);
  // What they retain, one level down, by edge and name.
  const parts = new Map();
  for (const m of members) {
    for (const c of children[m]) {
      const part = `${edgeTo(m, c)} → ${nameOf(c)}`;
      parts.set(part, (parts.get(part) ?? 0) + retained[c]);
    }
  }
  // --paths K: the shortest chains from the GC roots to K of them, to say whose they are.
  for (const m of members.slice(0, Number(option('--paths', 0)))) {
    const path = [];
    for (let at = m; parentNode[at] > 0 && path.length < 12; at = parentNode[at]) path.unshift(`${edgeLabel(parentEdge[at])} ${nameOf(at)}`);
    console.log(`              path: ${path.join(' ')}`);
  }
  for (const [part, bytes] of [...parts].sort((a, b) => b[1] - a[1]).slice(0, Number(option('--parts', 6)))) {
    if (bytes / 1024 / count < min / 2) break;
    console.log(`            ${(bytes / 1024 / count).toFixed(2).padStart(7)} KiB  ${part}`);
  }
}

// New closures by function name (their own size and their new context's), and new objects by constructor excluding code.
const closures = new Map();
const byName = new Map();
let plain = 0;
for (let n = 1; n < total; n += 1) {
  if (!seen[n] || !isNew(n)) continue;
  const type = nodeTypes[nodes[n * nodeWidth + nType]];
  if (type !== 'code' && !(type === 'native' && strings[nodes[n * nodeWidth + nName]].includes('JSArrayBufferData'))) {
    plain += nodes[n * nodeWidth + nSize];
    const name = nameOf(n);
    const entry = byName.get(name) ?? { size: 0, count: 0 };
    entry.size += nodes[n * nodeWidth + nSize];
    entry.count += 1;
    byName.set(name, entry);
  }
  if (type !== 'closure') continue;
  let size = nodes[n * nodeWidth + nSize];
  for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += edgeWidth) {
    const to = edges[e + eTo] / nodeWidth;
    if (strings[edges[e + eName]] === 'context' && isNew(to) && parentNode[to] === n) size += nodes[to * nodeWidth + nSize];
  }
  const name = nameOf(n);
  const entry = closures.get(name) ?? { size: 0, count: 0 };
  entry.size += size;
  entry.count += 1;
  closures.set(name, entry);
}
// --strings K: the K new strings with the most bytes, by value, with the edge that holds them.
const stringsBy = new Map();
const arraysBy = new Map();
for (let n = 1; n < total && option('--strings'); n += 1) {
  if (!seen[n] || !isNew(n)) continue;
  const type = nodeTypes[nodes[n * nodeWidth + nType]];
  const holder = `${nameOf(parentNode[n])}${edgeLabel(parentEdge[n])}`;
  if (type === 'array' || type === 'object shape' || type === 'hidden') {
    // Shapes by the object whose shape they are (the first non-shape ancestor): who makes new hidden classes.
    let at = n;
    while (parentNode[at] > 0 && ['object shape', 'hidden', 'array'].includes(nodeTypes[nodes[parentNode[at] * nodeWidth + nType]])) at = parentNode[at];
    const owner = parentNode[at] > 0 ? `${nameOf(parentNode[at])}${edgeLabel(parentEdge[at])}` : '(root)';
    const grand = parentNode[at] > 0 && parentNode[parentNode[at]] > 0 ? `${nameOf(parentNode[parentNode[at]])}${edgeLabel(parentEdge[parentNode[at]])} ` : '';
    const key = `${grand}${owner} → ${nameOf(n)}`;
    arraysBy.set(key, (arraysBy.get(key) ?? 0) + nodes[n * nodeWidth + nSize]);
  }
  if (!['string', 'concatenated string', 'sliced string'].includes(type)) continue;
  const key = `${JSON.stringify(strings[nodes[n * nodeWidth + nName]].slice(0, 60))} ← ${holder}`;
  stringsBy.set(key, (stringsBy.get(key) ?? 0) + nodes[n * nodeWidth + nSize]);
}
for (const [title, by] of [['strings', stringsBy], ['arrays, shapes and hidden', arraysBy]]) {
  if (by.size === 0) continue;
  console.log(`\nnew ${title}, by value/holder:`);
  for (const [key, size] of [...by].sort((a, b) => b[1] - a[1]).slice(0, Number(option('--strings')))) console.log(`  ${(size / 1024 / count).toFixed(2).padStart(7)} KiB  ${key}`);
}
console.log(`\nnew, excluding code and array buffers: ${(plain / 1024 / count).toFixed(1)} KiB per server`);
for (const [name, { size, count: objects }] of [...byName].sort((a, b) => b[1].size - a[1].size).slice(0, 12)) {
  console.log(`  ${(size / 1024 / count).toFixed(2).padStart(7)} KiB ${(objects / count).toFixed(1).padStart(7)}×  ${name}`);
}
console.log('new closures (+ the new context each one first reaches), by name:');
for (const [name, { size, count: objects }] of [...closures].sort((a, b) => b[1].size - a[1].size).slice(0, top)) {
  if (size / 1024 / count < min / 3) break;
  console.log(`  ${(size / 1024 / count).toFixed(2).padStart(7)} KiB ${(objects / count).toFixed(1).padStart(7)}×  ${name}`);
}
session.disconnect();
await handle.close();
process.exit(0);
