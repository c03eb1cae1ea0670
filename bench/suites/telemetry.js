// 10. Telemetry off: what mcp-fleet's OpenTelemetry instrumentation costs per
// tool call when the embedding application registers no SDK (issue 17's
// target: ≤ 1.01× the same calls without the instrumentation). The same
// build runs twice, each in a driver process of its own (call-driver.js) on
// its own echo server: as it ships, and with the call path's telemetry checks
// replaced by constants (bench/lib/untraced.mjs). They take turns in chunks of
// 100 sequential calls, fresh processes every repetition, as in percall.
import { join } from 'node:path';
import { context, trace } from '@opentelemetry/api';
import { callsInTurns } from '../lib/drivers.js';
import { BENCH_DIR } from '../lib/env.js';
import { fmtRange, median, ratio, summarizeAll, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const CONTENDERS = {
  untraced: { label: 'mcp-fleet without the call path’s telemetry checks', nodeArgs: ['--import', join(BENCH_DIR, 'lib', 'untraced.mjs')] },
  shipped: { label: 'mcp-fleet as it ships, no OpenTelemetry SDK registered', nodeArgs: [] },
};
const TARGET = 1.01;

/**
 * ns per call of the two checks themselves, in this process (no SDK registered): the A/B
 * above cannot resolve tens of nanoseconds under the ±3 % that process placement moves a call.
 */
async function checksNs() {
  const { toolCallTelemetry } = await import('../../dist/telemetry/tool-calls.js');
  const N = 2_000_000;
  let seen = 0;
  const times = [];
  for (let round = 0; round < 5; round += 1) {
    const started = performance.now();
    for (let i = 0; i < N; i += 1) {
      if (toolCallTelemetry()) seen += 1;
      // request-meta.js's look-up of the caller's span
      if (trace.getSpan(context.active()) !== undefined) seen += 1;
    }
    times.push(((performance.now() - started) * 1e6) / N);
  }
  if (seen !== 0) throw new Error('an OpenTelemetry SDK is registered in the bench process');
  return median(times);
}

await runSuite('telemetry', async ({ quick, reps }) => {
  const calls = quick ? 1000 : 4000;
  const keys = Object.keys(CONTENDERS);
  const contenders = Object.fromEntries(keys.map((key) => [key, { driver: 'fleet', nodeArgs: CONTENDERS[key].nodeArgs }]));
  const turns = await callsInTurns({ contenders, baseline: 'untraced', reps, calls, warmup: quick ? 300 : 1000, label: 'telemetry' });
  const { samples } = turns;
  const paired = turns.paired.shipped;

  const stats = summarizeAll(samples);
  const pairedRatio = median(paired);
  const ns = await checksNs();
  const share = (ns / 1000 / stats.untraced.median) * 100;
  log(`telemetry checks: ${ns.toFixed(1)} ns per call (${share.toFixed(3)} % of a call)`);
  return {
    title: `Telemetry off (${calls} sequential echo calls per repetition)`,
    stats,
    targets: [
      {
        name: `per call with telemetry off ≤ ${TARGET}× without the instrumentation (paired rounds)`,
        value: `${pairedRatio.toFixed(3)}× (medians: ${(stats.shipped.median / stats.untraced.median).toFixed(3)}×)`,
        pass: pairedRatio <= TARGET,
      },
      {
        name: `the same, from the checks' own time over a call without them ≤ ${TARGET}×`,
        value: `${(1 + share / 100).toFixed(4)}× (${ns.toFixed(0)} ns of ${stats.untraced.median.toFixed(0)} µs)`,
        pass: 1 + share / 100 <= TARGET,
      },
    ],
    checksNs: ns,
    markdown: `The checks themselves, timed in one process: **${ns.toFixed(0)} ns per call**, ${share.toFixed(3)} % of a ${stats.untraced.median.toFixed(0)} µs call.\n\n` + table(
      ['mcp-fleet', 'µs per call: median (min–max)', 'vs without the checks', 'median of paired 100-call rounds'],
      keys.map((key) => [
        CONTENDERS[key].label,
        fmtRange(stats[key]),
        ratio(stats[key], stats.untraced),
        key === 'untraced' ? '1.00×' : `${pairedRatio.toFixed(3)}×`,
      ]),
    ),
  };
});
