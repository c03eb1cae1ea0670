// A real host on a temp state dir, for tests that run fixture processes:
// configs whose children log their start (name, pid, time) to a spawn log,
// file edits as a user would make them, and cleanup after each test (every
// host shut down, every logged child checked gone, the dir removed).
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect } from 'vitest';
import { createMcpHost, type McpHost } from '../../../src/host.js';
import type { ServerConfigInput } from '../../../src/config/schema.js';
import type { JournalEvent } from '../../../src/journal/events.js';
import { fixture } from '../../fixtures/index.js';
import { isAlive } from '../../support/processes.js';

const SPAWN_LOG_SCRIPT = fileURLToPath(new URL('./spawn-log.mjs', import.meta.url));
const SPAWN_NAME_PREFIX = 'fleet-test-server:';

/** One child start, as the spawn log recorded it. */
export interface Spawn {
  name: string;
  pid: number;
  /** Date.now() in the child at start. */
  at: number;
}

export interface Fleet {
  readonly dir: string;
  /** A local config running fixture `fixtureName`, logging its start under `name`. */
  local(name: string, fixtureName: string, extra?: Partial<ServerConfigInput> & { env?: Record<string, string> }): ServerConfigInput;
  /** Replaces `mcp_servers.json` in one rename, as an editor saving the file would. */
  writeServers(servers: Record<string, ServerConfigInput>): void;
  readServers(): Record<string, ServerConfigInput>;
  /** Every child started so far, in start order. */
  spawns(): Spawn[];
  spawnsOf(name: string): Spawn[];
  /** A host on this dir (shut down after the test). */
  host(options?: { persistJournal?: boolean; startupConcurrency?: number }): McpHost;
}

const hosts: McpHost[] = [];
const fleets: Fleet[] = [];

afterEach(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.shutdown()));
  for (const fleet of fleets.splice(0)) {
    const survivors = fleet.spawns().filter((spawn) => isAlive(spawn.pid));
    for (const spawn of survivors) process.kill(spawn.pid, 'SIGKILL');
    rmSync(fleet.dir, { recursive: true, force: true });
    expect(survivors, 'no child outlives its host').toEqual([]);
  }
});

export function createFleet(): Fleet {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-test-'));
  const spawnLog = join(dir, 'spawns.jsonl');
  const configFile = join(dir, 'mcp_servers.json');
  const fleet: Fleet = {
    dir,
    local(name, fixtureName, { env, ...extra } = {}) {
      return {
        type: 'local',
        command: [process.execPath, SPAWN_LOG_SCRIPT, fixture(fixtureName)],
        // Env values are secrets, redacted wherever they appear: a bare short name would garble stderr.
        env: { SPAWN_LOG: spawnLog, SPAWN_NAME: `${SPAWN_NAME_PREFIX}${name}`, ...env },
        ...extra,
      } as ServerConfigInput;
    },
    writeServers(servers) {
      const temp = `${configFile}.edit`;
      writeFileSync(temp, JSON.stringify({ servers }, null, 2));
      renameSync(temp, configFile);
    },
    readServers() {
      return (JSON.parse(readFileSync(configFile, 'utf8')) as { servers: Record<string, ServerConfigInput> }).servers;
    },
    spawns() {
      let text = '';
      try {
        text = readFileSync(spawnLog, 'utf8');
      } catch {
        return [];
      }
      return text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Spawn)
        .map((spawn) => ({ ...spawn, name: spawn.name.slice(SPAWN_NAME_PREFIX.length) }));
    },
    spawnsOf(name) {
      return fleet.spawns().filter((spawn) => spawn.name === name);
    },
    host(options = {}) {
      const host = createMcpHost({ stateDir: dir, logger: { info: () => {}, warn: () => {} }, ...options });
      hosts.push(host);
      return host;
    },
  };
  fleets.push(fleet);
  return fleet;
}

type Transition = Extract<JournalEvent, { type: 'server.transitioned' }>;

/** The journal's transitions, optionally of one server. */
export function transitions(host: McpHost, server?: string): Transition[] {
  return host
    .events()
    .filter((event): event is Transition => event.type === 'server.transitioned')
    .filter((event) => server === undefined || event.server === server);
}

/** When `server` first entered `state`, in ms since the epoch (from the journal). */
export function enteredAt(host: McpHost, server: string, state: Transition['to']): number {
  const event = transitions(host, server).find((candidate) => candidate.to === state);
  if (!event) throw new Error(`server ${server} never entered ${state}`);
  return Date.parse(event.at);
}

/** `name → state` of every server in the status view, in view order. */
export function states(host: McpHost): Record<string, string> {
  return Object.fromEntries(host.status().map((view) => [view.name, view.state]));
}

export { isAlive };
