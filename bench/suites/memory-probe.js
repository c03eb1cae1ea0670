// One memory sample, in a fresh process (run with --expose-gc): the heap and
// RSS this process grows by per ready server, children excluded (they are
// other processes). A warm-up of 10 servers, each called once, loads and
// compiles the contender's code first, so the growth is the servers' own state
// and what V8 compiles only once the sample makes more code hot (the code
// space's share of it is reported apart). Both readings follow one more full
// GC than the settle's: the settle's last leaves 40–400 KiB that the next one
// frees, which made a sample read up to 20 KiB per server low (bench/README.md).
//   node --expose-gc bench/suites/memory-probe.js CONTENDER COUNT  → one JSON line
import { getHeapSpaceStatistics } from 'node:v8';
import { contenderByKey } from '../lib/contenders.js';
import { settleHeap } from '../lib/env.js';
import { startAndCall, usageAfterOneMoreGc, warmUp } from '../lib/memory-sample.js';

const [key, countText] = process.argv.slice(2);
const count = Number(countText);
const contender = contenderByKey(key);

await warmUp(contender);
const codeSpace = () => getHeapSpaceStatistics().find((space) => space.space_name === 'code_space')?.space_used_size ?? 0;
const before = usageAfterOneMoreGc();
const codeBefore = codeSpace();
const handle = await startAndCall(contender, count);
await settleHeap();
const after = usageAfterOneMoreGc();
const codeAfter = codeSpace();
process.stdout.write(
  `${JSON.stringify({
    heapPerServerKiB: (after.heapUsed - before.heapUsed) / 1024 / count,
    rssPerServerKiB: (after.rss - before.rss) / 1024 / count,
    externalPerServerKiB: (after.external - before.external) / 1024 / count,
    codePerServerKiB: (codeAfter - codeBefore) / 1024 / count,
  })}\n`,
);
await handle.close();
process.exit(0);
