// Starts call-driver.js processes (one contender each) and talks to them.
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { BENCH_DIR } from './env.js';
import { log } from './suite.js';

/** A driver for `key`; resolves once its server is open. `request(op)` → its answer. `nodeArgs`: more flags for its Node. */
export async function startDriver(key, fleetServers, nodeArgs = []) {
  const args = [key, ...(fleetServers ? [JSON.stringify(fleetServers)] : [])];
  const child = fork(join(BENCH_DIR, 'suites', 'call-driver.js'), args, {
    execArgv: ['--expose-gc', ...nodeArgs],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map();
  let next = 0;
  await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`driver ${key} exited with ${code}`)));
    child.on('message', (message) => {
      if (message.ready) resolve();
      else waiting.get(message.id)?.(message);
    });
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    key,
    request(message) {
      const id = (next += 1);
      return new Promise((resolve) => {
        waiting.set(id, resolve);
        child.send({ ...message, id });
      });
    },
    async close() {
      await this.request({ op: 'close' });
      await exited;
    },
  };
}

/**
 * Sequential `echo` calls through several contenders, each in a driver of its
 * own, taking turns in chunks (A B C … then B C … A) so a slow spell of the
 * machine lands on all of them. Fresh processes every repetition: where the
 * scheduler puts a client and its server on the two cores sticks for a
 * process's life and moves its latency by ±20 %; new processes draw that anew.
 * `contenders`: key → { driver: call-driver.js's contender key, nodeArgs? }.
 * Returns per key the µs per call of each repetition, and per round (one chunk
 * of each, back to back) each one's time over `baseline`'s: the median of
 * these pairs is less moved by a slow spell than a ratio of medians.
 */
export async function callsInTurns({ contenders, baseline, reps, calls, warmup, chunk = 100, label }) {
  const keys = Object.keys(contenders);
  const samples = Object.fromEntries(keys.map((key) => [key, []]));
  const paired = Object.fromEntries(keys.map((key) => [key, []]));
  for (let rep = 0; rep < reps; rep += 1) {
    const drivers = {};
    for (let k = 0; k < keys.length; k += 1) {
      const key = keys[(rep + k) % keys.length];
      drivers[key] = await startDriver(contenders[key].driver, undefined, contenders[key].nodeArgs);
      await drivers[key].request({ op: 'seq', calls: warmup });
    }
    for (const key of keys) await drivers[key].request({ op: 'gc' });
    const total = Object.fromEntries(keys.map((key) => [key, 0]));
    for (let round = 0; round < calls / chunk; round += 1) {
      const us = {};
      for (let k = 0; k < keys.length; k += 1) {
        const key = keys[(round + rep + k) % keys.length];
        us[key] = (await drivers[key].request({ op: 'seq', calls: chunk })).us;
        total[key] += us[key] * chunk;
      }
      for (const key of keys) paired[key].push(us[key] / us[baseline]);
    }
    for (const key of keys) samples[key].push(total[key] / calls);
    log(`${label} rep ${rep + 1}: ${keys.map((key) => `${key} ${(total[key] / calls).toFixed(1)}`).join(', ')} µs/call`);
    for (const driver of Object.values(drivers)) await driver.close();
  }
  return { samples, paired };
}
