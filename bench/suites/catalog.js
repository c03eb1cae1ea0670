// 5. Large catalogs: a server with 5,000 tools (bench/fixtures/echo-server.mjs
// with BENCH_TOOLS, a low-level SDK Server answering tools/list from a
// prebuilt list: McpServer would rebuild every schema per request and hide
// the client's cost). Spawn → ready through mcp-fleet against the raw SDK's
// spawn + initialize + listTools; then the re-sync after
// notifications/tools/list_changed against a raw client re-listing on the
// same notification, and a plain raw listTools on an open connection.
import { mcpFleet, rawSequential } from '../lib/contenders.js';
import { ECHO_SERVER, serverSpecs, settleHeap } from '../lib/env.js';
import { noChildren } from '../lib/processes.js';
import { alternate, fmtRange, ratio, summarizeAll, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const TOOLS = 5000;
// echo, slow and bump plus padding.
const specs = () => serverSpecs(1, ECHO_SERVER, { BENCH_TOOLS: String(TOOLS - 3) });
const fleet = mcpFleet({ label: 'mcp-fleet: host.start() → ready' });
/** The two re-syncs measured: the fixture's `bump` changes every padding tool, `bump {one: true}` only one. */
const RESYNCS = [
  { what: 'every tool changed', arg: '', rawKey: 'raw', fleetKey: 'fleet' },
  { what: 'one tool changed', arg: ' {one}', rawKey: 'rawOne', fleetKey: 'fleetOne' },
];

async function readyOnce(key) {
  await noChildren();
  await settleHeap();
  const contender = key === 'raw' ? rawSequential : fleet;
  const started = performance.now();
  const handle = await contender.open(specs());
  const elapsed = performance.now() - started;
  const count = key === 'raw' ? (await handle.clients.get('s00').listTools()).tools.length : handle.host.tools().length;
  if (count !== TOOLS) throw new Error(`${key}: ${count} tools, expected ${TOOLS}`);
  await handle.close();
  return elapsed;
}

/** Resolves when mcp-fleet shows a re-listed catalog for s00 (any tools.* event after `seq`), or null after `ms`. */
function fleetResynced(host, seq, ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      unsubscribe();
      resolve(null);
    }, ms);
    const unsubscribe = host.subscribe((event) => {
      if (event.seq > seq && event.server === 's00' && event.type.startsWith('tools.') && event.type !== 'tools.unregistered') {
        clearTimeout(timer);
        unsubscribe();
        resolve(performance.now());
      }
    });
  });
}

await runSuite('catalog', async ({ reps }) => {
  await readyOnce('raw');
  await readyOnce('fleet'); // warm-up
  const ready = await alternate(['raw', 'fleet'], reps, readyOnce, {
    onSample: (key, rep, ms) => log(`catalog ready ${key} rep ${rep + 1}: ${ms.toFixed(0)} ms`),
  });

  // Re-sync: one long-lived connection each.
  const raw = await rawSequential.open(specs());
  const client = raw.clients.get('s00');
  let relisted = null;
  client.setNotificationHandler('notifications/tools/list_changed', async () => {
    await client.listTools();
    relisted?.(performance.now());
  });
  const host = await fleet.open(specs());
  // `one`: the bump changes one tool's description; otherwise every padding tool's.
  const rawResync = (one) => async () => {
    const done = new Promise((resolve) => (relisted = resolve));
    const started = performance.now();
    await client.callTool({ name: 'bump', arguments: { one } });
    return (await done) - started;
  };
  const fleetResync = (one) => async () => {
    const seq = host.host.events().at(-1)?.seq ?? 0;
    const done = fleetResynced(host.host, seq, 5000);
    const started = performance.now();
    await host.call('s00', 'bump', { one });
    const at = await done;
    return at === null ? null : at - started;
  };
  const resync = {
    raw: rawResync(false),
    fleet: fleetResync(false),
    rawOne: rawResync(true),
    fleetOne: fleetResync(true),
    rawList: async () => {
      const started = performance.now();
      await client.listTools();
      return performance.now() - started;
    },
  };
  if ((await resync.fleet()) === null) throw new Error('mcp-fleet did not re-register s00 within 5 s of list_changed');
  const keys = ['raw', 'fleet', 'rawOne', 'fleetOne', 'rawList'];
  for (const key of keys) await resync[key]();
  const resyncSamples = await alternate(keys, reps, async (key) => {
    await settleHeap();
    return resync[key]();
  }, { onSample: (key, rep, ms) => log(`catalog re-sync ${key} rep ${rep + 1}: ${ms.toFixed(1)} ms`) });
  await raw.close();
  await host.close();

  const readyStats = summarizeAll(ready);
  const resyncStats = summarizeAll(resyncSamples);
  const readyRatio = readyStats.fleet.median / readyStats.raw.median;
  const rows = [
    ['spawn → ready', 'raw SDK: spawn + initialize + listTools', fmtRange(readyStats.raw, 0), '1.00×'],
    ['spawn → ready', fleet.label, fmtRange(readyStats.fleet, 0), ratio(readyStats.fleet, readyStats.raw)],
    ...RESYNCS.flatMap(({ what, arg, rawKey, fleetKey }) => [
      [`re-sync, ${what}`, `raw SDK: bump${arg} call → list_changed → listTools done`, fmtRange(resyncStats[rawKey]), '1.00×'],
      [`re-sync, ${what}`, `mcp-fleet: bump${arg} call → re-registered`, fmtRange(resyncStats[fleetKey]), ratio(resyncStats[fleetKey], resyncStats[rawKey])],
    ]),
    ['reference', 'raw SDK: listTools on an open connection', fmtRange(resyncStats.rawList), ratio(resyncStats.rawList, resyncStats.raw)],
  ];
  const targets = [{ name: `${TOOLS}-tool catalog ready ≤ 1.10× raw`, value: `${readyRatio.toFixed(3)}×`, pass: readyRatio <= 1.1 }];
  for (const { what, rawKey, fleetKey } of RESYNCS) {
    const r = resyncStats[fleetKey].median / resyncStats[rawKey].median;
    targets.push({ name: `re-sync after list_changed ≤ 1.20× a raw re-list (${what})`, value: `${r.toFixed(3)}×`, pass: r <= 1.2 });
  }
  return {
    title: `Large catalog (${TOOLS} tools)`,
    stats: { ready: readyStats, resync: resyncStats },
    targets,
    markdown: table(['what', 'contender', 'ms: median (min–max)', 'vs raw'], rows),
  };
});
