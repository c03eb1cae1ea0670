// 10. Telemetry off: what mcp-fleet's OpenTelemetry instrumentation costs per
// tool call when the embedding application registers no SDK (issue 17's
// target: ≤ 1.01× the same calls without the instrumentation). The same
// build runs twice, each in a driver process of its own (call-driver.js) on
// its own echo server: as it ships, and with the call path's telemetry checks
// replaced by constants (bench/lib/untraced.mjs). They take turns in chunks of
// 100 sequential calls, fresh processes every repetition, as in percall.
import { join } from 'node:path';
import { context, trace } from '@opentelemetry/api';
import { startDriver } from '../lib/drivers.js';
import { BENCH_DIR } from '../lib/env.js';
import { fmtRange, median, ratio, summarizeAll, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const CONTENDERS = {
  untraced: { label: 'mcp-fleet without the call path’s telemetry checks', nodeArgs: ['--import', join(BENCH_DIR, 'lib', 'untraced.mjs')] },
  shipped: { label: 'mcp-fleet as it ships, no OpenTelemetry SDK registered', nodeArgs: [] },
};
const CHUNK = 100;
const TARGET = 1.01;

/**
 * ns per call of the two checks themselves, in this process (no SDK registered): the A/B
 * above cannot resolve tens of nanoseconds under the ±3 % that process placement moves a call.
 */
async function checksNs() {
  const { toolCallTelemetry } = await import('../../dist/services/telemetry/tool-calls.js');
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
  const samples = Object.fromEntries(keys.map((key) => [key, []]));
  /** Per round, shipped over untraced: less moved by a slow spell than a ratio of medians. */
  const paired = [];
  for (let rep = 0; rep < reps; rep += 1) {
    const drivers = {};
    for (let k = 0; k < keys.length; k += 1) {
      const key = keys[(rep + k) % keys.length];
      drivers[key] = await startDriver('fleet', undefined, CONTENDERS[key].nodeArgs);
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
      paired.push(us.shipped / us.untraced);
    }
    for (const key of keys) samples[key].push(total[key] / calls);
    log(`telemetry rep ${rep + 1}: ${keys.map((key) => `${key} ${(total[key] / calls).toFixed(1)}`).join(', ')} µs/call`);
    for (const driver of Object.values(drivers)) await driver.close();
  }

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
