// Profiles mcp-fleet's re-sync of a 5,000-tool catalog after list_changed:
// one host, one server, `--rounds` bumps, timing each from the bump call to
// the re-registration. Run under `node --cpu-prof` to see where it goes.
//   node --cpu-prof --cpu-prof-dir=DIR bench/tools/profile-resync.js [--rounds 30] [--one]
// --one: the bump changes one tool, not every padding tool.
import { mcpFleet } from '../lib/contenders.js';
import { ECHO_SERVER, serverSpecs } from '../lib/env.js';

const args = process.argv.slice(2);
const rounds = Number(args[args.indexOf('--rounds') + 1]) || 30;
const one = args.includes('--one');
const handle = await mcpFleet().open(serverSpecs(1, ECHO_SERVER, { BENCH_TOOLS: '4997' }));
const { host } = handle;
const times = [];
for (let round = 0; round < rounds; round += 1) {
  const seq = host.events().at(-1)?.seq ?? 0;
  const done = new Promise((resolve) => {
    const off = host.subscribe((event) => {
      if (event.seq > seq && event.type === 'tools.registered') {
        off();
        resolve(performance.now());
      }
    });
  });
  const started = performance.now();
  await handle.call('s00', 'bump', { one });
  times.push((await done) - started);
  await new Promise((resolve) => setTimeout(resolve, 100));
}
times.sort((a, b) => a - b);
console.log(`re-sync ms: median ${times[times.length >> 1].toFixed(1)}, min ${times[0].toFixed(1)}, max ${times.at(-1).toFixed(1)}`);
await handle.close();
