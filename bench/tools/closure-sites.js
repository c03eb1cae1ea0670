// The closures a ready server keeps, by the source line that made them: heap
// snapshots (one inspector session, so object ids match) after memory-probe.js's
// warm-up and after COUNT servers started and called; every closure of the
// second that the first lacks, counted per server with the bytes of the
// closure and of the context it first reaches (a context several closures
// share is counted with each). A factory whose object is a bag of closures
// shows as many lines of one file; a class's methods do not show at all.
// --path NAME prints how the GC roots reach one new closure named NAME.
//   node --expose-gc bench/tools/closure-sites.js [fleet|raw|…] [COUNT=20] [--top 60] [--path NAME]
import { Session } from 'node:inspector/promises';
import { contenderByKey } from '../lib/contenders.js';
import { idsOf, indexSnapshot, shortestPaths, takeSnapshot } from '../lib/heap-snapshot.js';
import { startAndCall, warmUp } from '../lib/memory-sample.js';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const [key = 'fleet', countText = '20'] = args.filter((arg, i) => !arg.startsWith('--') && !args[i - 1]?.startsWith('--'));
const count = Number(countText);
const top = Number(option('--top', 60));
const pathTo = option('--path', null);
const contender = contenderByKey(key);

const session = new Session();
session.connect();
// Script ids → URLs, for the snapshot's closure locations.
const scripts = new Map();
session.on('Debugger.scriptParsed', (message) => scripts.set(message.params.scriptId, message.params.url));
await session.post('Debugger.enable');

const snapshot = () => takeSnapshot(session);

await warmUp(contender);
const oldIds = idsOf(await snapshot());
const handle = await startAndCall(contender, count);
const graph = indexSnapshot(await snapshot());
const { meta, nodes, edges, strings, locations, nodeWidth, edgeWidth, nType, nName, nId, nSize, eType, eName, eTo, nodeTypes, edgeTypes, total, firstEdge } =
  graph;
const isNew = (n) => !oldIds.has(nodes[n * nodeWidth + nId]);
const isClosure = (n) => nodeTypes[nodes[n * nodeWidth + nType]] === 'closure';
const nameOf = (n) => strings[nodes[n * nodeWidth + nName]];
const shortUrl = (url) => url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(dist|bench|src)\//, '$1/');

// Each closure's location: [node index, script id, line, column].
const where = new Map();
const locationWidth = meta.location_fields.length;
for (let i = 0; i < locations.length; i += locationWidth) {
  const url = scripts.get(String(locations[i + 1]));
  where.set(locations[i] / nodeWidth, `${url === undefined ? '(native)' : shortUrl(url)}:${locations[i + 2] + 1}`);
}

const sites = new Map();
let closures = 0;
let bytes = 0;
for (let n = 0; n < total; n += 1) {
  if (!isClosure(n) || !isNew(n)) continue;
  let size = nodes[n * nodeWidth + nSize];
  for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += edgeWidth) {
    if (strings[edges[e + eName]] !== 'context' || edgeTypes[edges[e + eType]] === 'weak') continue;
    const context = edges[e + eTo] / nodeWidth;
    if (isNew(context)) size += nodes[context * nodeWidth + nSize];
  }
  const label = `${nameOf(n) || '(anonymous)'} ${where.get(n) ?? '(native)'}`;
  const site = sites.get(label) ?? { count: 0, size: 0 };
  site.count += 1;
  site.size += size;
  sites.set(label, site);
  closures += 1;
  bytes += size;
}

console.log(`${key}: ${(closures / count).toFixed(1)} new closures per server, ${(bytes / 1024 / count).toFixed(2)} KiB with their contexts; by site:`);
for (const [label, site] of [...sites].sort((a, b) => b[1].count - a[1].count || b[1].size - a[1].size).slice(0, top)) {
  console.log(`  ${(site.count / count).toFixed(2).padStart(6)}  ${String(Math.round(site.size / count)).padStart(5)} B  ${label}`);
}

if (pathTo !== null) {
  // The shortest path from the root to the last new closure of that name.
  const { parentEdge, parentNode } = shortestPaths(graph);
  let target = -1;
  for (let n = total - 1; n >= 0 && target === -1; n -= 1) if (isClosure(n) && isNew(n) && nameOf(n) === pathTo) target = n;
  if (target === -1) console.log(`no new closure named ${pathTo}`);
  else {
    const links = [];
    for (let at = target; parentNode[at] !== -1; at = parentNode[at]) {
      const e = parentEdge[at];
      const type = edgeTypes[edges[e + eType]];
      const edge = type === 'element' || type === 'hidden' ? `[${edges[e + eName]}]` : `.${strings[edges[e + eName]]}`;
      links.push(`${nameOf(parentNode[at]).slice(0, 40) || `(${nodeTypes[nodes[parentNode[at] * nodeWidth + nType]]})`}${edge}`);
    }
    console.log(`${pathTo} ⇐ ${links.join(' ⇐ ')}`);
  }
}

await handle.close();
process.exit(0);
