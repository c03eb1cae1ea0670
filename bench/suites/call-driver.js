// One contender in a process of its own, driven by percall.js or
// concurrency.js over IPC, so that no library shares a process (JIT state,
// AsyncLocalStorage hooks, a polymorphic SDK call site) with another while
// they still take turns in time. Messages:
//   → { id, op: 'seq', calls }            ← { id, us }   (µs per call, `calls` sequential echo calls)
//   → { id, op: 'burst', calls, ms, server } ← { id, ms } (all `calls` fired at once at `slow`)
//   → { id, op: 'close' }                  ← { id }
//   node bench/suites/call-driver.js CONTENDER [fleet server config JSON]
import { contenderByKey } from '../lib/contenders.js';
import { ECHO_SERVER, serverSpecs, settleHeap } from '../lib/env.js';

const [key, fleetServers] = process.argv.slice(2);
// raw: the raw SDK connecting one after the other; fleet: startup_concurrency 1.
const contender = contenderByKey(key, { sequential: true });
// mcp-fleet may run several servers (one per max_concurrent_calls); the others one.
const specs = fleetServers
  ? Object.entries(JSON.parse(fleetServers)).map(([name, fleet]) => ({ ...serverSpecs(1, ECHO_SERVER)[0], name, fleet }))
  : serverSpecs(1, ECHO_SERVER);
const handle = await contender.open(specs);
const args = { text: 'hello' };

async function seq(calls) {
  const started = performance.now();
  for (let i = 0; i < calls; i += 1) await handle.call('s00', 'echo', args);
  return ((performance.now() - started) * 1000) / calls;
}

async function burst(calls, ms, server) {
  const started = performance.now();
  await Promise.all(Array.from({ length: calls }, () => handle.call(server, 'slow', { ms })));
  return performance.now() - started;
}

process.on('message', async (message) => {
  switch (message.op) {
    case 'seq':
      process.send({ id: message.id, us: await seq(message.calls) });
      break;
    case 'burst':
      process.send({ id: message.id, ms: await burst(message.calls, message.ms, message.server ?? 's00') });
      break;
    case 'gc':
      await settleHeap();
      process.send({ id: message.id });
      break;
    case 'close':
      await handle.close();
      process.send({ id: message.id });
      process.exit(0);
  }
});
process.send({ ready: true });
