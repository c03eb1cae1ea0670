// One memory sample, in a fresh process (run with --expose-gc): the heap and
// RSS this process grows by per ready server, children excluded (they are
// other processes). A warm-up of 10 servers, each called once, loads and
// compiles the contender's code first, so the growth is the servers' own state.
//   node --expose-gc bench/suites/memory-probe.js CONTENDER COUNT  → one JSON line
import { contenderByKey } from '../lib/contenders.js';
import { MINI_SERVER, serverSpecs, settleHeap } from '../lib/env.js';
import { noChildren } from '../lib/processes.js';

const [key, countText] = process.argv.slice(2);
const count = Number(countText);
const contender = contenderByKey(key);

// 10 servers, each called: every code path of a connect and a call is
// compiled before the baseline, so what grows is per-server state.
const warm = await contender.open(serverSpecs(10, MINI_SERVER));
for (let i = 0; i < 10; i += 1) await warm.call(`s${String(i).padStart(2, '0')}`, 'echo', { text: 'warm' });
await warm.close();
await noChildren();
await settleHeap();
const before = process.memoryUsage();
const handle = await contender.open(serverSpecs(count, MINI_SERVER));
// One call per server, as an agent would make: lazily built per-tool state counts too.
for (let i = 0; i < count; i += 1) await handle.call(`s${String(i).padStart(2, '0')}`, 'echo', { text: 'x' });
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
