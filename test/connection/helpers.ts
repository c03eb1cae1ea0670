// Shared setup for the connection tests: configs for fixture servers, and
// bookkeeping that closes every connection and removes temp files after each test.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { ServerConfig, type LocalServerConfig } from '../../src/config/schema.js';
import { connect, type ConnectOptions, type ServerConnection } from '../../src/connection/connection.js';
import { fixtureCommand } from '../fixtures/index.js';
import { isAlive } from '../support/processes.js';
import { untilValue } from '../support/wait.js';

const open = new Set<ServerConnection>();
const dirs: string[] = [];

afterEach(async () => {
  const connections = [...open];
  open.clear();
  await Promise.all(connections.map((connection) => connection.close()));
  // close() promises the child is gone; hold every test to it.
  const alive = connections.flatMap((connection) => (connection.pid !== null && isAlive(connection.pid) ? [connection.pid] : []));
  if (alive.length > 0) throw new Error(`children still alive after close(): ${alive.join(', ')}`);
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fully defaulted local config running fixture `name`. */
export function fixtureConfig(name: string, overrides: Partial<LocalServerConfig> = {}): LocalServerConfig {
  const parsed = ServerConfig.parse({ type: 'local', command: fixtureCommand(name), ...overrides });
  if (parsed.type !== 'local') throw new Error('expected a local config');
  return parsed;
}

/** connect(), remembering the connection so afterEach closes it. */
export async function connectTracked(
  name: string,
  config: ServerConfig,
  options?: ConnectOptions,
): Promise<ServerConnection> {
  const connection = await connect(name, config, options);
  open.add(connection);
  return connection;
}

/** A fresh temp dir, removed after the test. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-conn-'));
  dirs.push(dir);
  return dir;
}


/** The pid a fixture wrote to its FIXTURE_PID_FILE, once it has. */
export function waitForPidFile(file: string): Promise<number> {
  return untilValue(() => {
    try {
      const pid = Number(readFileSync(file, 'utf8'));
      return pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  }, `a pid in ${file}`);
}

/** The text of a call result's first content block. */
export function firstText(result: { content: unknown }): string {
  const blocks = result.content as Array<{ type: string; text?: string }>;
  const block = blocks[0];
  if (block?.type !== 'text' || block.text === undefined) throw new Error('expected a text block');
  return block.text;
}

export { isAlive };
