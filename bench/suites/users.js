// Servers per user: a `per_user` remote server (Streamable HTTP,
// test/fixtures/whoami.mjs --http) against its baselines in the same run,
// every sample a fresh `node --expose-gc` process (users-probe.js) with a
// fixture server of its own.
// 1. A new principal's first call (its session connects, then the call)
//    against a raw SDK client connecting to the same server and calling, in turns.
// 2. Per-call overhead of a principal's open session against the same calls
//    on a shared server to the same fixture, 100-call chunks in turn.
// 3. Heap per idle session with 1,000 principals, and what is left once every
//    session ended. HTTP sessions: 1,000 stdio sessions would be 1,000 processes.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BENCH_DIR } from '../lib/env.js';
import { fmt, fmtRange, median, summarize, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const run = promisify(execFile);

async function probe(...args) {
  const { stdout } = await run(process.execPath, ['--expose-gc', join(BENCH_DIR, 'suites', 'users-probe.js'), ...args.map(String)], {
    maxBuffer: 1 << 24,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1));
}

await runSuite('users', async ({ quick, reps }) => {
  const firsts = quick ? 20 : 50;
  const calls = quick ? 500 : 2000;
  const warmup = quick ? 300 : 1000;
  const principals = 1000;
  const first = { fleet: [], raw: [], rawListed: [], paired: [], pairedListed: [] };
  const percall = { perUser: [], shared: [], paired: [] };
  const memory = [];
  // The three parts take turns, the order rotated every repetition.
  const parts = {
    first: async (rep) => {
      const { fleetMs, rawMs, rawListedMs } = await probe('first', firsts);
      first.fleet.push(median(fleetMs));
      first.raw.push(median(rawMs));
      first.rawListed.push(median(rawListedMs));
      first.paired.push(...fleetMs.map((ms, i) => ms / rawMs[i]));
      first.pairedListed.push(...fleetMs.map((ms, i) => ms / rawListedMs[i]));
      log(
        `users first rep ${rep + 1}: mcp-fleet ${median(fleetMs).toFixed(1)} ms, raw ${median(rawMs).toFixed(1)} ms, ` +
          `raw with listTools ${median(rawListedMs).toFixed(1)} ms (medians of ${firsts})`,
      );
    },
    percall: async (rep) => {
      const { perUser, shared } = await probe('percall', calls, warmup);
      const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
      percall.perUser.push(mean(perUser));
      percall.shared.push(mean(shared));
      percall.paired.push(...perUser.map((us, i) => us / shared[i]));
      log(`users percall rep ${rep + 1}: per_user ${mean(perUser).toFixed(0)} µs, shared ${mean(shared).toFixed(0)} µs`);
    },
    memory: async (rep) => {
      const sample = await probe('memory', principals);
      memory.push(sample);
      log(`users memory rep ${rep + 1}: ${JSON.stringify(sample)}`);
    },
  };
  const order = Object.keys(parts);
  for (let rep = 0; rep < reps; rep += 1) {
    for (let k = 0; k < order.length; k += 1) await parts[order[(rep + k) % order.length]](rep);
  }

  const s = {
    firstFleet: summarize(first.fleet),
    firstRaw: summarize(first.raw),
    firstRawListed: summarize(first.rawListed),
    perUser: summarize(percall.perUser),
    shared: summarize(percall.shared),
    session: summarize(memory.map((m) => m.heapPerSessionKiB)),
    sessionRss: summarize(memory.map((m) => m.rssPerSessionKiB)),
    left: summarize(memory.map((m) => m.leftPerSessionKiB)),
    inputs: summarize(memory.map((m) => m.inputsPerPrincipalKiB)),
    rawClient: summarize(memory.map((m) => m.rawHeapPerClientKiB)),
  };
  const firstRatio = s.firstFleet.median / s.firstRaw.median;
  const firstPaired = median(first.paired);
  const firstListedRatio = s.firstFleet.median / s.firstRawListed.median;
  const firstListedPaired = median(first.pairedListed);
  const callRatio = s.perUser.median / s.shared.median;
  const callPaired = median(percall.paired);
  const markdown = [
    table(
      ['a new principal\'s first call (remote, Streamable HTTP)', 'ms: median (min–max) of the repetitions\' medians', 'vs raw', 'vs raw, median of paired calls'],
      [
        ['raw SDK: new `Client`, connect, `callTool`', fmtRange(s.firstRaw, 2), '1.00×', '1.00×'],
        [
          'raw SDK: new `Client`, connect, `listTools`, `callTool`',
          fmtRange(s.firstRawListed, 2),
          `${(s.firstRawListed.median / s.firstRaw.median).toFixed(2)}×`,
          `${median(first.rawListed.map((ms, i) => ms / first.raw[i])).toFixed(2)}× (of the repetitions' medians)`,
        ],
        ['mcp-fleet: `host.callTool` with a new principal (its session connects)', fmtRange(s.firstFleet, 2), `${firstRatio.toFixed(2)}×`, `${firstPaired.toFixed(2)}×`],
      ],
    ),
    '',
    table(
      [`${calls} sequential calls per repetition through \`host.callTool\``, 'µs per call: median (min–max)', 'vs shared', 'vs shared, median of paired 100-call rounds'],
      [
        ['shared server (one connection)', fmtRange(s.shared, 0), '1.00×', '1.00×'],
        ['per_user server (the principal\'s open session)', fmtRange(s.perUser, 0), `${callRatio.toFixed(2)}×`, `${callPaired.toFixed(2)}×`],
      ],
    ),
    '',
    table(
      [`${principals} principals, one session each`, 'KiB per principal: median (min–max)'],
      [
        ['heap: inputs set, no session yet', fmtRange(s.inputs, 1)],
        ['heap per idle session', fmtRange(s.session, 1)],
        ['baseline: heap per raw SDK client, connected with its header and called once', fmtRange(s.rawClient, 1)],
        ['RSS per idle session (see "Reading the numbers")', fmtRange(s.sessionRss, 0)],
        ['heap left once every session ended, over the inputs-set baseline', fmtRange(s.left, 1)],
      ],
    ),
  ].join('\n');
  return {
    title: `Servers per user (per_user remote server over Streamable HTTP; ${firsts} first calls, ${calls} calls, ${principals} sessions per repetition, fresh process each)`,
    stats: s,
    paired: { first: firstPaired, percall: callPaired },
    targets: [
      {
        name: 'a new principal\'s first call vs a raw SDK connect + call (informational)',
        value: `${firstRatio.toFixed(2)}× (paired: ${firstPaired.toFixed(2)}×); vs connect + listTools + call ${firstListedRatio.toFixed(2)}× (paired: ${firstListedPaired.toFixed(2)}×)`,
        pass: null,
      },
      {
        name: 'per-call on a per_user session vs a shared server (informational)',
        value: `${callRatio.toFixed(3)}× (paired rounds: ${callPaired.toFixed(3)}×)`,
        pass: null,
      },
      {
        name: '≤ 32 KiB heap per idle session',
        value: `${fmt(s.session.median, 1)} KiB (a raw SDK client: ${fmt(s.rawClient.median, 1)} KiB)`,
        pass: s.session.median <= 32,
      },
      {
        name: 'heap back to the baseline once sessions ended (≤ 4 KiB per session left)',
        value: `${fmt(s.left.median, 1)} KiB`,
        pass: s.left.median <= 4,
      },
    ],
    markdown,
  };
});
