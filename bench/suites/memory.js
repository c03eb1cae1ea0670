// 6. Memory: worker heap and RSS growth per ready server, children excluded,
// each sample in a fresh `node --expose-gc` process (memory-probe.js), the
// contenders taking turns. 20 servers (bench/fixtures/mini-server.mjs) per
// sample, each called once.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BENCH_DIR } from '../lib/env.js';
import { alternate, fmt, fmtRange, ratio, summarize, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const run = promisify(execFile);
const LABELS = {
  raw: 'raw SDK',
  fleet: 'mcp-fleet',
  langchain: '@langchain/mcp-adapters',
  mastra: '@mastra/mcp (default)',
  aisdk: '@ai-sdk/mcp',
};

await runSuite('memory', async ({ quick, reps }) => {
  const count = quick ? 10 : 20;
  const details = {};
  const samples = await alternate(Object.keys(LABELS), reps, async (key) => {
    const { stdout } = await run(process.execPath, ['--expose-gc', join(BENCH_DIR, 'suites', 'memory-probe.js'), key, String(count)], {
      maxBuffer: 1 << 20,
    });
    const sample = JSON.parse(stdout.trim().split('\n').at(-1));
    (details[key] ??= []).push(sample);
    return sample.heapPerServerKiB;
  }, { onSample: (key, rep) => log(`memory ${key} rep ${rep + 1}: ${JSON.stringify(details[key].at(-1))}`) });

  const stats = Object.fromEntries(
    Object.keys(LABELS).map((key) => [
      key,
      {
        heap: summarize(samples[key]),
        code: summarize(details[key].map((s) => s.codePerServerKiB)),
        rss: summarize(details[key].map((s) => s.rssPerServerKiB)),
      },
    ]),
  );
  const rows = Object.entries(LABELS).map(([key, label]) => [
    label,
    fmtRange(stats[key].heap, 0),
    ratio(stats[key].heap, stats.raw.heap),
    fmt(stats[key].code.median, 0),
    fmtRange(stats[key].rss, 0),
  ]);
  return {
    title: `Memory per ready server (${count} servers per sample, fresh process each)`,
    stats,
    targets: [
      {
        name: '≤ 128 KiB worker heap per ready server',
        value: `${fmt(stats.fleet.heap.median, 0)} KiB`,
        pass: stats.fleet.heap.median <= 128,
      },
      {
        name: '≤ 48 KiB worker heap per ready server',
        value: `${fmt(stats.fleet.heap.median, 0)} KiB (of it compiled code ${fmt(stats.fleet.code.median, 0)})`,
        pass: stats.fleet.heap.median <= 48,
      },
      {
        name: '≤ 64 KiB worker RSS per ready server',
        value: `${fmt(stats.fleet.rss.median, 0)} KiB`,
        pass: stats.fleet.rss.median <= 64,
      },
    ],
    markdown: table(
      ['contender', 'heap KiB per server: median (min–max)', 'vs raw', 'of it compiled code (median)', 'RSS KiB per server: median (min–max)'],
      rows,
    ),
  };
});
