// A real host on real stdio fixture servers behind a listening management app,
// with canary secrets every reply is checked against.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { createMcpHost, type McpHost, type McpHostOptions } from '../../src/host.js';
import type { ManagementAppOptions } from '../../src/http/app.js';
import type { ServerState } from '../../src/journal/events.js';
import { fixtureCommand } from '../fixtures/index.js';
import { serve, type Reply, type RequestOptions, type Served } from './helpers.js';
import { isAlive, allGone, readPid } from '../support/processes.js';
import { untilValue } from '../support/wait.js';

/** Secret values planted in configs and bodies; no reply may contain one. */
export const CANARIES = ['canary-env-SECRET-0001', 'canary-replaced-SECRET-0002', 'canary-header-SECRET-0003', 'canary-token-SECRET-0004'];

export interface Fleet {
  dir: string;
  host: McpHost;
  served: Served;
  /** A request whose reply is asserted to contain no canary. */
  request(path: string, options?: RequestOptions): Promise<Reply>;
  configText(): string;
  config(): { servers: Record<string, any> };
  close(): Promise<void>;
}

/** A healthy fixture server writing its pid to `<dir>/<name>.pid`. */
export function healthy(dir: string, name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'local',
    command: fixtureCommand('healthy'),
    env: { FIXTURE_PID_FILE: join(dir, `${name}.pid`), ...((extra.env as object) ?? {}) },
    timeout_seconds: 15,
    ...Object.fromEntries(Object.entries(extra).filter(([key]) => key !== 'env')),
  };
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'mcp-fleet-http-'));
}

/** Writes `servers(dir)` as the config, starts a host on it and serves it. */
export async function startFleet(
  servers: (dir: string) => Record<string, unknown>,
  appOptions: Partial<ManagementAppOptions> = {},
  hostOptions: Partial<McpHostOptions> = {},
): Promise<Fleet> {
  const dir = tempDir();
  writeFileSync(join(dir, 'mcp_servers.json'), `${JSON.stringify({ servers: servers(dir) }, null, 2)}\n`);
  // Quiet: the tests assert on answers, and expected start failures would only add noise.
  const host = createMcpHost({
    stateDir: dir,
    persistJournal: false,
    logger: { info: () => {}, warn: () => {} },
    ...hostOptions,
  });
  const served = await serve(host, appOptions);
  await host.start();
  const configText = () => readFileSync(join(dir, 'mcp_servers.json'), 'utf8');
  return {
    dir,
    host,
    served,
    async request(path, options) {
      const reply = await served.request(path, options);
      for (const canary of CANARIES) expect(reply.text, `${path} leaked a secret`).not.toContain(canary);
      return reply;
    },
    configText,
    config: () => JSON.parse(configText()),
    async close() {
      await served.close();
      await host.shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls the API until `server` is in `state`. */
export async function untilState(fleet: Fleet, server: string, state: ServerState, timeoutMs = 15_000): Promise<void> {
  let last: string | undefined;
  await untilValue(async () => {
    last = (await fleet.request(`/api/mcp/servers/${server}`)).json?.state;
    return last === state;
  }, `${server} to reach ${state}`, timeoutMs).catch((error: Error) => {
    throw new Error(`${error.message} (last: ${last})`);
  });
}

export { isAlive, allGone, readPid };
