// The shared steps of the memory probe and the tools that look deeper into it.
import { MINI_SERVER, serverSpecs, settleHeap } from './env.js';
import { noChildren } from './processes.js';

const serverName = (i) => `s${String(i).padStart(2, '0')}`;

/**
 * 10 servers, each called, then closed: every code path of a connect and a
 * call is compiled before the baseline, so what grows after is per-server state.
 */
export async function warmUp(contender) {
  const warm = await contender.open(serverSpecs(10, MINI_SERVER));
  for (let i = 0; i < 10; i += 1) await warm.call(serverName(i), 'echo', { text: 'warm' });
  await warm.close();
  await noChildren();
  await settleHeap();
}

/** Starts COUNT servers and calls each once, as an agent would: lazily built per-tool state counts too. */
export async function startAndCall(contender, count) {
  const handle = await contender.open(serverSpecs(count, MINI_SERVER));
  for (let i = 0; i < count; i += 1) await handle.call(serverName(i), 'echo', { text: 'x' });
  return handle;
}

/**
 * `process.memoryUsage()` one full GC after the heap settled: the settle's
 * last GC leaves 40–400 KiB that the next one frees (bench/README.md).
 */
export function usageAfterOneMoreGc() {
  globalThis.gc();
  return process.memoryUsage();
}
