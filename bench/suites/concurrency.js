// 2. Concurrency: 64 calls fired at once at `slow {ms: 50}`, timed until the
// last answers. mcp-fleet at max_concurrent_calls 1, 4, 16 and 64 (one host,
// one server per setting); the raw SDK (baseline) and the peers have no such
// bound and run all 64 at once. Each contender in a process of its own
// (call-driver.js); they take turns, rotated per repetition.
import { startDriver } from '../lib/drivers.js';
import { alternate, fmtRange, ratio, summarizeAll, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const CALLS = 64;
const MS = 50;
const LIMITS = [1, 4, 16, 64];

await runSuite('concurrency', async ({ reps }) => {
  const drivers = {};
  for (const key of ['raw', 'langchain', 'mastra', 'aisdk']) drivers[key] = await startDriver(key);
  drivers.fleet = await startDriver('fleet', Object.fromEntries(LIMITS.map((limit) => [`c${limit}`, { max_concurrent_calls: limit }])));
  const targets = {
    raw: { label: 'raw SDK', driver: 'raw', server: 's00' },
    ...Object.fromEntries(
      LIMITS.map((limit) => [`fleet${limit}`, { label: `mcp-fleet, max_concurrent_calls ${limit}`, driver: 'fleet', server: `c${limit}` }]),
    ),
    langchain: { label: '@langchain/mcp-adapters', driver: 'langchain', server: 's00' },
    mastra: { label: '@mastra/mcp (default)', driver: 'mastra', server: 's00' },
    aisdk: { label: '@ai-sdk/mcp', driver: 'aisdk', server: 's00' },
  };
  const burst = async (key) => {
    const { driver, server } = targets[key];
    return (await drivers[driver].request({ op: 'burst', calls: CALLS, ms: MS, server })).ms;
  };
  for (const key of Object.keys(targets)) await burst(key); // warm-up
  const order = ['raw', 'fleet64', 'fleet16', 'fleet4', 'fleet1', 'langchain', 'mastra', 'aisdk'];
  const samples = await alternate(order, reps, async (key) => {
    await drivers[targets[key].driver].request({ op: 'gc' });
    return burst(key);
  }, { onSample: (key, rep, ms) => log(`concurrency ${key} rep ${rep + 1}: ${ms.toFixed(1)} ms`) });
  for (const driver of Object.values(drivers)) await driver.close();

  const stats = summarizeAll(samples);
  const serialized = stats.fleet1.median;
  const rows = order.map((key) => {
    const limit = key.startsWith('fleet') ? Number(key.slice(5)) : null;
    const speedup = serialized / stats[key].median;
    return [
      targets[key].label,
      fmtRange(stats[key]),
      ratio(stats[key], stats.raw),
      `${speedup.toFixed(1)}×${limit > 1 ? ` (target ≥ ${(0.9 * limit).toFixed(1)}×)` : ''}`,
    ];
  });
  const results = [
    {
      name: '64 concurrent calls at max_concurrent_calls 64 ≤ 1.10× raw',
      value: `${(stats.fleet64.median / stats.raw.median).toFixed(3)}×`,
      pass: stats.fleet64.median / stats.raw.median <= 1.1,
    },
    ...LIMITS.filter((limit) => limit > 1).map((limit) => {
      const speedup = serialized / stats[`fleet${limit}`].median;
      return {
        name: `throughput at max_concurrent_calls ${limit} ≥ ${(0.9 * limit).toFixed(1)}× serialized (mcc 1)`,
        value: `${speedup.toFixed(2)}× (raw SDK, unbounded: ${(serialized / stats.raw.median).toFixed(2)}×)`,
        pass: speedup >= 0.9 * limit,
      };
    }),
  ];
  return {
    title: `Concurrency (${CALLS} calls at once to a tool that waits ${MS} ms)`,
    stats,
    targets: results,
    markdown: table(['contender', 'ms for all 64: median (min–max)', 'vs raw', 'throughput vs serialized (mcc 1)'], rows),
  };
});
