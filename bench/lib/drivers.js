// Starts call-driver.js processes (one contender each) and talks to them.
import { fork } from 'node:child_process';
import { join } from 'node:path';
import { BENCH_DIR } from './env.js';

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
