// One sample of the gateway suite, in a fresh process (run with --expose-gc).
// Prints one JSON line.
//   node --expose-gc bench/suites/gateway-probe.js latency CALLS WARMUP CONCURRENCY
//     → µs per call of `echo`: a raw SDK client on the backend itself (stdio),
//       and SDK clients through `/mcp` of a real `mcp-fleet serve` worker process
//       (a 2025 session, and 2026 stateless requests) to the same backend; the
//       same for a backend over Streamable HTTP (an SDK v2 server process); in
//       chunks in turn; CONCURRENCY calls in flight on each client.
//   node --expose-gc bench/suites/gateway-probe.js memory SESSIONS
//     → heap per open 2025 `/mcp` session of a host and app in this process,
//       and what is left once every session ended (DELETE).
import { createServer } from 'node:http';
import { Client } from '../../node_modules/@modelcontextprotocol/client/dist/index.mjs';
import { StdioClientTransport } from '../../node_modules/@modelcontextprotocol/client/dist/stdio.mjs';
import { fleet } from '../lib/contenders.js';
import { ECHO_HTTP_SERVER, ECHO_SERVER, serverSpecs, settleHeap, sleep, stateDirFor } from '../lib/env.js';
import { API_TOKEN, noChildren, startHttpServer, startServe } from '../lib/processes.js';

const { StreamableHTTPClientTransport } = await import('../../node_modules/@modelcontextprotocol/client/dist/index.mjs');
const [mode, countText, warmupText, concurrencyText] = process.argv.slice(2);
const count = Number(countText);

let out;
if (mode === 'latency') out = await latency(Number(warmupText), Number(concurrencyText));
else if (mode === 'memory') out = await memory();
else throw new Error(`unknown mode "${mode}"`);
await noChildren();
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);

async function latency(warmup, concurrency) {
  const [spec] = serverSpecs(1, ECHO_SERVER);
  const backend = await startHttpServer(ECHO_HTTP_SERVER);
  const state = stateDirFor([
    { ...spec, name: 'echo' },
    { name: 'web', url: backend.url },
  ]);
  const worker = await startServe(state.dir);
  await worker.ready;
  const raw = new Client({ name: 'bench-raw', version: '1.0.0' });
  await raw.connect(new StdioClientTransport({ command: spec.command, args: spec.args }));
  const rawHttp = new Client({ name: 'bench-raw-http', version: '1.0.0' });
  await rawHttp.connect(new StreamableHTTPClientTransport(new URL(backend.url)));
  const through = async (mode) => {
    const client = new Client({ name: `bench-gateway-${mode}`, version: '1.0.0' }, { versionNegotiation: { mode } });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${worker.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${API_TOKEN}` } } }));
    return client;
  };
  const legacy = await through('legacy');
  const modern = await through('auto');
  if (legacy.getNegotiatedProtocolVersion() !== '2025-11-25' || modern.getNegotiatedProtocolVersion() !== '2026-07-28') {
    throw new Error(`eras: ${legacy.getNegotiatedProtocolVersion()}, ${modern.getNegotiatedProtocolVersion()}`);
  }
  // The floor of any HTTP hop on this machine: a round trip to the same worker that does nothing.
  const health = `${worker.url}/healthz`;
  const contenders = {
    raw: (text) => raw.callTool({ name: 'echo', arguments: { text } }),
    http: async (text) => {
      const answer = await fetch(health);
      await answer.text();
      return { content: [{ type: 'text', text }] };
    },
    legacy: (text) => legacy.callTool({ name: 'echo__echo', arguments: { text } }),
    modern: (text) => modern.callTool({ name: 'echo__echo', arguments: { text } }),
    rawHttp: (text) => rawHttp.callTool({ name: 'echo', arguments: { text } }),
    legacyHttp: (text) => legacy.callTool({ name: 'web__echo', arguments: { text } }),
    modernHttp: (text) => modern.callTool({ name: 'web__echo', arguments: { text } }),
  };
  const chunk = 100;
  /** Each call's µs, `concurrency` callers each making their share of the chunk one after the other. */
  const run = async (call, into) => {
    await Promise.all(
      Array.from({ length: concurrency }, async (_, lane) => {
        for (let i = lane; i < chunk; i += concurrency) {
          const started = performance.now();
          const result = await call(`call ${i}`);
          const took = (performance.now() - started) * 1000;
          if (result.isError || result.content?.[0]?.text !== `call ${i}`) throw new Error(`wrong answer: ${JSON.stringify(result)}`);
          into?.push(took);
        }
      }),
    );
  };
  try {
    for (let i = 0; i < warmup / chunk; i += 1) for (const call of Object.values(contenders)) await run(call);
    await settleHeap();
    const names = Object.keys(contenders);
    const samples = Object.fromEntries(names.map((name) => [name, []]));
    const chunkMeans = Object.fromEntries(names.map((name) => [name, []]));
    for (let round = 0; round < count / chunk; round += 1) {
      // The order rotates, so none always goes first.
      for (let k = 0; k < names.length; k += 1) {
        const name = names[(round + k) % names.length];
        const took = [];
        const started = performance.now();
        await run(contenders[name], took);
        samples[name].push(...took);
        chunkMeans[name].push(((performance.now() - started) * 1000) / chunk);
      }
    }
    return { concurrency, samples, chunkMeans };
  } finally {
    await Promise.all([raw.close(), rawHttp.close(), legacy.close(), modern.close()]);
    await worker.stop();
    await backend.stop();
    state.remove();
  }
}

async function memory() {
  const [spec] = serverSpecs(1, ECHO_SERVER);
  const state = stateDirFor([{ ...spec, name: 'echo' }]);
  const host = fleet.createMcpHost({ stateDir: state.dir, logger: { info() {}, warn() {} } });
  await host.start();
  await host.settled();
  const app = fleet.createManagementApp(host, { token: API_TOKEN, gatewaySessions: { maxSessions: 100_000, maxPerPrincipal: 100_000 } });
  const server = createServer(app);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}/mcp`;
  const headers = { authorization: `Bearer ${API_TOKEN}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json', 'mcp-protocol-version': '2025-11-25' };
  const open = async () => {
    const init = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }),
    });
    await init.text();
    const id = init.headers.get('mcp-session-id');
    if (init.status !== 200 || id === null) throw new Error(`initialize: ${init.status}`);
    const done = await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': id }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    await done.text();
    // One call each: a session that was used, as a client's is.
    const listed = await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': id }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
    await listed.text();
    return id;
  };
  const end = async (id) => {
    const answer = await fetch(url, { method: 'DELETE', headers: { ...headers, 'mcp-session-id': id } });
    await answer.text();
  };
  try {
    // Warm-up: the code paths compiled and the first-use caches filled before the baseline.
    for (let i = 0; i < 20; i += 1) await end(await open());
    await sleep(100);
    await settleHeap();
    const base = process.memoryUsage();
    const ids = [];
    for (let i = 0; i < count; i += 1) ids.push(await open());
    await sleep(100);
    await settleHeap();
    const full = process.memoryUsage();
    for (const id of ids) await end(id);
    await sleep(100);
    await settleHeap();
    const after = process.memoryUsage();
    const kib = (bytes) => bytes / 1024 / count;
    return {
      sessions: count,
      heapPerSessionKiB: kib(full.heapUsed - base.heapUsed),
      rssPerSessionKiB: kib(full.rss - base.rss),
      leftPerSessionKiB: kib(after.heapUsed - base.heapUsed),
    };
  } finally {
    await new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
    });
    await host.shutdown();
    state.remove();
  }
}
