import { readFileSync } from 'node:fs';
const files = process.argv.slice(2);
const agg = new Map(); const inner = new Map(); let total = 0;
for (const file of files) {
  const p = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    const leaf = byId.get(id).callFrame;
    if (['(idle)', '(program)', 'dispatch'].includes(leaf.functionName)) return;
    total += dt;
    const chain = [];
    for (let at = id; at !== undefined; at = parent.get(at)) chain.push(byId.get(at).callFrame);
    // innermost fleet frame
    const fleetFrames = chain.filter((f) => f.url.includes('/dist/'));
    const key = fleetFrames.length ? `${fleetFrames[0].functionName || '(anon)'} ${fleetFrames[0].url.split('/dist/')[1]}:${fleetFrames[0].lineNumber+1}` : `(no fleet) ${leaf.functionName} ${leaf.url.split('/').slice(-2).join('/')}`;
    agg.set(key, (agg.get(key) ?? 0) + dt);
  });
}
console.log('total non-idle ms per file', (total / 1000 / files.length).toFixed(1));
for (const [k, v] of [...agg].sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log((v / 1000 / files.length).toFixed(2).padStart(8), k);
