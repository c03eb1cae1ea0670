// 1. Per-call overhead: N sequential `echo` calls on one SDK-built stdio
// server (bench/fixtures/echo-server.mjs, a low-level Server answering from
// prebuilt data) through each contender; the raw SDK's Client.callTool is the
// baseline. Each contender runs in a process of its own (call-driver.js) with
// its own child of the same fixture, started anew for every repetition; they
// take turns in chunks of 100 calls (A B C … then B C … A), so a slow spell of
// the machine lands on all of them.
import { startDriver } from '../lib/drivers.js';
import { fmtRange, median, ratio, summarizeAll, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const LABELS = {
  raw: 'raw SDK (Client.callTool)',
  fleet: 'mcp-fleet (host.callTool)',
  langchain: '@langchain/mcp-adapters (tool.invoke)',
  mastra: '@mastra/mcp (tool.execute)',
  aisdk: '@ai-sdk/mcp (tool.execute)',
};
const CHUNK = 100;

await runSuite('percall', async ({ quick, reps }) => {
  const calls = quick ? 500 : 2000;
  const keys = Object.keys(LABELS);
  const samples = Object.fromEntries(keys.map((key) => [key, []]));
  // Per round (one chunk of each contender, back to back), each one's time over raw's:
  // the median of these pairs is less moved by a slow spell than a ratio of medians.
  const paired = Object.fromEntries(keys.map((key) => [key, []]));
  for (let rep = 0; rep < reps; rep += 1) {
    // Fresh processes every repetition: where the scheduler puts a client and
    // its server on the two cores sticks for a process's life and moves its
    // latency by ±20 %; new processes draw that anew each time.
    const drivers = {};
    for (let k = 0; k < keys.length; k += 1) {
      const key = keys[(rep + k) % keys.length];
      drivers[key] = await startDriver(key);
      await drivers[key].request({ op: 'seq', calls: quick ? 300 : 1000 }); // warm-up
    }
    for (const key of keys) await drivers[key].request({ op: 'gc' });
    const total = Object.fromEntries(keys.map((key) => [key, 0]));
    for (let round = 0; round < calls / CHUNK; round += 1) {
      const us = {};
      for (let k = 0; k < keys.length; k += 1) {
        const key = keys[(round + rep + k) % keys.length];
        us[key] = (await drivers[key].request({ op: 'seq', calls: CHUNK })).us;
        total[key] += us[key] * CHUNK;
      }
      for (const key of keys) paired[key].push(us[key] / us.raw);
    }
    for (const key of keys) samples[key].push(total[key] / calls);
    log(`percall rep ${rep + 1}: ${keys.map((key) => `${key} ${(total[key] / calls).toFixed(1)}`).join(', ')} µs/call`);
    for (const driver of Object.values(drivers)) await driver.close();
  }

  const stats = summarizeAll(samples);
  const rows = keys.map((key) => [
    LABELS[key],
    fmtRange(stats[key]),
    ratio(stats[key], stats.raw),
    `${median(paired[key]).toFixed(2)}×`,
  ]);
  const peers = ['langchain', 'mastra', 'aisdk'];
  const fastestPeer = peers.reduce((best, key) => (stats[key].median < stats[best].median ? key : best));
  const fleetRatio = stats.fleet.median / stats.raw.median;
  return {
    title: `Per-call overhead (${calls} sequential echo calls per repetition)`,
    stats,
    targets: [
      {
        name: 'per-call ≤ 1.05× raw SDK',
        value: `${fleetRatio.toFixed(3)}× (paired rounds: ${median(paired.fleet).toFixed(3)}×)`,
        pass: fleetRatio <= 1.05,
      },
      {
        name: `per-call no slower than the fastest peer (${LABELS[fastestPeer]})`,
        value: `${stats.fleet.median.toFixed(1)} vs ${stats[fastestPeer].median.toFixed(1)} µs`,
        pass: stats.fleet.median <= stats[fastestPeer].median,
      },
    ],
    pairedVsRaw: Object.fromEntries(keys.map((key) => [key, median(paired[key])])),
    markdown: table(['contender', 'µs per call: median (min–max)', 'vs raw', 'vs raw, median of paired 100-call rounds'], rows),
  };
});
