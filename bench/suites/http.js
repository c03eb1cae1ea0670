// 4. Management API: requests per second and p99 of GET /api/mcp/servers (200
// servers configured) and of GET /healthz, from autocannon against a real
// `mcp-fleet serve` worker process, beside a bare Express 5 process whose
// routes return the very bytes the worker answered (the baseline). The 200
// servers are real and ready: bench/fixtures/mini-server.mjs children, one
// tool each, started with --startup-concurrency 8. A third process, the same
// bytes behind mcp-fleet's own middleware chain (Host, token, Origin, content
// type, body parser, routers), splits the worker's cost into the chain's and
// the rest's. Another row revalidates the list with its ETag (304, no body),
// as a poller that keeps the last answer would. Targets take turns.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { MINI_SERVER, serverSpecs, stateDirFor } from '../lib/env.js';
import { API_TOKEN, noChildren, startBareExpress, startServe } from '../lib/processes.js';
import { alternate, fmt, fmtRange, ratio, summarize, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const SERVERS = 200;
const CONNECTIONS = 10;

function cannon(url, headers, duration) {
  return new Promise((resolve, reject) => {
    autocannon({ url, headers, connections: CONNECTIONS, duration, pipelining: 1 }, (err, result) => {
      if (err) reject(err);
      // A conditional request must be answered 304 every time (autocannon counts it among the non-2xx).
      else if ((headers['if-none-match'] === undefined ? result.non2xx : result['2xx']) > 0 || result.errors > 0) {
        reject(new Error(`${url}: ${result['2xx']} 2xx, ${result.non2xx} non-2xx, ${result.errors} errors`));
      } else resolve({ rps: result.requests.average, p99: result.latency.p99 });
    });
  });
}

await runSuite('http', async ({ quick, reps }) => {
  const duration = quick ? 1 : 3;
  await noChildren();
  const state = stateDirFor(serverSpecs(SERVERS, MINI_SERVER));
  const worker = await startServe(state.dir, { startupConcurrency: 8 });
  const ready = await worker.ready;
  log(`worker: ${ready.line.split('.')[0]}`);
  const auth = { authorization: `Bearer ${API_TOKEN}` };
  const serversReply = await fetch(`${worker.url}/api/mcp/servers`, { headers: auth });
  const serversBody = await serversReply.text();
  const etag = serversReply.headers.get('etag');
  if (etag === null) throw new Error('GET /api/mcp/servers answered no ETag');
  const healthBody = await (await fetch(`${worker.url}/healthz`)).text();
  const views = JSON.parse(serversBody).servers;
  if (views.length !== SERVERS || views.some((view) => !view.ready)) throw new Error('not every server is ready');
  const bodies = join(state.dir, 'bodies.json');
  writeFileSync(bodies, JSON.stringify({ '/api/mcp/servers': serversBody, '/healthz': healthBody }));
  const bare = await startBareExpress(bodies);
  const chained = await startBareExpress(bodies, { chain: true });

  const targets = {
    fleetServers: { label: 'mcp-fleet worker: GET /api/mcp/servers', url: `${worker.url}/api/mcp/servers`, headers: auth },
    bareServers: { label: 'bare Express: same bytes', url: `${bare.url}/api/mcp/servers`, headers: {} },
    chainServers: { label: 'bare Express + mcp-fleet\'s middleware chain: same bytes', url: `${chained.url}/api/mcp/servers`, headers: auth },
    fleetNotModified: {
      label: 'mcp-fleet worker: GET /api/mcp/servers with If-None-Match (304, no body)',
      url: `${worker.url}/api/mcp/servers`,
      headers: { ...auth, 'if-none-match': etag },
    },
    fleetHealth: { label: 'mcp-fleet worker: GET /healthz', url: `${worker.url}/healthz`, headers: {} },
    bareHealth: { label: 'bare Express: same bytes', url: `${bare.url}/healthz`, headers: {} },
  };
  for (const target of Object.values(targets)) await cannon(target.url, target.headers, 1); // warm-up
  const raw = {};
  const samples = await alternate(Object.keys(targets), reps, async (key) => {
    const result = await cannon(targets[key].url, targets[key].headers, duration);
    (raw[key] ??= []).push(result);
    return result.rps;
  }, { onSample: (key, rep) => log(`http ${key} rep ${rep + 1}: ${raw[key].at(-1).rps.toFixed(0)} req/s, p99 ${raw[key].at(-1).p99} ms`) });
  await bare.stop();
  await chained.stop();
  await worker.stop();
  state.remove();

  const stats = {};
  for (const key of Object.keys(targets)) {
    stats[key] = { rps: summarize(samples[key]), p99: summarize(raw[key].map((r) => r.p99)) };
  }
  const row = (key, baseline) => [
    targets[key].label,
    fmtRange(stats[key].rps, 0),
    ratio(stats[key].rps, stats[baseline].rps),
    fmtRange(stats[key].p99, 1),
  ];
  const serversRatio = stats.fleetServers.rps.median / stats.bareServers.rps.median;
  const healthRatio = stats.fleetHealth.rps.median / stats.bareHealth.rps.median;
  return {
    title: `Management API (${SERVERS} ready servers; autocannon, ${CONNECTIONS} connections, ${duration} s per sample)`,
    stats,
    bodyBytes: Buffer.byteLength(serversBody),
    targets: [
      { name: 'GET /api/mcp/servers ≥ 0.8× bare Express throughput', value: `${serversRatio.toFixed(3)}×`, pass: serversRatio >= 0.8 },
      { name: '(no target) GET /healthz vs bare Express throughput', value: `${healthRatio.toFixed(3)}×`, pass: null },
      {
        name: '(no target) GET /api/mcp/servers revalidated (If-None-Match → 304) vs bare Express sending the body',
        value: `${(stats.fleetNotModified.rps.median / stats.bareServers.rps.median).toFixed(3)}×`,
        pass: null,
      },
    ],
    markdown:
      `GET /api/mcp/servers answers ${fmt(Buffer.byteLength(serversBody) / 1024, 1)} KiB.\n\n` +
      table(['target', 'req/s: median (min–max)', 'vs bare', 'p99 ms: median (min–max)'], [
        row('fleetServers', 'bareServers'),
        row('bareServers', 'bareServers'),
        row('chainServers', 'bareServers'),
        row('fleetNotModified', 'bareServers'),
        row('fleetHealth', 'bareHealth'),
        row('bareHealth', 'bareHealth'),
      ]),
  };
});
