import { copyFileSync, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
// As an embedder imports them: from the package's entry point.
import { ConfigEntryInvalidError, ConfigFileBrokenError } from '../../src/index.js';
import { fixtureCommand } from '../fixtures/index.js';
import { isAlive, readPid } from '../support/processes.js';
import { readConfigFile, stateDirWith, untilState } from './helpers.js';

let host: McpHost | undefined;
afterEach(async () => {
  await host?.shutdown();
  host = undefined;
});

function healthy(dir: string, name: string, extra: Record<string, unknown> = {}) {
  return { type: 'local' as const, command: fixtureCommand('healthy'), env: { FIXTURE_PID_FILE: join(dir, `${name}.pid`) }, ...extra };
}

function editFile(dir: string, change: (servers: Record<string, Record<string, unknown>>) => void): void {
  const file = readConfigFile(dir);
  change(file.servers);
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify(file, null, 2));
}

async function startWith(servers: (dir: string) => Record<string, unknown>, warnings: string[] = []) {
  const dir = stateDirWith({});
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: servers(dir) }));
  // Methods that need their `this`, as pino's do: a logger method handed on unbound fails here.
  const logger = {
    lines: warnings,
    info() {},
    warn(this: { lines: string[] }, line: string) {
      this.lines.push(line);
    },
  };
  host = createMcpHost({ stateDir: dir, logger });
  await host.start();
  await host.settled();
  return dir;
}

/**
 * Adds a disabled server by hand and waits until the host has applied that edit. Edits are
 * applied one after another, each reading the whole file: once this one is in, whatever an
 * earlier change of the file would have caused has happened (and this reload saw it too).
 */
async function applySentinelEdit(dir: string): Promise<void> {
  editFile(dir, (servers) => {
    servers['sentinel'] = { type: 'local', command: ['true'], enabled: false };
  });
  await untilState(host!, 'sentinel', 'disabled', 20_000);
}

const aboutSentinel = (event: { type: string }) => 'server' in event && event.server === 'sentinel';

const transitions = (name: string) =>
  host!.events().filter((event) => event.type === 'server.transitioned' && event.server === name).length;

test('an edit restarts only the server whose connection settings changed', async () => {
  const dir = await startWith((d) => ({ a: healthy(d, 'a'), b: healthy(d, 'b') }));
  const [a, b] = [readPid(join(dir, 'a.pid')), readPid(join(dir, 'b.pid'))];
  editFile(dir, (servers) => {
    servers['a']!['env'] = { FIXTURE_PID_FILE: join(dir, 'a.pid'), EXTRA: 'edited-by-hand' };
  });
  await expect.poll(() => readPid(join(dir, 'a.pid')), { timeout: 20_000 }).not.toBe(a);
  await untilState(host!, 'a', 'ready');
  expect(isAlive(a)).toBe(false);
  expect(readPid(join(dir, 'b.pid'))).toBe(b);
  expect(isAlive(b)).toBe(true);
  expect(host!.server('a')?.config).toHaveProperty(['env', 'EXTRA']);
});

test('a changed tool filter applies without a restart', async () => {
  const dir = await startWith((d) => ({ f: healthy(d, 'f') }));
  const pid = readPid(join(dir, 'f.pid'));
  const before = transitions('f');
  expect(host!.tools().map((tool) => tool.name)).toContain('f__add');
  editFile(dir, (servers) => {
    servers['f']!['tools'] = { include: ['echo', 'add'], exclude: ['add'] };
  });
  await expect.poll(() => host!.tools().map((tool) => tool.name), { timeout: 20_000 }).toEqual(['f__echo']);
  expect(readPid(join(dir, 'f.pid'))).toBe(pid);
  expect(transitions('f')).toBe(before);
  expect(host!.server('f')).toMatchObject({ state: 'ready', tool_count: 1 });
});

test('an access policy added by hand applies without a restart', async () => {
  const dir = await startWith((d) => ({ f: healthy(d, 'f') }));
  const pid = readPid(join(dir, 'f.pid'));
  const before = transitions('f');
  const bob = { id: 'bob', groups: ['sales'] };
  expect(host!.tools({ principal: bob }).map((tool) => tool.name)).toContain('f__add');
  editFile(dir, (servers) => {
    servers['f']!['access'] = { groups: ['eng'] };
  });
  await expect.poll(() => host!.tools({ principal: bob }).length, { timeout: 20_000 }).toBe(0);
  expect(host!.tools({ principal: { id: 'eve', groups: ['eng'] } }).map((tool) => tool.name)).toContain('f__add');
  expect(readPid(join(dir, 'f.pid'))).toBe(pid);
  expect(transitions('f')).toBe(before);
});

test('a changed max_result_bytes applies without a restart', async () => {
  const dir = await startWith((d) => ({ f: healthy(d, 'f', { large_results: 'truncate' }) }));
  const pid = readPid(join(dir, 'f.pid'));
  const before = transitions('f');
  const message = 'x'.repeat(3000);
  expect((await host!.callTool('f__echo', { text: message })).content).toHaveLength(1);
  expect((await host!.callTool('f__echo', { text: message })).details.truncated).toBeUndefined();
  editFile(dir, (servers) => {
    servers['f']!['max_result_bytes'] = 1024;
  });
  await expect.poll(() => host!.server('f')?.config['max_result_bytes'], { timeout: 20_000 }).toBe(1024);
  const bounded = await host!.callTool('f__echo', { text: message });
  expect(bounded.details.truncated).toBe(true);
  expect(bounded.content[0]).toMatchObject({ type: 'text', text: expect.stringMatching(/^x+\n\[truncated: \d+ of 3000 bytes shown/) });
  expect(Buffer.byteLength((bounded.content[0] as { text: string }).text)).toBeLessThanOrEqual(1024);
  expect(readPid(join(dir, 'f.pid'))).toBe(pid);
  expect(transitions('f')).toBe(before);
});

test("the worker's own writes do not trigger a reload", async () => {
  const dir = await startWith((d) => ({ own: healthy(d, 'own') }));
  await host!.addServer('added', healthy(dir, 'added'));
  await host!.updateServer('own', { call_timeout_seconds: 7 });
  const pids = [readPid(join(dir, 'own.pid')), readPid(join(dir, 'added.pid'))];
  const seq = host!.events().at(-1)!.seq;
  await applySentinelEdit(dir);
  // The reload of the file (with the worker's writes in it) changed nothing but the sentinel.
  expect(host!.events(seq).filter((event) => !aboutSentinel(event))).toEqual([]);
  expect([readPid(join(dir, 'own.pid')), readPid(join(dir, 'added.pid'))]).toEqual(pids);
});

test('a file gone a moment (an editor that moves it away, then writes the new one) stops nothing', async () => {
  const dir = await startWith((d) => ({ kept: healthy(d, 'kept') }));
  const pid = readPid(join(dir, 'kept.pid'));
  const file = join(dir, 'mcp_servers.json');
  const seq = host!.events().at(-1)!.seq;
  renameSync(file, `${file}~`);
  await new Promise((resolve) => setTimeout(resolve, 150));
  copyFileSync(`${file}~`, file);
  rmSync(`${file}~`);
  await applySentinelEdit(dir);
  expect(host!.events(seq).filter((event) => !aboutSentinel(event))).toEqual([]);
  expect(readPid(join(dir, 'kept.pid'))).toBe(pid);
});

test('a file removed for good removes its servers', async () => {
  const dir = await startWith((d) => ({ gone: healthy(d, 'gone') }));
  rmSync(join(dir, 'mcp_servers.json'));
  await expect.poll(() => host!.server('gone'), { timeout: 20_000 }).toBeUndefined();
});

test('servers added and removed by hand start and stop', async () => {
  const dir = await startWith((d) => ({ keep: healthy(d, 'keep'), drop: healthy(d, 'drop') }));
  const dropped = readPid(join(dir, 'drop.pid'));
  editFile(dir, (servers) => {
    delete servers['drop'];
    servers['fresh'] = healthy(dir, 'fresh');
  });
  await untilState(host!, 'fresh', 'ready');
  await expect.poll(() => host!.server('drop'), { timeout: 20_000 }).toBeUndefined();
  expect(isAlive(dropped)).toBe(false);
  expect(host!.status().map((view) => view.name).sort()).toEqual(['fresh', 'keep']);
});

test('an entry broken by hand is skipped with a warning; its running server is left alone', async () => {
  const warnings: string[] = [];
  const dir = await startWith((d) => ({ typo: healthy(d, 'typo') }), warnings);
  const pid = readPid(join(dir, 'typo.pid'));
  editFile(dir, (servers) => {
    servers['typo']!['timeout_seconds'] = 'sixty';
  });
  await expect.poll(() => warnings.join('\n'), { timeout: 20_000 }).toContain('typo');
  await applySentinelEdit(dir);
  expect(host!.server('typo')?.state).toBe('ready');
  expect(readPid(join(dir, 'typo.pid'))).toBe(pid);
  // A change of it through management would replace the user's text: refused, the file as they left it.
  const edited = readFileSync(join(dir, 'mcp_servers.json'), 'utf8');
  const refused = await host!.updateServer('typo', { call_timeout_seconds: 30 }).then(() => null, (err: unknown) => err);
  expect(refused).toBeInstanceOf(ConfigEntryInvalidError);
  expect((refused as Error).message).toBe(
    'refusing to change server "typo": its entry in the file does not validate (servers.typo.timeout_seconds: expected number, received string); fix it in the file, or remove the server',
  );
  // Its field is the one that fails (the API's `field`), not the server.
  expect((refused as ConfigEntryInvalidError).field).toBe('servers.typo.timeout_seconds');
  expect(readFileSync(join(dir, 'mcp_servers.json'), 'utf8')).toBe(edited);
  expect(readPid(join(dir, 'typo.pid'))).toBe(pid);
  // Removing it deletes it: the server stops and its entry leaves the file, invalid as it was.
  await host!.removeServer('typo');
  expect(host!.server('typo')).toBeUndefined();
  expect(isAlive(pid)).toBe(false);
  expect(Object.keys(readConfigFile(dir).servers)).not.toContain('typo');
});

test('an entry that does not validate at start has no server, but is refused a change and can be removed', async () => {
  const warnings: string[] = [];
  const dir = await startWith((d) => ({ keep: healthy(d, 'keep'), typo: { ...healthy(d, 'typo'), timout_seconds: 5 } }), warnings);
  expect(host!.server('typo')).toBeUndefined();
  const written = readFileSync(join(dir, 'mcp_servers.json'), 'utf8');
  const refused = await host!.updateServer('typo', { timeout_seconds: 5 }).then(() => null, (err: unknown) => err);
  expect(refused).toBeInstanceOf(ConfigEntryInvalidError);
  expect((refused as Error).message).toContain('servers.typo.timout_seconds: unknown field');
  expect(readFileSync(join(dir, 'mcp_servers.json'), 'utf8')).toBe(written);
  await expect(host!.restartServer('typo')).rejects.toThrow('no server named "typo"');
  await host!.removeServer('typo');
  expect(Object.keys(readConfigFile(dir).servers)).toEqual(['keep']);
  // The other entry is kept as written, byte for byte.
  expect(readFileSync(join(dir, 'mcp_servers.json'), 'utf8')).toContain(JSON.stringify(healthy(dir, 'keep').command).slice(1, 20));
  await expect(host!.removeServer('typo')).rejects.toThrow('no server named "typo"');
  expect(host!.server('keep')?.state).toBe('ready');
});

test('a broken edit is reported, ignored and never overwritten', async () => {
  const warnings: string[] = [];
  const dir = await startWith((d) => ({ s: healthy(d, 's') }), warnings);
  const pid = readPid(join(dir, 's.pid'));
  const broken = '{ "servers": { "s": { "type": "local", ';
  writeFileSync(join(dir, 'mcp_servers.json'), broken);
  await expect
    .poll(() => warnings.join('\n'), { timeout: 20_000 })
    .toContain('that does not parse (invalid JSON: line 1 column 40: expected a double-quoted property name); the running servers are unchanged');
  expect(warnings.filter((line) => /could not apply|running with no servers/.test(line))).toEqual([]);
  expect(host!.server('s')?.state).toBe('ready');
  expect(readPid(join(dir, 's.pid'))).toBe(pid);
  await expect(host!.addServer('other', healthy(dir, 'other'))).rejects.toBeInstanceOf(ConfigFileBrokenError);
  expect(host!.server('other')).toBeUndefined();
  // A removal or a change could not be written either: refused before the server is touched.
  await expect(host!.removeServer('s')).rejects.toBeInstanceOf(ConfigFileBrokenError);
  await expect(host!.updateServer('s', { timeout_seconds: 9 })).rejects.toBeInstanceOf(ConfigFileBrokenError);
  expect(host!.server('s')?.state).toBe('ready');
  expect(readPid(join(dir, 's.pid'))).toBe(pid);
  expect(readFileSync(join(dir, 'mcp_servers.json'), 'utf8')).toBe(broken);
  // A restart writes nothing: it goes ahead on the config the server runs.
  expect((await host!.restartServer('s')).state).toBe('ready');
});

test('during startup, hand edits wait for their turn in the queue, in file order', async () => {
  const dir = stateDirWith({});
  const pid = (name: string) => join(dir, `${name}.pid`);
  const started = (name: string) => existsSync(pid(name));
  writeFileSync(
    join(dir, 'mcp_servers.json'),
    JSON.stringify({
      servers: {
        a: healthy(dir, 'a'),
        // Holds the queue while the edits below land (its timeout is never reached: the test ends its process).
        b: { type: 'local', command: fixtureCommand('hang-on-init'), env: { FIXTURE_PID_FILE: pid('b') }, timeout_seconds: 60 },
        c: healthy(dir, 'c'),
      },
    }),
  );
  host = createMcpHost({ stateDir: dir, logger: { info: () => {}, warn: () => {} } });
  await host.start();
  await untilState(host, 'a', 'ready');
  await expect.poll(() => started('b'), { timeout: 20_000 }).toBe(true);
  const firstA = readPid(pid('a'));

  editFile(dir, (servers) => {
    // A started server whose connection changes, a queued one, and a new one.
    servers['a']!['env'] = { FIXTURE_PID_FILE: pid('a2') };
    servers['c']!['env'] = { FIXTURE_PID_FILE: pid('c2') };
    servers['d'] = healthy(dir, 'd');
  });
  await expect.poll(() => host!.server('d')?.state, { timeout: 20_000 }).toBe('pending');
  // Nothing connects ahead of the server the queue is on.
  expect(host.server('b')?.state).toBe('pending');
  expect([started('a2'), started('c2'), started('d')]).toEqual([false, false, false]);

  // Now let the queue move on: b's process ends, so its connect fails (error) and c is dequeued.
  process.kill(readPid(pid('b')), 'SIGKILL');
  await host.settled();
  for (const name of ['a', 'c', 'd']) await untilState(host, name, 'ready');
  expect(isAlive(firstA)).toBe(false);
  // The queued server started once, with the edit its dequeue re-read.
  expect(started('c')).toBe(false);
  const readyAt = (name: string) =>
    host!.events().findLast((event) => event.type === 'server.transitioned' && event.server === name && event.to === 'ready')!.seq;
  const bGaveUp = host.events().find((event) => event.type === 'server.transitioned' && event.server === 'b' && event.to === 'error')!.seq;
  // File order for what was queued: c, then the edited a and the added d at the end.
  expect(readyAt('c')).toBeGreaterThan(bGaveUp);
  expect(readyAt('a')).toBeGreaterThan(readyAt('c'));
  expect(readyAt('d')).toBeGreaterThan(readyAt('a'));
});

test('a change whose server was removed while it applied is refused as not found, and does not bring the server back', async () => {
  const dir = stateDirWith({ h: healthy(stateDirWith({}), 'h') });
  // No watcher: the removal below stays a hand edit the host was not told of, as another worker's delete is until its notification.
  host = createMcpHost({ stateDir: dir, watchConfig: false, logger: { info() {}, warn() {} } });
  await host.start();
  await untilState(host, 'h', 'ready');
  // Removed once the change is being applied (the server left ready for its restart), before it is written.
  const removed = new Promise<void>((resolve) => {
    const unsubscribe = host!.subscribe((event) => {
      if (event.type === 'server.transitioned' && event.server === 'h' && event.from === 'ready') {
        unsubscribe();
        editFile(dir, (servers) => delete servers.h);
        resolve();
      }
    });
  });
  const changed = await host.updateServer('h', { timeout_seconds: 33 }).then(
    () => new Error('the change was taken'),
    (err: unknown) => err,
  );
  await removed;
  expect(changed).toMatchObject({ name: 'NotFoundError', message: 'no server named "h"' });
  expect(readConfigFile(dir).servers).toEqual({});
});
