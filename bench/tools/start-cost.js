// What one server start costs that a wall clock under load hides: CPU time
// (process.cpuUsage, this process only) per server started and called once,
// after the memory probe's warm-up, and the machine steps taken per start
// (actor snapshots created, transitions by event type).
//   node --expose-gc bench/tools/start-cost.js [fleet|raw|…] [COUNT=20] [--rounds 3]
import { contenderByKey } from '../lib/contenders.js';
import { settleHeap } from '../lib/env.js';
import { startAndCall, warmUp } from '../lib/memory-sample.js';

const [key = 'fleet', countText = '20'] = process.argv.slice(2);
const count = Number(countText);
const rounds = process.argv.includes('--rounds') ? Number(process.argv[process.argv.indexOf('--rounds') + 1]) : 3;
const contender = contenderByKey(key);

// mcp-fleet's machines, built once per process: their transitions are counted by wrapping them.
const steps = new Map();
/** Only the start and the call are counted, not the close after. */
let counting = false;
if (key === 'fleet') {
  const machines = {
    server: (await import('../../dist/machines/server.machine.js')).serverMachine,
    registry: (await import('../../dist/machines/registry.machine.js')).registryMachine,
  };
  for (const [name, machine] of Object.entries(machines)) {
    for (const method of ['transition', 'getInitialSnapshot']) {
      const original = machine[method].bind(machine);
      machine[method] = (...args) => {
        // Actor ids and invoke indexes vary per server: one label per kind of event.
        const label = `${name} ${method === 'transition' ? args[1]?.type.replace(/\d+/g, 'N') : 'initial snapshot'}`;
        if (counting) steps.set(label, (steps.get(label) ?? 0) + 1);
        return original(...args);
      };
    }
  }
}

await warmUp(contender);
const cpu = [];
for (let round = 0; round < rounds; round += 1) {
  steps.clear();
  counting = true;
  const before = process.cpuUsage();
  const handle = await startAndCall(contender, count);
  const used = process.cpuUsage(before);
  counting = false;
  cpu.push((used.user + used.system) / 1000 / count);
  await handle.close();
  await settleHeap();
}
console.log(`${key}: CPU per server start (ms, each round of ${count}): ${cpu.map((ms) => ms.toFixed(2)).join(' ')}`);
for (const [label, n] of [...steps].sort()) console.log(`${(n / count).toFixed(2).padStart(6)} ${label}`);
process.exit(0);
