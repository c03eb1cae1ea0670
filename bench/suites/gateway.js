// The gateway (`/mcp`): what its hop costs a call, and what an open session
// holds. Every sample is a fresh `node --expose-gc` process (gateway-probe.js).
// 1. Per call at concurrency 1 and 8: SDK clients through `/mcp` of a real
//    `mcp-fleet serve` worker process (a 2025 session; 2026 stateless
//    requests) against a raw SDK client on the same backend over stdio, the
//    gateway's HTTP hop included, 100-call chunks in turn. Beside them, the
//    floor of any HTTP hop here: `GET /healthz` of the same worker. The same
//    for a backend over Streamable HTTP (an SDK v2 server process) against a
//    raw SDK client calling it directly. "The gateway's own cost" is a call
//    through it minus the floor minus the raw call: what the hop adds beyond
//    one HTTP round trip.
// 2. Heap per open 2025 `/mcp` session (each initialized and used once), and
//    what is left once every session ended (DELETE).
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BENCH_DIR } from '../lib/env.js';
import { fmt, fmtRange, median, summarize, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const run = promisify(execFile);

async function probe(...args) {
  const { stdout } = await run(process.execPath, ['--expose-gc', join(BENCH_DIR, 'suites', 'gateway-probe.js'), ...args.map(String)], { maxBuffer: 1 << 26 });
  return JSON.parse(stdout.trim().split('\n').at(-1));
}

const CONTENDERS = ['raw', 'http', 'legacy', 'modern', 'rawHttp', 'legacyHttp', 'modernHttp'];
const LABELS = {
  raw: 'raw SDK client → backend (stdio)',
  http: 'floor: `GET /healthz` of the same worker (an HTTP round trip, no MCP)',
  legacy: 'SDK client → `/mcp` (2025 session) → backend',
  modern: 'SDK client → `/mcp` (2026, stateless) → backend',
  rawHttp: 'raw SDK client → HTTP backend (Streamable HTTP)',
  legacyHttp: 'SDK client → `/mcp` (2025 session) → HTTP backend',
  modernHttp: 'SDK client → `/mcp` (2026, stateless) → HTTP backend',
};
/** Each call through the gateway, and the raw call on the same backend it is measured against. */
const THROUGH = { legacy: 'raw', modern: 'raw', legacyHttp: 'rawHttp', modernHttp: 'rawHttp' };
const ERA = { legacy: '2025 session', modern: '2026', legacyHttp: '2025 session', modernHttp: '2026' };

await runSuite('gateway', async ({ quick, reps }) => {
  const calls = quick ? 400 : 1000;
  const warmup = quick ? 200 : 500;
  const sessions = 200;
  const levels = [1, 8];
  /** Per concurrency, per contender: each repetition's median µs per call, and the paired chunk ratios. */
  const latency = Object.fromEntries(levels.map((c) => [c, { medians: Object.fromEntries(CONTENDERS.map((k) => [k, []])), paired: Object.fromEntries(Object.keys(THROUGH).map((k) => [k, []])) }]));
  const memory = [];
  for (let rep = 0; rep < reps; rep += 1) {
    for (const concurrency of rep % 2 === 0 ? levels : [...levels].reverse()) {
      const { samples, chunkMeans } = await probe('latency', calls, warmup, concurrency);
      const into = latency[concurrency];
      for (const name of CONTENDERS) into.medians[name].push(median(samples[name]));
      for (const [name, raw] of Object.entries(THROUGH)) into.paired[name].push(...chunkMeans[name].map((us, i) => us / chunkMeans[raw][i]));
      log(`gateway c=${concurrency} rep ${rep + 1}: ${CONTENDERS.map((name) => `${name} ${median(samples[name]).toFixed(0)} µs`).join(', ')}`);
    }
    const sample = await probe('memory', sessions);
    memory.push(sample);
    log(`gateway memory rep ${rep + 1}: ${JSON.stringify(sample)}`);
  }

  const stats = {};
  const rows = [];
  const targets = [];
  const ownCost = [];
  for (const concurrency of levels) {
    const { medians, paired } = latency[concurrency];
    const s = Object.fromEntries(CONTENDERS.map((name) => [name, summarize(medians[name])]));
    stats[`c${concurrency}`] = s;
    for (const name of CONTENDERS) {
      const raw = THROUGH[name] ?? (name === 'rawHttp' ? 'rawHttp' : 'raw');
      const ratio = s[name].median / s[raw].median;
      const pairedRatio = THROUGH[name] !== undefined ? `${median(paired[name]).toFixed(2)}×` : '';
      rows.push([String(concurrency), LABELS[name], fmtRange(s[name], 0), `${ratio.toFixed(2)}×`, pairedRatio]);
    }
    for (const [name, raw] of Object.entries(THROUGH)) {
      const own = s[name].median - s.http.median - s[raw].median;
      stats[`c${concurrency}`][`${name}Own`] = own;
      ownCost.push([String(concurrency), `${ERA[name]}, ${raw === 'raw' ? 'stdio' : 'HTTP'} backend`, fmt(own, 0)]);
    }
    for (const name of ['legacy', 'modern']) {
      const ratio = s[name].median / s.raw.median;
      targets.push({
        name: `per call through \`/mcp\` (${name === 'legacy' ? '2025 session' : '2026'}) at concurrency ${concurrency} vs raw SDK ≤ 1.5×`,
        value: `${ratio.toFixed(2)}× (paired chunks ${median(paired[name]).toFixed(2)}×; the hop over the HTTP floor: ${fmt(s[name].median - s.http.median - s.raw.median, 0)} µs)`,
        pass: ratio <= 1.5,
      });
    }
    for (const name of ['legacyHttp', 'modernHttp']) {
      const ratio = s[name].median / s.rawHttp.median;
      targets.push({
        name: `per call through \`/mcp\` (${ERA[name]}) to an HTTP backend at concurrency ${concurrency} vs raw SDK on it ≤ 1.5×`,
        value: `${ratio.toFixed(2)}× (paired chunks ${median(paired[name]).toFixed(2)}×; the gateway's own cost: ${fmt(s[name].median - s.http.median - s.rawHttp.median, 0)} µs)`,
        pass: ratio <= 1.5,
      });
    }
  }
  stats.session = summarize(memory.map((m) => m.heapPerSessionKiB));
  stats.sessionRss = summarize(memory.map((m) => m.rssPerSessionKiB));
  stats.left = summarize(memory.map((m) => m.leftPerSessionKiB));
  targets.push(
    { name: `heap per open 2025 \`/mcp\` session (${sessions} sessions; informational)`, value: `${fmt(stats.session.median, 1)} KiB`, pass: null },
    { name: 'heap back once sessions ended (≤ 4 KiB per session left)', value: `${fmt(stats.left.median, 1)} KiB`, pass: stats.left.median <= 4 },
  );
  const markdown = [
    table(['concurrency', `${calls} calls of \`echo\` per repetition`, 'µs per call: median (min–max) of the repetitions\' medians', 'vs raw (on the same backend)', 'vs raw, median of paired 100-call chunks'], rows),
    '',
    table(['concurrency', "the gateway's own cost per call (through it − the HTTP floor − raw)", 'µs'], ownCost),
    '',
    table(
      [`${sessions} open 2025 \`/mcp\` sessions (initialized, \`tools/list\` once)`, 'KiB per session: median (min–max)'],
      [
        ['heap per open session', fmtRange(stats.session, 1)],
        ['RSS per open session', fmtRange(stats.sessionRss, 0)],
        ['heap left once every session ended (DELETE)', fmtRange(stats.left, 1)],
      ],
    ),
  ].join('\n');
  return {
    title: `Gateway (\`/mcp\` of a real worker vs a raw SDK client on the backend; ${calls} calls per concurrency, ${sessions} sessions per repetition, fresh process each)`,
    stats,
    targets,
    markdown,
  };
});
