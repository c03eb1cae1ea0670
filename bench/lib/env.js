// Paths and small helpers shared by every suite.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = fileURLToPath(new URL('..', import.meta.url));
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const ECHO_SERVER = join(BENCH_DIR, 'fixtures', 'echo-server.mjs');
export const MINI_SERVER = join(BENCH_DIR, 'fixtures', 'mini-server.mjs');
export const ECHO_HTTP_SERVER = join(BENCH_DIR, 'fixtures', 'echo-http-server.mjs');

/** `count` server specs named `s00`, `s01`, … running `script` with this Node binary. */
export function serverSpecs(count, script, env = {}) {
  return Array.from({ length: count }, (_, i) => ({
    name: `s${String(i).padStart(2, '0')}`,
    command: process.execPath,
    args: [script],
    env,
  }));
}

/** A temp state dir holding `mcp_servers.json` for `specs` (mcp-fleet's own format; a spec's `fleet` adds config fields; one with a `url` is a remote server). */
export function stateDirFor(specs) {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-bench-'));
  const servers = Object.fromEntries(
    specs.map((spec) => [
      spec.name,
      spec.url === undefined
        ? { type: 'local', command: [spec.command, ...spec.args], env: spec.env ?? {}, ...(spec.fleet ?? {}) }
        : { type: 'remote', url: spec.url, ...(spec.fleet ?? {}) },
    ]),
  );
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers }, null, 2), { mode: 0o600 });
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Full GC, several passes, so what is left is what is reachable. */
export async function settleHeap() {
  if (typeof globalThis.gc !== 'function') return;
  for (let i = 0; i < 4; i += 1) {
    globalThis.gc();
    await sleep(20);
  }
}
