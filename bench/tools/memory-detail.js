// memory-probe.js with every process.memoryUsage() field and each V8 heap
// space's size before → after: shows whether a contender's RSS growth is
// state it keeps or new-space pages its start-up garbage touched (the young
// generation grows to 2 × 16 MiB semi-spaces and stays resident after a GC).
// Last, what one more full GC frees of the probe's two readings, and the heap
// growth between the two readings taken after it, as memory-probe.js now
// reads (bench/README.md, Reading the numbers).
//   node --expose-gc bench/tools/memory-detail.js [fleet|raw|…] [COUNT=20]
import v8 from 'node:v8';
import { contenderByKey } from '../lib/contenders.js';
import { settleHeap } from '../lib/env.js';
import { startAndCall, usageAfterOneMoreGc, warmUp } from '../lib/memory-sample.js';

const [key = 'fleet', countText = '20'] = process.argv.slice(2);
const count = Number(countText);
const contender = contenderByKey(key);
const spaces = () => new Map(v8.getHeapSpaceStatistics().map((s) => [s.space_name, s]));
await warmUp(contender);
const before = process.memoryUsage();
const spacesBefore = spaces();
const leanBefore = usageAfterOneMoreGc().heapUsed;
const handle = await startAndCall(contender, count);
await settleHeap();
const after = process.memoryUsage();
const spacesAfter = spaces();
const leanAfter = usageAfterOneMoreGc().heapUsed;
const per = (a, b) => ((a - b) / 1024 / count).toFixed(1).padStart(8);
console.log(`${key}, KiB per server:`);
for (const field of Object.keys(after)) console.log(`  ${field.padEnd(26)}${per(after[field], before[field])}`);
for (const [name, space] of spacesAfter) {
  const was = spacesBefore.get(name);
  if (!was || (space.space_size === was.space_size && space.space_used_size === was.space_used_size)) continue;
  console.log(
    `  ${name.padEnd(26)}used ${per(space.space_used_size, was.space_used_size)}   size ${(was.space_size / 1048576).toFixed(1)} → ${(space.space_size / 1048576).toFixed(1)} MiB`,
  );
}
const kib = (bytes) => (bytes / 1024).toFixed(0);
console.log(
  `  one more full GC frees ${kib(before.heapUsed - leanBefore)} KiB of the baseline and ${kib(after.heapUsed - leanAfter)} KiB after the sample;` +
    ` heapUsed per server between the readings after it: ${per(leanAfter, leanBefore).trim()}`,
);
await handle.close();
process.exit(0);
