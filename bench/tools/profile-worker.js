// CPU-profiles a real worker (in this process) while autocannon (a child
// process) loads one route; writes PROFILE.cpuprofile for profile-summary.js.
//   node bench/tools/profile-worker.js ROUTE [SERVERS=200] [SECONDS=5] [OUT=/tmp/worker.cpuprofile]
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { register } from 'tsx/esm/api';
import { BENCH_DIR, MINI_SERVER, serverSpecs, stateDirFor } from '../lib/env.js';
import { API_TOKEN } from '../lib/processes.js';

register();
const { startWorker } = await import('../../src/cli/serve.ts');
const [route = '/api/mcp/servers', servers = '200', seconds = '5', out = '/tmp/worker.cpuprofile'] = process.argv.slice(2);
const state = stateDirFor(serverSpecs(Number(servers), MINI_SERVER));
process.env.MCP_FLEET_API_TOKEN = API_TOKEN;
const mute = { stdout() {}, stderr() {}, setExitCode() {} };
const worker = await startWorker({ stateDir: state.dir, port: 0, logLevel: 'warn', startupConcurrency: 8 }, mute);
await worker.host.settled();
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 100 });
await session.post('Profiler.start');
const cannon = spawn(
  process.execPath,
  [join(BENCH_DIR, 'node_modules', 'autocannon', 'autocannon.js'), '-c', '10', '-d', seconds, '-H', `authorization=Bearer ${API_TOKEN}`, `${worker.url}${route.replace(/^\//, '')}`],
  { stdio: ['ignore', 'inherit', 'inherit'] },
);
await new Promise((resolve) => cannon.once('exit', resolve));
const { profile } = await session.post('Profiler.stop');
writeFileSync(out, JSON.stringify(profile));
await worker.stop();
state.remove();
console.log(`wrote ${out}`);
process.exit(0);
