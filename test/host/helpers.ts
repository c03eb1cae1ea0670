import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { McpHost } from '../../src/host.js';
import type { ServerState } from '../../src/services/journal/events.js';
import { isAlive, allGone } from '../support/processes.js';
import { waitForEvent } from '../support/wait.js';

/** A fresh state dir holding `servers` as its `mcp_servers.json`. */
export function stateDirWith(servers: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-host-'));
  writeFileSync(join(dir, 'mcp_servers.json'), `${JSON.stringify({ servers }, null, 2)}\n`);
  return dir;
}

export function readConfigFile(dir: string): { servers: Record<string, Record<string, unknown>> } {
  return JSON.parse(readFileSync(join(dir, 'mcp_servers.json'), 'utf8'));
}

/** Resolves once `server` is in `state` according to the host's status (the journal projection). */
export async function untilState(host: McpHost, server: string, state: ServerState, timeoutMs = 15_000): Promise<void> {
  await waitForEvent((listener) => host.subscribe(listener), () => host.server(server)?.state === state, `${server} to reach ${state}`, timeoutMs).catch(
    (error: Error) => {
      throw new Error(`${error.message} (now ${host.server(server)?.state ?? 'absent'})`);
    },
  );
}

export { isAlive, allGone };
