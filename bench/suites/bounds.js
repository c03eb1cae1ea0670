// 11. Bounds: memory a hostile server cannot make the worker keep. The tests
// (test/hostile/) check the behaviour — results truncated, stderr drained,
// the line buffer's tail copied; here the memory left held afterwards, each
// figure the growth after full collections, in MB:
// - three 20 MB `big_text` results an agent keeps (each truncated to
//   max_result_bytes, 1 MiB by default): target ≤ 15 MB;
// - a 50 MB stderr flood read while serving: target ≤ 10 MB;
// - a LineBuffer fed a 10 MB line and the start of the next one: buffers
//   outside the heap (arrayBuffers) ≤ 2 MB, no view keeping the big line alive.
import { join } from 'node:path';
import { ROOT, settleHeap, stateDirFor } from '../lib/env.js';
import { fmt, fmtRange, summarize, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const { createMcpHost } = await import('../../dist/index.js');
const { LineBuffer } = await import('../../dist/connection/line-buffer.js');

const fixture = (name) => join(ROOT, 'test', 'fixtures', `${name}.mjs`);
const silent = { info() {}, warn() {} };
const MB = 1e6;

async function heldMB(field) {
  await settleHeap();
  const usage = process.memoryUsage();
  return field === 'arrayBuffers' ? usage.arrayBuffers / MB : (usage.heapUsed + usage.external) / MB;
}

async function openHost() {
  const spec = (name, script) => ({
    name,
    command: process.execPath,
    args: [fixture(script)],
    fleet: { timeout_seconds: 30, reconnect: { max_attempts: 0 }, ping_interval_seconds: 0 },
  });
  const state = stateDirFor([spec('big', 'big-result'), spec('chatty', 'stderr-flood')]);
  const host = createMcpHost({ stateDir: state.dir, logger: silent, persistJournal: false });
  await host.start();
  await host.settled();
  const notReady = host.status().filter((view) => !view.ready);
  if (notReady.length > 0) throw new Error(`not ready: ${notReady.map((v) => `${v.name} ${v.state} ${v.error ?? ''}`).join('; ')}`);
  return {
    host,
    async close() {
      await host.shutdown();
      state.remove();
    },
  };
}

async function keptResults(host) {
  const before = await heldMB();
  const kept = [];
  for (let i = 0; i < 3; i += 1) kept.push(await host.callTool('big__big_text', { mb: 20 }));
  const after = await heldMB();
  if (!kept.every((result) => result.details.truncated === true)) throw new Error('a 20 MB result was not truncated');
  return after - before;
}

async function flood(host) {
  const before = await heldMB();
  const result = await host.callTool('chatty__flood', { mb: 50 });
  if (result.details.is_error) throw new Error(`flood: ${JSON.stringify(result.content)}`);
  return (await heldMB()) - before;
}

async function lineBufferTail() {
  const buffer = new LineBuffer();
  const big = `${JSON.stringify({ jsonrpc: '2.0', id: 6, result: { text: 'x'.repeat(10_000_000) } })}\n`;
  const before = await heldMB('arrayBuffers');
  for (let at = 0; at < big.length; at += 65_536) buffer.append(Buffer.from(big.slice(at, at + 65_536)));
  buffer.append(Buffer.from('{"jsonrpc":'));
  if (buffer.readMessage()?.id !== 6) throw new Error('the big line was not read back');
  const grown = (await heldMB('arrayBuffers')) - before;
  // The buffer is used after the measure, so the collection could not free its tail.
  buffer.append(Buffer.from('"2.0","id":7,"result":{}}\n'));
  if (buffer.readMessage()?.id !== 7) throw new Error('the next message was not read back');
  return grown;
}

await runSuite('bounds', async ({ reps }) => {
  const opened = await openHost();
  const samples = { results: [], flood: [], lineBuffer: [] };
  try {
    // A warm-up of each path, so that compiled code and pools are not counted as held.
    await opened.host.callTool('big__big_text', { mb: 1 });
    await opened.host.callTool('chatty__flood', { mb: 1 });
    await lineBufferTail();
    for (let rep = 0; rep < reps; rep += 1) {
      samples.results.push(await keptResults(opened.host));
      samples.flood.push(await flood(opened.host));
      samples.lineBuffer.push(await lineBufferTail());
      log(`bounds rep ${rep + 1}: results ${fmt(samples.results.at(-1), 1)} MB, flood ${fmt(samples.flood.at(-1), 1)} MB, line buffer ${fmt(samples.lineBuffer.at(-1), 2)} MB`);
    }
  } finally {
    await opened.close();
  }
  const stats = Object.fromEntries(Object.entries(samples).map(([key, values]) => [key, summarize(values)]));
  const target = (name, key, limit) => ({
    name: `${name} ≤ ${limit} MB held`,
    value: `${fmt(stats[key].max, 1)} MB (max of ${stats[key].n})`,
    pass: stats[key].max <= limit,
  });
  return {
    title: 'Bounds: memory a hostile server leaves held',
    stats,
    targets: [
      target('three 20 MB results kept by an agent', 'results', 15),
      target('a 50 MB stderr flood', 'flood', 10),
      target('a LineBuffer after a 10 MB line (arrayBuffers)', 'lineBuffer', 2),
    ],
    markdown: table(['case', 'MB held: median (min–max)'], [
      ['three 20 MB `big_text` results kept', fmtRange(stats.results, 1)],
      ['50 MB of stderr', fmtRange(stats.flood, 1)],
      ['LineBuffer after a 10 MB line', fmtRange(stats.lineBuffer, 2)],
    ]),
  };
});
