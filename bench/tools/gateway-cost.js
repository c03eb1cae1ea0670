// What one call through `/mcp` costs the worker: its CPU µs per call (utime +
// stime of the `serve` process from /proc, stable under load) and the µs per
// call a client sees, per era and concurrency. For measuring a change to the
// gateway's path step by step (`npm run build` first).
//   node bench/tools/gateway-cost.js [CALLS=3000] [CONCURRENCY…=1 8]
// With GATEWAY_SYSCALLS=1 it counts instead the worker's socket writes per
// call (strace attached: the times are then strace's, not the worker's).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Client } from '../../node_modules/@modelcontextprotocol/client/dist/index.mjs';
import { StreamableHTTPClientTransport } from '../../node_modules/@modelcontextprotocol/client/dist/index.mjs';
import { ECHO_HTTP_SERVER, ECHO_SERVER, serverSpecs, stateDirFor } from '../lib/env.js';
import { API_TOKEN, noChildren, startHttpServer, startServe } from '../lib/processes.js';

const [callsText = '3000', ...levelsText] = process.argv.slice(2);
const calls = Number(callsText);
const levels = levelsText.length > 0 ? levelsText.map(Number) : [1, 8];
const ticksPerSecond = 100;

/** CPU µs the process has used (user + system). */
function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / ticksPerSecond;
}

/** Counts the write syscalls of `pid`'s threads while `run` runs. */
async function writesDuring(pid, run) {
  const tracer = spawn('strace', ['-f', '-c', '-e', 'trace=write,writev,sendmsg,sendto', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let report = '';
  tracer.stderr.on('data', (chunk) => (report += chunk));
  await new Promise((resolve) => setTimeout(resolve, 500));
  await run();
  const exited = new Promise((resolve) => tracer.once('exit', resolve));
  tracer.kill('SIGINT');
  await exited;
  const counts = {};
  for (const match of report.matchAll(/^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$/gm)) counts[match[2]] = Number(match[1]);
  return counts;
}

// GATEWAY_BACKEND=http: the echo server is reached over Streamable HTTP (its own process) instead of stdio.
const backend = process.env.GATEWAY_BACKEND === 'http' ? await startHttpServer(ECHO_HTTP_SERVER) : undefined;
const [spec] = serverSpecs(1, ECHO_SERVER);
const state = stateDirFor([backend === undefined ? { ...spec, name: 'echo' } : { name: 'echo', url: backend.url }]);
const worker = await startServe(state.dir);
await worker.ready;
console.log(`bench pid ${process.pid}, worker pid ${worker.pid}`);
const connect = async (mode) => {
  const client = new Client({ name: `cost-${mode}`, version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${worker.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${API_TOKEN}` } } }));
  return client;
};
const clients = { legacy: await connect('legacy'), modern: await connect('auto') };
const drive = async (client, count, concurrency) => {
  await Promise.all(
    Array.from({ length: concurrency }, async (_, lane) => {
      for (let i = lane; i < count; i += concurrency) {
        const result = await client.callTool({ name: 'echo__echo', arguments: { text: `call ${i}` } });
        if (result.content?.[0]?.text !== `call ${i}`) throw new Error(`wrong answer: ${JSON.stringify(result)}`);
      }
    }),
  );
};
try {
  for (const era of Object.keys(clients)) await drive(clients[era], 1000, 4);
  for (const concurrency of levels) {
    for (const era of Object.keys(clients)) {
      if (process.env.GATEWAY_SYSCALLS === '1') {
        const counts = await writesDuring(worker.pid, () => drive(clients[era], calls, concurrency));
        console.log(`${era} c=${concurrency}: worker writes per call ${Object.entries(counts).map(([name, n]) => `${name} ${(n / calls).toFixed(2)}`).join(', ')}`);
        continue;
      }
      const cpu = cpuMicros(worker.pid);
      const started = performance.now();
      await drive(clients[era], calls, concurrency);
      const wall = (performance.now() - started) * 1000;
      const used = cpuMicros(worker.pid) - cpu;
      console.log(`${era} c=${concurrency}: ${(wall / calls).toFixed(0)} µs per call (wall/calls), worker CPU ${(used / calls).toFixed(0)} µs per call`);
    }
  }
  console.log(`load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
} finally {
  await Promise.all(Object.values(clients).map((client) => client.close()));
  await worker.stop();
  await backend?.stop();
  state.remove();
  await noChildren();
}
