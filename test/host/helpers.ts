import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CatalogEntry, McpHost } from '../../src/host.js';
import type { ServerState } from '../../src/journal/events.js';
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

/**
 * Resolves once `holds` is true, checked now and after each journal event (every
 * view is folded from the journal, so nothing else can make it true).
 */
export function untilJournal(host: McpHost, holds: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (holds()) return resolve();
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`timed out waiting for ${what}`));
    }, timeoutMs);
    const unsubscribe = host.subscribe(() => {
      if (!holds()) return;
      clearTimeout(timer);
      unsubscribe();
      resolve();
    });
  });
}

/** `server`'s catalog entry once its resources (with templates) and prompts are listed: none of them `null`. */
export async function untilListed(host: McpHost, server: string, timeoutMs = 15_000): Promise<CatalogEntry> {
  const entry = () => host.catalog().find((candidate) => candidate.name === server);
  const listed = () => {
    const found = entry();
    return found !== undefined && found.resources !== null && found.resource_templates !== null && found.prompts !== null;
  };
  await untilJournal(host, listed, `the catalog of ${server} to be listed`, timeoutMs);
  return entry() as CatalogEntry;
}

export { isAlive, allGone };
