// Summarizes a V8 .cpuprofile (from `node --cpu-prof`): self time per
// function and per package, so a profile can be quoted in RESULTS.md.
//   node bench/tools/profile-summary.js FILE.cpuprofile [--top 25] [--filter TEXT] [--inclusive NAME,NAME]
// --inclusive: total time (self + callees) of the named functions, each counted once per sample.
import { readFileSync } from 'node:fs';

const [file, ...rest] = process.argv.slice(2);
const top = Number(rest[rest.indexOf('--top') + 1]) || 25;
const filter = rest.includes('--filter') ? rest[rest.indexOf('--filter') + 1] : null;
const profile = JSON.parse(readFileSync(file, 'utf8'));

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map();
const dt = profile.timeDeltas;
for (let i = 0; i < profile.samples.length; i += 1) {
  self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (dt[i] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);

function packageOf(url) {
  if (!url) return '(native/idle)';
  if (url.startsWith('node:')) return 'node internals';
  const nm = url.lastIndexOf('node_modules/');
  if (nm !== -1) {
    const parts = url.slice(nm + 13).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (url.includes('/src/')) return 'mcp-fleet src';
  return url.split('/').slice(-2).join('/');
}

const fn = new Map();
const pkg = new Map();
for (const [id, us] of self) {
  const node = byId.get(id);
  const { functionName, url, lineNumber } = node.callFrame;
  const key = `${functionName || '(anonymous)'}  ${url.split('/').slice(-3).join('/')}:${lineNumber + 1}`;
  if (filter && !key.includes(filter)) continue;
  fn.set(key, (fn.get(key) ?? 0) + us);
  const p = packageOf(url);
  pkg.set(p, (pkg.get(p) ?? 0) + us);
}
const inclusiveNames = rest.includes('--inclusive') ? rest[rest.indexOf('--inclusive') + 1].split(',') : [];
if (inclusiveNames.length > 0) {
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const inclusive = new Map(inclusiveNames.map((name) => [name, 0]));
  for (const [id, us] of self) {
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const name = byId.get(at).callFrame.functionName;
      if (inclusive.has(name) && !seen.has(name)) {
        seen.add(name);
        inclusive.set(name, inclusive.get(name) + us);
      }
    }
  }
  console.log('inclusive time');
  for (const [name, us] of inclusive) console.log(`  ${(us / 1000).toFixed(1).padStart(8)} ms  ${name}`);
  console.log('');
}
const pct = (us) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
console.log('\nself time by package');
for (const [name, us] of [...pkg].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`  ${pct(us)}  ${name}`);
console.log('\nself time by function');
for (const [name, us] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`  ${pct(us)}  ${name}`);
