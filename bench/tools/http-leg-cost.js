// What one call to a Streamable HTTP server costs in this process: a host's
// `callTool` against a raw SDK `Client` + `StreamableHTTPClientTransport`, on
// the same server (bench/fixtures/echo-http-server.mjs, its own process), and
// the host's call to the same tool over stdio (`stdio`). CPU µs
// per call from process.cpuUsage (this process only: the server is elsewhere).
//   node bench/tools/http-leg-cost.js [CALLS=3000] [ROUNDS=3]
// (`npm run build` first.) With HTTP_LEG_PROFILE=<file> the host's calls run
// under the inspector's CPU profiler and the profile is written there.
import { spawn } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Session } from 'node:inspector/promises';
import { Client, StreamableHTTPClientTransport } from '../../node_modules/@modelcontextprotocol/client/dist/index.mjs';
import { createMcpHost } from '../../dist/host.js';
import { ECHO_HTTP_SERVER, ECHO_SERVER } from '../lib/env.js';

const [callsText = '3000', roundsText = '3'] = process.argv.slice(2);
const calls = Number(callsText);
const rounds = Number(roundsText);

const server = spawn(process.execPath, [ECHO_HTTP_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
const url = await new Promise((resolve, reject) => {
  server.once('exit', (code) => reject(new Error(`server exited ${code}`)));
  createInterface({ input: server.stdout }).once('line', resolve);
});

const dir = mkdtempSync(join(tmpdir(), 'http-leg-cost-'));
writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({
    servers: {
      echo: { type: 'remote', url, transport: 'streamable_http' },
      // The same tool over stdio: what the HTTP leg is compared with.
      local: { type: 'local', command: [process.execPath, ECHO_SERVER] },
    },
  }),);
const host = createMcpHost({ stateDir: dir, persistJournal: false, logger: { info() {}, warn() {} } });
await host.start();
for (let i = 0; !host.hasTool('echo__echo') || !host.hasTool('local__echo'); i++) {
  if (i > 200) throw new Error('echo never came up');
  await new Promise((resolve) => setTimeout(resolve, 25));
}
const raw = new Client({ name: 'raw', version: '1.0.0' });
await raw.connect(new StreamableHTTPClientTransport(new URL(url)));
// The raw client again, its requests sent by node:http (keep-alive) instead of fetch: what fetch itself costs.
const agent = new Agent({ keepAlive: true });
function nodeHttpFetch(target, init = {}) {
  return new Promise((resolve, reject) => {
    const request = httpRequest(target, { method: init.method ?? 'GET', headers: Object.fromEntries(new Headers(init.headers)), agent, signal: init.signal }, (response) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(response.headers)) for (const one of [value].flat()) headers.append(name, one);
      const empty = response.statusCode === 204 || response.statusCode === 304 || init.method === 'HEAD';
      if (empty) response.resume();
      resolve(new Response(empty ? null : Readable.toWeb(response), { status: response.statusCode, statusText: response.statusMessage, headers }));
    });
    request.once('error', reject);
    request.end(init.body);
  });
}
const rawNodeHttp = new Client({ name: 'raw-node-http', version: '1.0.0' });
await rawNodeHttp.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: nodeHttpFetch }));

const all = {
  raw: async (i) => (await raw.callTool({ name: 'echo', arguments: { text: `call ${i}` } })).content[0].text,
  'raw-node-http': async (i) => (await rawNodeHttp.callTool({ name: 'echo', arguments: { text: `call ${i}` } })).content[0].text,
  host: async (i) => (await host.callTool('echo__echo', { text: `call ${i}` })).content[0].text,
  stdio: async (i) => (await host.callTool('local__echo', { text: `call ${i}` })).content[0].text,
};
// HTTP_LEG_WAYS=host (or raw) measures one of them alone.
const ways = Object.fromEntries(Object.entries(all).filter(([way]) => (process.env.HTTP_LEG_WAYS ?? 'raw,raw-node-http,host,stdio').split(',').includes(way)));
const drive = async (way, count) => {
  for (let i = 0; i < count; i++) {
    const text = await ways[way](i);
    if (text !== `call ${i}`) throw new Error(`${way}: wrong answer ${text}`);
  }
};
try {
  for (const way of Object.keys(ways)) await drive(way, 500);
  if (process.env.HTTP_LEG_PROFILE) {
    const session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    await drive('host', calls);
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(process.env.HTTP_LEG_PROFILE, JSON.stringify(profile));
  }
  for (let round = 0; round < rounds; round++) {
    for (const way of Object.keys(ways)) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      await drive(way, calls);
      const wall = (performance.now() - started) * 1000;
      const used = process.cpuUsage(cpu);
      console.log(`${way}: ${(wall / calls).toFixed(0)} µs wall, CPU ${((used.user + used.system) / calls).toFixed(0)} µs per call (user ${(used.user / calls).toFixed(0)}, sys ${(used.system / calls).toFixed(0)})`);
    }
  }
} finally {
  await raw.close();
  await rawNodeHttp.close();
  agent.destroy();
  await host.shutdown();
  server.kill('SIGTERM');
}
