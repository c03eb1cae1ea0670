// 3. Startup: 20 and 50 stdio servers to all ready. Baselines: the raw SDK
// connecting them one after the other (for startup_concurrency 1) and all at
// once with Promise.all (for startup_concurrency 4). The servers are
// bench/fixtures/mini-server.mjs, which starts as fast as Node itself, so the
// clients' own costs are not buried under the children's.
// Then /healthz latency of a real `mcp-fleet serve` worker while 50 servers start.
import { rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { aiSdk, langchain, mastra, mcpFleet, rawParallel, rawSequential } from '../lib/contenders.js';
import { MINI_SERVER, serverSpecs, settleHeap, sleep, stateDirFor } from '../lib/env.js';
import { noChildren, startBareExpress, startServe } from '../lib/processes.js';
import { alternate, fmt, fmtRange, percentile, ratio, summarize, summarizeAll, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const CONTENDERS = {
  rawSeq: rawSequential,
  fleet1: mcpFleet({ startupConcurrency: 1 }),
  rawAll: rawParallel,
  fleet4: mcpFleet({ startupConcurrency: 4 }),
  langchain,
  mastra: mastra(),
  mastraLegacy: mastra({ legacy: true }),
  aisdk: aiSdk,
};

async function startOnce(key, count) {
  await noChildren();
  await settleHeap();
  const specs = serverSpecs(count, MINI_SERVER);
  const started = performance.now();
  const handle = await CONTENDERS[key].open(specs);
  const elapsed = performance.now() - started;
  await handle.close();
  return elapsed;
}

/**
 * GETs `${url}/healthz` for each URL in turn, one every `gapMs`, until `stop`
 * resolves; returns each URL's latencies in ms.
 */
async function pollHealthz(urls, stop, gapMs = 10) {
  const agents = urls.map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const latencies = urls.map(() => []);
  let done = false;
  void stop.then(() => (done = true));
  while (!done) {
    for (const [i, url] of urls.entries()) {
      const started = performance.now();
      await new Promise((resolve, reject) => {
        http
          .get(`${url}/healthz`, { agent: agents[i] }, (res) => {
            res.resume();
            res.on('end', resolve);
          })
          .on('error', reject);
      });
      latencies[i].push(performance.now() - started);
      await sleep(gapMs / urls.length);
    }
  }
  for (const agent of agents) agent.destroy();
  return latencies;
}

await runSuite('startup', async ({ quick, reps }) => {
  const sizes = quick ? [10] : [20, 50];
  // Warm-up: each library loaded and its first connect compiled before timing.
  for (const key of Object.keys(CONTENDERS)) await startOnce(key, 2);

  const stats = {};
  const markdown = [];
  const targets = [];
  for (const count of sizes) {
    // mcp-fleet's first start of these servers probes each one's era once; the
    // verdicts are kept (eras.json) and every later start skips the probe.
    const firstRun = await startOnce('fleet1', count);
    log(`startup ${count} fleet1 first run (every era probed): ${firstRun.toFixed(0)} ms`);
    const samples = await alternate(Object.keys(CONTENDERS), reps, (key) => startOnce(key, count), {
      onSample: (key, rep, ms) => log(`startup ${count} ${key} rep ${rep + 1}: ${ms.toFixed(0)} ms`),
    });
    stats[count] = summarizeAll(samples);
    const s = stats[count];
    const rows = Object.entries(CONTENDERS).map(([key, contender]) => [
      contender.label,
      fmtRange(s[key], 0),
      ratio(s[key], s.rawSeq),
      ratio(s[key], s.rawAll),
    ]);
    markdown.push(
      `**${count} servers** (ms to all ready; mcp-fleet after its first start, whose era probes took ${firstRun.toFixed(0)} ms, ` +
        `${(firstRun / s.rawSeq.median).toFixed(2)}× raw sequential)\n\n` +
        table(['contender', 'ms: median (min–max)', 'vs raw sequential', 'vs raw Promise.all'], rows),
    );
    const r1 = s.fleet1.median / s.rawSeq.median;
    const r4 = s.fleet4.median / s.rawAll.median;
    targets.push(
      { name: `${count} servers, startup_concurrency 1 ≤ 1.10× raw sequential`, value: `${r1.toFixed(3)}×`, pass: r1 <= 1.1 },
      { name: `${count} servers, startup_concurrency 4 ≤ 1.05× raw Promise.all`, value: `${r4.toFixed(3)}×`, pass: r4 <= 1.05 },
    );
  }

  // /healthz of a real worker process while its servers start, beside a bare
  // Express process answering the same bytes, polled in turn: on 2 cores the
  // booting children take the CPU from every process, and the bare server
  // shows how much of the latency that alone costs.
  const healthCount = quick ? 20 : 50;
  const healthRuns = quick ? 1 : 3;
  const bodies = join(tmpdir(), `mcp-fleet-bench-healthz-${process.pid}.json`);
  writeFileSync(bodies, JSON.stringify({ '/healthz': '{"ok":true}' }));
  const health = {};
  for (const concurrency of [1, 4]) {
    const latencies = [[], []];
    const startupMs = [];
    for (let run = 0; run < healthRuns; run += 1) {
      await noChildren();
      const state = stateDirFor(serverSpecs(healthCount, MINI_SERVER));
      const bare = await startBareExpress(bodies);
      const worker = await startServe(state.dir, { startupConcurrency: concurrency });
      const t0 = performance.now();
      const [fleetLatencies, bareLatencies] = await pollHealthz([worker.url, bare.url], worker.ready);
      const ready = await worker.ready;
      startupMs.push(ready.at - t0);
      latencies[0].push(...fleetLatencies);
      latencies[1].push(...bareLatencies);
      await worker.stop();
      await bare.stop();
      state.remove();
      log(
        `healthz during startup (${healthCount} servers, concurrency ${concurrency}) run ${run + 1}: ` +
          `${fleetLatencies.length} requests, p99 ${percentile(fleetLatencies, 99).toFixed(2)} ms (bare Express ${percentile(bareLatencies, 99).toFixed(2)} ms); ${ready.line.split('.')[0]}`,
      );
    }
    const describe = (values) => ({ requests: values.length, p50: percentile(values, 50), p99: percentile(values, 99), max: Math.max(...values) });
    health[concurrency] = { fleet: describe(latencies[0]), bare: describe(latencies[1]), startupMs: summarize(startupMs) };
    // Against the bare process polled beside it during the same startups: what the machine
    // itself costs a request then (two cores shared with the booting children) is in both.
    const p99Ratio = health[concurrency].fleet.p99 / health[concurrency].bare.p99;
    targets.push({
      name: `/healthz p99 while ${healthCount} servers start ≤ 1.5× the bare Express process beside it (startup_concurrency ${concurrency})`,
      value: `${p99Ratio.toFixed(2)}× (${health[concurrency].fleet.p99.toFixed(2)} ms; bare Express ${health[concurrency].bare.p99.toFixed(2)} ms)`,
      pass: p99Ratio <= 1.5,
    });
  }
  rmSync(bodies, { force: true });
  const healthRow = (c, who, label) => [
    String(c),
    label,
    String(health[c][who].requests),
    fmt(health[c][who].p50, 2),
    fmt(health[c][who].p99, 2),
    fmt(health[c][who].max, 1),
    who === 'fleet' ? fmt(health[c].startupMs.median, 0) : '',
  ];
  markdown.push(
    `**/healthz while ${healthCount} servers start** (${healthRuns} startups each; a GET every 10 ms to each, in turn, keep-alive; ` +
      'the worker is a real `mcp-fleet serve` process, the bare Express process answers the same bytes and runs beside it)\n\n' +
      table(
        ['startup_concurrency', 'server', 'requests', 'p50 ms', 'p99 ms', 'max ms', 'worker startup ms (median)'],
        [1, 4].flatMap((c) => [healthRow(c, 'fleet', 'mcp-fleet worker'), healthRow(c, 'bare', 'bare Express')]),
      ),
  );
  return { title: 'Startup', stats, health, targets, markdown: markdown.join('\n\n') };
});
