// What deferred loading and on-demand start buy, for the search suite:
// - context: the bytes of tool definitions that go to the model with each
//   request (OpenAI's Chat Completions format, as `runAgentTurn` sends them),
//   every tool against `search_tools` alone and against `search_tools` plus
//   the tools one search loaded — for the demo config's real servers and for
//   the 5,000-tool catalog;
// - startup: a worker of 50 `on_demand` servers (their catalog known from a
//   first run) against one of 50 eager servers and one of no servers at all,
//   from `start()` to `settled()`, and how many processes each spawned.
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ECHO_SERVER, ROOT, serverSpecs } from './env.js';
import { fmtRange, ratio, summarize, table } from './stats.js';
import { log } from './suite.js';

const quiet = { info() {}, warn() {} };
const bytesOf = (tools, toOpenAITools) => Buffer.byteLength(JSON.stringify(toOpenAITools(tools)));

/** The definitions `runAgentTurn` would send: eager, deferred before any search, deferred after one search of `limit` tools. */
function requestBytes(fleet, host, query, limit = 8) {
  const eager = host.tools();
  const deferred = host.tools({ loading: 'deferred' });
  const found = host
    .searchTools(query, { limit })
    .filter((hit) => hit.available)
    .map(({ name, description, parameters }) => ({ name, description, parameters }));
  return {
    tools: eager.length,
    eager: bytesOf(eager, fleet.toOpenAITools),
    first: bytesOf(deferred, fleet.toOpenAITools),
    afterSearch: bytesOf([...deferred, ...found], fleet.toOpenAITools),
  };
}

/** Context bytes per request on the demo config (real servers, started) and on `catalog` (indexed as published tools). */
export async function contextBytes(fleet, catalog) {
  const demo = mkdtempSync(join(tmpdir(), 'mcp-fleet-bench-demo-'));
  cpSync(join(ROOT, 'examples', 'demo', 'mcp_servers.json'), join(demo, 'mcp_servers.json'));
  const host = fleet.createMcpHost({ stateDir: demo, logger: quiet, persistJournal: false, watchConfig: false });
  const cwd = process.cwd();
  process.chdir(ROOT); // the demo config's commands are relative to the repository
  try {
    await host.start();
    await host.settled();
  } finally {
    process.chdir(cwd);
  }
  const demoBytes = requestBytes(fleet, host, 'read a file from a folder');
  const meta = host.tools({ loading: 'deferred' }).filter((tool) => tool.name === 'search_tools');
  await host.shutdown();
  rmSync(demo, { recursive: true, force: true });

  // The big catalog: every tool as one eager request would carry it, against search_tools and one search's worth.
  const { toOpenAITools } = fleet;
  const asAgent = (tool) => ({ name: tool.name, description: tool.description, parameters: tool.parameters });
  const bigBytes = {
    tools: catalog.length,
    eager: bytesOf(catalog.map(asAgent), toOpenAITools),
    first: bytesOf(meta, toOpenAITools),
    afterSearch: bytesOf([...meta, ...catalog.slice(0, 8).map(asAgent)], toOpenAITools),
  };
  const row = (label, b) => [
    label,
    String(b.tools),
    `${(b.eager / 1024).toFixed(1)} KiB`,
    `${(b.first / 1024).toFixed(1)} KiB (${((100 * b.first) / b.eager).toFixed(1)} %)`,
    `${(b.afterSearch / 1024).toFixed(1)} KiB (${((100 * b.afterSearch) / b.eager).toFixed(1)} %)`,
  ];
  log(`context: demo ${demoBytes.eager} → ${demoBytes.first} / ${demoBytes.afterSearch} bytes; catalog ${bigBytes.eager} → ${bigBytes.first} / ${bigBytes.afterSearch} bytes`);
  return {
    heading: 'Context: bytes of tool definitions per model request (OpenAI format)',
    markdown: table(
      ['catalog', 'tools', 'eager (every tool)', 'deferred: first request', 'deferred: after one search (8 tools)'],
      [row('demo config (everything, files, memory)', demoBytes), row('5,000-tool catalog', bigBytes)],
    ),
    targets: [],
    stats: { demo: demoBytes, catalog: bigBytes },
  };
}

/** A state dir of `count` echo servers with `fields` added to each. */
function fleetDir(count, fields) {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-bench-od-'));
  const servers = Object.fromEntries(
    serverSpecs(count, ECHO_SERVER).map((spec) => [spec.name, { type: 'local', command: [spec.command, ...spec.args], ...fields }]),
  );
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers }), { mode: 0o600 });
  return dir;
}

/** ms from start() to settled(), and the processes spawned (journal: servers that reached ready). */
async function startOnce(fleet, dir) {
  const host = fleet.createMcpHost({ stateDir: dir, logger: quiet, watchConfig: false });
  const started = performance.now();
  await host.start();
  await host.settled();
  const ms = performance.now() - started;
  const spawned = host.status().filter((view) => view.state === 'ready').length;
  await host.shutdown();
  return { ms, spawned };
}

/** Startup of 50 on-demand servers (second run onwards) against 50 eager ones and none. */
export async function onDemandStartup(fleet, { reps, count = 50 }) {
  const onDemand = fleetDir(count, { start: 'on_demand', idle_timeout_seconds: 3600 });
  const eager = fleetDir(count, {});
  const none = fleetDir(0, {});
  try {
    await startOnce(fleet, onDemand); // the first run learns each server's catalog
    const samples = { none: [], onDemand: [], eager: [] };
    let spawnedOnDemand = 0;
    for (let rep = 0; rep < reps; rep += 1) {
      samples.none.push((await startOnce(fleet, none)).ms);
      const run = await startOnce(fleet, onDemand);
      samples.onDemand.push(run.ms);
      spawnedOnDemand = Math.max(spawnedOnDemand, run.spawned);
      samples.eager.push((await startOnce(fleet, eager)).ms);
      log(`startup rep ${rep + 1}: none ${samples.none.at(-1).toFixed(1)} ms, ${count} on demand ${samples.onDemand.at(-1).toFixed(1)} ms (${run.spawned} spawned), ${count} eager ${samples.eager.at(-1).toFixed(0)} ms`);
    }
    const stats = { none: summarize(samples.none), onDemand: summarize(samples.onDemand), eager: summarize(samples.eager) };
    return {
      heading: `Startup: ${count} on-demand servers against ${count} eager ones (start() to settled())`,
      markdown: table(
        ['worker', 'ms: median (min–max)', 'vs no servers', 'processes spawned'],
        [
          ['no servers', fmtRange(stats.none), '1.00×', '0'],
          [`${count} on demand (catalog known)`, fmtRange(stats.onDemand), ratio(stats.onDemand, stats.none), String(spawnedOnDemand)],
          [`${count} eager`, fmtRange(stats.eager), ratio(stats.eager, stats.none), String(count)],
        ],
      ),
      targets: [
        {
          name: `${count} on-demand servers start with no spawn`,
          value: `${spawnedOnDemand} spawned, ${ratio(stats.onDemand, stats.none)} the time of no servers`,
          pass: spawnedOnDemand === 0,
        },
      ],
      stats,
    };
  } finally {
    for (const dir of [onDemand, eager, none]) rmSync(dir, { recursive: true, force: true });
  }
}
