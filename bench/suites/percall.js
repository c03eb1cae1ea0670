// 1. Per-call overhead: N sequential `echo` calls on one SDK-built stdio
// server (bench/fixtures/echo-server.mjs, a low-level Server answering from
// prebuilt data) through each contender; the raw SDK's Client.callTool is the
// baseline. Each contender runs in a process of its own (call-driver.js) with
// its own child of the same fixture, started anew for every repetition; they
// take turns in chunks of 100 calls (A B C … then B C … A), so a slow spell of
// the machine lands on all of them.
import { callsInTurns } from '../lib/drivers.js';
import { fmtRange, median, ratio, summarizeAll, table } from '../lib/stats.js';
import { runSuite } from '../lib/suite.js';

const LABELS = {
  raw: 'raw SDK (Client.callTool)',
  fleet: 'mcp-fleet (host.callTool)',
  langchain: '@langchain/mcp-adapters (tool.invoke)',
  mastra: '@mastra/mcp (tool.execute)',
  aisdk: '@ai-sdk/mcp (tool.execute)',
};

await runSuite('percall', async ({ quick, reps }) => {
  const calls = quick ? 500 : 2000;
  const keys = Object.keys(LABELS);
  const contenders = Object.fromEntries(keys.map((key) => [key, { driver: key }]));
  const { samples, paired } = await callsInTurns({ contenders, baseline: 'raw', reps, calls, warmup: quick ? 300 : 1000, label: 'percall' });

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
