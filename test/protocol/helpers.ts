// A real host on the changing-catalog fixture (and friends), for the protocol-feature tests.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMcpHost, type McpHost, type McpHostOptions } from '../../src/host.js';
import type { JournalEvent } from '../../src/journal/events.js';
import { fixtureCommand } from '../fixtures/index.js';
import { allGone, readPid } from '../support/processes.js';
import { untilState } from '../host/helpers.js';

/** A local server entry running the changing-catalog fixture, writing its pid to `<dir>/<name>.pid`. */
export function catalogServer(dir: string, name: string, extra: Record<string, unknown> = {}, ...args: string[]) {
  const { env, ...rest } = extra as { env?: Record<string, string> };
  return {
    type: 'local',
    command: fixtureCommand('changing-catalog', ...args),
    env: { FIXTURE_PID_FILE: join(dir, `${name}.pid`), ...env },
    timeout_seconds: 15,
    ...rest,
  };
}

export interface Running {
  host: McpHost;
  dir: string;
  /** Journal events of one type, in order. */
  events<T extends JournalEvent['type']>(type: T): Array<Extract<JournalEvent, { type: T }>>;
  /** Shuts the host down and checks every fixture child is gone. */
  close(): Promise<void>;
}

/** Starts a host on `servers(dir)` and waits until each of `ready` is ready. */
export async function startHost(
  servers: (dir: string) => Record<string, Record<string, unknown>>,
  ready: string[],
  options: Partial<McpHostOptions> = {},
): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-protocol-'));
  const config = servers(dir);
  writeFileSync(join(dir, 'mcp_servers.json'), `${JSON.stringify({ servers: config }, null, 2)}\n`);
  const host = createMcpHost({ stateDir: dir, persistJournal: false, logger: { info() {}, warn() {} }, ...options });
  await host.start();
  for (const name of ready) await untilState(host, name, 'ready');
  return {
    host,
    dir,
    events: (type) => host.events().filter((event) => event.type === type) as never,
    async close() {
      const pids = Object.keys(config).flatMap((name) => {
        try {
          return [readPid(join(dir, `${name}.pid`))];
        } catch {
          return [];
        }
      });
      await host.shutdown();
      if (!(await allGone(pids))) throw new Error(`fixture processes left running: ${pids.join(', ')}`);
    },
  };
}

/** The text of a tool result's content. */
export function textOf(result: { content: Array<{ type: string; text?: string }> }): string {
  return result.content.map((block) => block.text ?? '').join('\n');
}
