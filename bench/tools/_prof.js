import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { contenderByKey } from '../lib/contenders.js';
import { settleHeap } from '../lib/env.js';
import { startAndCall, warmUp } from '../lib/memory-sample.js';
const [key = 'fleet', countText = '20'] = process.argv.slice(2);
const contender = contenderByKey(key);
await warmUp(contender);
await settleHeap();
const s = new Session(); s.connect();
await s.post('Profiler.enable'); await s.post('Profiler.setSamplingInterval', { interval: 50 });
let all = null;
for (let r = 0; r < 3; r++) {
  await s.post('Profiler.start');
  const h = await startAndCall(contender, Number(countText));
  const { profile } = await s.post('Profiler.stop');
  await h.close();
  writeFileSync(`/tmp/prof-${key}-${r}.cpuprofile`, JSON.stringify(profile));
}
process.exit(0);
