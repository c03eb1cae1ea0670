import { register } from 'tsx/esm/api';
import { generatedTools, queries, realTools, searchable } from './fixtures/search/catalog.js';
register();
const { createToolIndex } = await import('../src/services/search/tool-index.ts');
const catalog = [...realTools(), ...generatedTools(5000)];
const index = createToolIndex();
const servers = new Map();
for (const t of catalog) { if (!servers.has(t.server)) servers.set(t.server, []); servers.get(t.server).push(t); }
for (const [s, l] of servers) index.setServerTools(s, l);
let found = 0, n = 0; const bySplit = {};
for (const q of queries()) {
  const hits = index.search(q.query, { limit: 10 });
  const names = hits.map((h) => h.tool.name);
  const rank = names.findIndex((x) => q.expect.includes(x)) + 1;
  const ok = rank >= 1 && rank <= 5; n++; if (ok) found++;
  bySplit[q.split] ??= [0, 0]; bySplit[q.split][1]++; if (ok) bySplit[q.split][0]++;
  if (!ok) console.log(`MISS [${q.split}] "${q.query}" want ${q.expect.join('|')} rank ${rank}\n   → ${names.slice(0, 5).join(', ')}`);
}
console.log('recall', (found / n).toFixed(3), JSON.stringify(bySplit));
