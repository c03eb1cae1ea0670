// How the memory suite's RSS column answers to garbage alone: memory-probe.js's
// sample of the raw SDK, with KiB of short-lived objects made per server start
// (in the warm-up too, as a contender's own start would), each count in fresh
// processes. Shows the threshold below which start-up garbage costs no RSS.
//   node bench/tools/rss-vs-garbage.js [KIB...=0 150 300 450 600] [--runs 2]
import { execFileSync } from 'node:child_process';
import { contenderByKey } from '../lib/contenders.js';
import { settleHeap } from '../lib/env.js';
import { startAndCall, warmUp } from '../lib/memory-sample.js';

const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const runs = runsAt === -1 ? 2 : Number(args[runsAt + 1]);

if (process.env.RSS_VS_GARBAGE_KIB !== undefined) {
  // One sample, in this (fresh, --expose-gc) process.
  const extra = Number(process.env.RSS_VS_GARBAGE_KIB) * 1024;
  const raw = contenderByKey('raw');
  let sink;
  const garbage = () => {
    for (let i = 0; i < extra / 64; i += 1) sink = { a: i, b: i, c: i, d: i, e: i, f: i };
  };
  const contender = {
    ...raw,
    async open(specs) {
      for (let i = 0; i < specs.length; i += 1) garbage();
      return raw.open(specs);
    },
  };
  await warmUp(contender);
  const before = process.memoryUsage();
  const handle = await startAndCall(contender, 20);
  await settleHeap();
  const after = process.memoryUsage();
  void sink;
  process.stdout.write(`${JSON.stringify({ rssPerServerKiB: (after.rss - before.rss) / 1024 / 20, heapPerServerKiB: (after.heapUsed - before.heapUsed) / 1024 / 20 })}\n`);
  await handle.close();
  process.exit(0);
}

const counts = args.filter((arg, i) => !arg.startsWith('--') && args[i - 1] !== '--runs').map(Number);
for (const kib of counts.length > 0 ? counts : [0, 150, 300, 450, 600]) {
  const samples = [];
  for (let run = 0; run < runs; run += 1) {
    const out = execFileSync(process.execPath, ['--expose-gc', new URL(import.meta.url).pathname], { env: { ...process.env, RSS_VS_GARBAGE_KIB: String(kib) }, encoding: 'utf8' });
    samples.push(JSON.parse(out.trim().split('\n').at(-1)));
  }
  console.log(`raw SDK + ${String(kib).padStart(4)} KiB garbage per start: RSS KiB per server ${samples.map((s) => s.rssPerServerKiB.toFixed(0)).join(', ')}; heap ${samples.map((s) => s.heapPerServerKiB.toFixed(1)).join(', ')}`);
}
