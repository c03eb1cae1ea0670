// One memory sample, in a fresh process (run with --expose-gc): the heap and
// RSS this process grows by per ready server, children excluded (they are
// other processes). A warm-up of 10 servers, each called once, loads and
// compiles the contender's code first, so the growth is the servers' own state.
//   node --expose-gc bench/suites/memory-probe.js CONTENDER COUNT  → one JSON line
import { contenderByKey } from '../lib/contenders.js';
import { settleHeap } from '../lib/env.js';
import { startAndCall, warmUp } from '../lib/memory-sample.js';

const [key, countText] = process.argv.slice(2);
const count = Number(countText);
const contender = contenderByKey(key);

await warmUp(contender);
const before = process.memoryUsage();
const handle = await startAndCall(contender, count);
await settleHeap();
const after = process.memoryUsage();
process.stdout.write(
  `${JSON.stringify({
    heapPerServerKiB: (after.heapUsed - before.heapUsed) / 1024 / count,
    rssPerServerKiB: (after.rss - before.rss) / 1024 / count,
    externalPerServerKiB: (after.external - before.external) / 1024 / count,
  })}\n`,
);
await handle.close();
process.exit(0);
