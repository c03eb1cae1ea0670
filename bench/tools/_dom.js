import { Session } from 'node:inspector/promises';
import { contenderByKey } from '../lib/contenders.js';
import { indexSnapshot, takeSnapshot } from '../lib/heap-snapshot.js';
import { startAndCall, warmUp } from '../lib/memory-sample.js';
const [key = 'fleet', countText = '20'] = process.argv.slice(2);
const count = Number(countText);
const contender = contenderByKey(key);
const session = new Session(); session.connect();
await warmUp(contender);
const { idsOf } = await import('../lib/heap-snapshot.js');
const oldIds = idsOf(await takeSnapshot(session));
const handle = await startAndCall(contender, count);
const g = indexSnapshot(await takeSnapshot(session));
const { total, firstEdge, edges, edgeWidth, eType, eTo, nodeWidth, edgeTypes, nodes, nSize, nName, nType, nodeTypes, strings } = g;
// postorder DFS from root over strong edges
const preds = Array.from({ length: total }, () => []);
const order = new Int32Array(total).fill(-1); const post = []; 
const stack = [[0, firstEdge[0]]]; const seen = new Uint8Array(total); seen[0] = 1;
while (stack.length) {
  const top = stack[stack.length - 1]; const [n, e] = top;
  if (e < firstEdge[n + 1]) {
    top[1] = e + edgeWidth;
    if (edgeTypes[edges[e + eType]] === 'weak') continue;
    const to = edges[e + eTo] / nodeWidth;
    preds[to].push(n);
    if (!seen[to]) { seen[to] = 1; stack.push([to, firstEdge[to]]); }
  } else { stack.pop(); order[n] = post.length; post.push(n); }
}
const idom = new Int32Array(total).fill(-1); idom[0] = 0;
const intersect = (a, b) => { while (a !== b) { while (order[a] < order[b]) a = idom[a]; while (order[b] < order[a]) b = idom[b]; } return a; };
for (let changed = true; changed; ) {
  changed = false;
  for (let i = post.length - 1; i >= 0; i--) {
    const n = post[i]; if (n === 0) continue;
    let nd = -1;
    for (const p of preds[n]) if (idom[p] !== -1) nd = nd === -1 ? p : intersect(p, nd);
    if (nd !== -1 && idom[n] !== nd) { idom[n] = nd; changed = true; }
  }
}
const retained = new Float64Array(total);
for (const n of post) { retained[n] += nodes[n * nodeWidth + nSize]; if (n !== 0 && idom[n] >= 0) retained[idom[n]] += retained[n]; }
const name = (n) => { const t = nodeTypes[nodes[n * nodeWidth + nType]]; const s = strings[nodes[n * nodeWidth + nName]]; return t === 'object' || t === 'closure' ? `${t}:${s}` : t; };
const by = new Map();
for (const n of post) { const k = name(n); const v = by.get(k) ?? { c: 0, r: 0 }; v.c++; v.r += retained[n]; by.set(k, v); }
const rows = [...by].filter(([, v]) => v.c >= count && v.c <= count * 6).map(([k, v]) => [k, v.c, v.r / v.c / 1024, v.r / 1024 / count]).sort((a, b) => b[3] - a[3]).slice(0, 60);
for (const [k, c, avg, per] of rows) console.log(per.toFixed(2).padStart(8), 'KiB/server', String(c).padStart(5), 'objs', avg.toFixed(2).padStart(7), 'KiB each ', k.slice(0, 80));

if (process.argv.includes('--new')) {
  const inName = new Map();
  for (let n = 0; n < total; n++) for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += edgeWidth) { const to = edges[e + eTo] / nodeWidth; if (idom[to] === n && !inName.has(to)) { const t = g.edgeTypes[edges[e + g.eType]]; const nm = edges[e + g.eName]; inName.set(to, (t === 'element' || t === 'hidden') ? `[]` : strings[nm]); } }
  const isNew = (n) => !oldIds.has(nodes[n * nodeWidth + g.nId]);
  const agg = new Map();
  for (const n of post) {
    if (n === 0 || !isNew(n) || isNew(idom[n])) continue;
    // holder chain: up to 2 old ancestors
    const h1 = idom[n], h2 = idom[h1];
    const k = `${name(h2).slice(0,30)} .${inName.get(h1)} ${name(h1).slice(0,30)} .${inName.get(n)} → ${name(n).slice(0,40)}`;
    const v = agg.get(k) ?? { c: 0, r: 0 }; v.c++; v.r += retained[n]; agg.set(k, v);
  }
  let sum = 0; for (const v of agg.values()) sum += v.r;
  console.log('new retained per server KiB', (sum / 1024 / count).toFixed(1));
  for (const [k, v] of [...agg].sort((a, b) => b[1].r - a[1].r).slice(0, 70)) console.log((v.r / 1024 / count).toFixed(2).padStart(8), String(v.c).padStart(5), k);
}
if (process.argv.includes('--fast')) {
  const edgeTo = (n, label) => { for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += edgeWidth) { const t = g.edgeTypes[edges[e + g.eType]]; const nm = (t === 'element' || t === 'hidden') ? String(edges[e + g.eName]) : strings[edges[e + g.eName]]; if (nm === label) return edges[e + eTo] / nodeWidth; } return -1; };
  const isNew = (n) => !oldIds.has(nodes[n * nodeWidth + g.nId]);
  const seenSrc = new Map();
  for (let n = 0; n < total; n++) {
    const f = edgeTo(n, 'fastpass'); if (f < 0) continue;
    const code = edgeTo(f, 'code'); const shared = edgeTo(f, 'shared');
    const script = shared >= 0 ? edgeTo(shared, 'script_or_debug_info') : -1;
    let src = '';
    if (script >= 0) { const so = edgeTo(script, 'source'); if (so >= 0) src = strings[nodes[so * nodeWidth + nName]]; }
    const keys = [...src.matchAll(/input\["([^"]+)"\]|\["([a-zA-Z_]+)"\]/g)].map((m) => m[1] ?? m[2]);
    const k = [...new Set(keys)].slice(0, 12).join(',');
    const ent = seenSrc.get(k) ?? { n: 0, newCode: 0, codeSize: 0 };
    ent.n++; if (code >= 0 && isNew(code)) { ent.newCode++; ent.codeSize += retained[code]; }
    seenSrc.set(k, ent);
  }
  for (const [k, v] of [...seenSrc].sort((a, b) => b[1].codeSize - a[1].codeSize)) console.log(v.n, 'closures', v.newCode, 'new code', (v.codeSize / 1024).toFixed(1), 'KiB', k.slice(0, 150));
}
if (process.argv.includes('--sig')) {
  const isNew = (n) => !oldIds.has(nodes[n * nodeWidth + g.nId]);
  const props = (n) => { const out = []; for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += edgeWidth) { const t = g.edgeTypes[edges[e + g.eType]]; if (t === 'property' || t === 'context') out.push(strings[edges[e + g.eName]]); } return out; };
  const agg = new Map();
  for (const n of post) {
    if (n === 0 || !isNew(n) || isNew(idom[n])) continue;
    const nm = name(n); if (nm === 'native' || nm === 'code' || nm.startsWith('synthetic')) continue;
    const k = nm.slice(0, 30) + ' {' + props(n).slice(0, 10).join(',') + '}';
    const v = agg.get(k) ?? { c: 0, r: 0 }; v.c++; v.r += retained[n]; agg.set(k, v);
  }
  let sum = 0; for (const v of agg.values()) sum += v.r;
  console.log('non-code non-native new retained per server KiB', (sum / 1024 / count).toFixed(1));
  for (const [k, v] of [...agg].sort((a, b) => b[1].r - a[1].r).slice(0, 70)) console.log((v.r / 1024 / count).toFixed(2).padStart(8), String(v.c).padStart(5), k.slice(0, 170));
}
if (process.argv.includes('--big')) {
  // incoming edge names
  const inName = new Map();
  for (let n = 0; n < total; n++) for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += edgeWidth) { const to = edges[e + eTo] / nodeWidth; if (idom[to] === n) { const t = g.edgeTypes[edges[e + g.eType]]; const nm = edges[e + g.eName]; inName.set(to, (t === 'element' || t === 'hidden') ? `[${nm}]` : strings[nm]); } }
  const big = post.filter((n) => retained[n] > 30 * 1024 && retained[n] < 8e6).sort((a, b) => retained[b] - retained[a]).slice(0, 80);
  for (const n of big) console.log((retained[n] / 1024).toFixed(1).padStart(9), 'KiB', name(n).slice(0, 50).padEnd(50), '<-', inName.get(n), '<-', name(idom[n]).slice(0, 40));
}
await handle.close(); process.exit(0);
