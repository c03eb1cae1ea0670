import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { ConflictError, HostNotRunningError, NotFoundError, StartFailedError } from '../../src/errors.js';
import { fixtureCommand } from '../fixtures/index.js';
import { readPid } from '../support/processes.js';
import { allGone, isAlive, readConfigFile, stateDirWith, untilState } from './helpers.js';
import { storedJournalLines } from '../support/journal-files.js';

const EVERYTHING = [process.execPath, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];

let host: McpHost | undefined;
afterEach(async () => {
  await host?.shutdown();
  host = undefined;
});

function pidFile(dir: string, name: string): string {
  return join(dir, `${name}.pid`);
}

function healthy(dir: string, name: string, extra: Record<string, unknown> = {}) {
  return { type: 'local', command: fixtureCommand('healthy'), env: { FIXTURE_PID_FILE: pidFile(dir, name) }, ...extra };
}

describe('a host on real stdio servers', () => {
  test('server-everything becomes ready and its echo tool answers through callTool', async () => {
    const dir = stateDirWith({ everything: { type: 'local', command: EVERYTHING } });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'everything', 'ready');
    const names = host.tools().map((tool) => tool.name);
    expect(names).toContain('everything__echo');
    const result = await host.callTool('everything__echo', { message: 'hello fleet' });
    expect(result.details).toMatchObject({ is_error: false, server: 'everything', tool: 'echo' });
    expect(result.content[0]).toEqual({ type: 'text', text: 'Echo: hello fleet' });
    const view = host.server('everything')!;
    expect(view).toMatchObject({ state: 'ready', ready: true, error: null, tool_count: names.length });
  });

  test('start() resolves before any server is ready', async () => {
    const dir = stateDirWith({
      slow: { type: 'local', command: fixtureCommand('slow-start'), env: { FIXTURE_DELAY_MS: '1500' } },
    });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    expect(host.server('slow')?.state).toBe('pending');
    expect(host.tools()).toEqual([]);
    await untilState(host, 'slow', 'ready');
  });

  test('an unknown tool and a tool of a server that is not ready give is_error results, not throws', async () => {
    const dir = stateDirWith({ a: healthy(stateDirWith({}), 'a'), crashy: { type: 'local', command: fixtureCommand('crash-mid-call'), reconnect: { max_attempts: 0 } } });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'crashy', 'ready');
    const unknown = await host.callTool('nope__nothing', {});
    expect(unknown.details.is_error).toBe(true);
    expect(unknown.content[0]).toMatchObject({ text: expect.stringContaining('unknown tool "nope__nothing"') });
    // Plain JavaScript may pass a model's made-up name that is not a string at all.
    for (const name of [undefined, null, 42]) {
      const odd = await host.callTool(name as unknown as string, {});
      expect(odd.details.is_error).toBe(true);
      expect(odd.content[0]).toMatchObject({ text: `unknown tool ${JSON.stringify(name) ?? 'undefined'}` });
    }
    // And options: null is none; a signal that is not one is said so.
    await untilState(host, 'a', 'ready');
    const nullOptions = await host.callTool('a__echo', { text: 'hi' }, null as never);
    expect(nullOptions.details.is_error, JSON.stringify(nullOptions)).toBe(false);
    // A model may send null or no arguments: each tool, the meta tools too, answers is_error saying what is missing.
    for (const args of [null, undefined]) {
      for (const name of ['search_tools', 'a__echo']) {
        const answered = await host.callTool(name, args as never);
        expect(answered.details.is_error, `${name} ${String(args)}: ${JSON.stringify(answered)}`).toBe(true);
      }
      expect((await host.callTool('search_tools', args as never)).content[0]).toMatchObject({ text: expect.stringContaining('search_tools needs a "query"') });
    }
    const badSignal = await host.callTool('a__echo', { text: 'hi' }, { signal: 5 as never });
    expect(badSignal).toMatchObject({ details: { is_error: true }, content: [{ text: 'callTool: options.signal must be an AbortSignal' }] });

    const crashed = await host.callTool('crashy__crash', {});
    expect(crashed.details.is_error).toBe(true);
    await untilState(host, 'crashy', 'error');
    expect(host.server('crashy')).toMatchObject({ error_kind: 'transport_closed', tool_count: 0 });
    const after = await host.callTool('crashy__crash', {});
    expect(after.details.is_error).toBe(true);
    expect(after.content[0]).toMatchObject({
      text: expect.stringMatching(/server "crashy" is not ready \(state: error — process exited with code 7/),
    });
  });

  test('shutdown stops every child, including one still connecting, and unregisters all tools', async () => {
    const dir = stateDirWith({});
    const servers = {
      a: healthy(dir, 'a'),
      b: healthy(dir, 'b'),
      hang: {
        type: 'local',
        command: fixtureCommand('hang-on-init'),
        env: { FIXTURE_PID_FILE: pidFile(dir, 'hang') },
        timeout_seconds: 30,
      },
      queued: healthy(dir, 'queued'),
    };
    const configured = stateDirWith(servers);
    host = createMcpHost({ stateDir: configured });
    await host.start();
    await untilState(host, 'b', 'ready');
    // `hang` is connecting now and `queued` waits behind it without a process.
    await expect.poll(() => statSync(pidFile(dir, 'hang'), { throwIfNoEntry: false }), { timeout: 20_000 }).toBeTruthy();
    const pids = ['a', 'b', 'hang'].map((name) => readPid(pidFile(dir, name)));
    expect(host.server('queued')?.state).toBe('pending');
    expect(host.tools().length).toBeGreaterThan(0);

    await host.shutdown();
    expect(await allGone(pids, 100)).toBe(true);
    expect(host.tools()).toEqual([]);
    expect(host.status().map((view) => view.state)).toEqual(['stopped', 'stopped', 'stopped', 'stopped']);
    expect(statSync(pidFile(dir, 'queued'), { throwIfNoEntry: false })).toBeUndefined();
  });
});

describe('management is all-or-nothing', () => {
  test('addServer starts and persists a server, owner-only', async () => {
    const dir = stateDirWith({});
    host = createMcpHost({ stateDir: dir });
    await host.start();
    const view = await host.addServer('fresh', { type: 'local', command: fixtureCommand('healthy'), env: { TOKEN: 'canary-add-0123456789' } });
    expect(view).toMatchObject({ name: 'fresh', state: 'ready', ready: true });
    expect(view.config).toHaveProperty('env', { TOKEN: { has_value: true, masked: '••••6789' } });
    expect(readConfigFile(dir).servers['fresh']).toMatchObject({ env: { TOKEN: 'canary-add-0123456789' } });
    expect(statSync(join(dir, 'mcp_servers.json')).mode & 0o777).toBe(0o600);
    await expect(host.addServer('fresh', { type: 'local', command: ['x'] })).rejects.toBeInstanceOf(ConflictError);
  });

  test('a server that fails to start is not persisted and leaves no trace in the status', async () => {
    const dir = stateDirWith({ keep: healthy(dir0(), 'keep') });
    const before = readFileSync(join(dir, 'mcp_servers.json'));
    host = createMcpHost({ stateDir: dir });
    await host.start();
    const failure = host.addServer('broken', { type: 'local', command: fixtureCommand('crash-on-start') });
    await expect(failure).rejects.toBeInstanceOf(StartFailedError);
    await expect(failure).rejects.toMatchObject({ kind: 'spawn_failed', message: expect.stringContaining('code 3') });
    expect(readFileSync(join(dir, 'mcp_servers.json'))).toEqual(before);
    expect(host.server('broken')).toBeUndefined();
  });

  test('updateServer restarts on the merged config and persists it; secrets not sent are preserved', async () => {
    const dir = stateDirWith({ s: { type: 'local', command: fixtureCommand('healthy'), env: { KEEP: 'keep-value', DROP: 'drop-value' } } });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 's', 'ready');
    const view = await host.updateServer('s', { env: { DROP: null, NEW: 'new-value' }, call_timeout_seconds: 5 });
    expect(view.state).toBe('ready');
    expect(readConfigFile(dir).servers['s']).toMatchObject({
      env: { KEEP: 'keep-value', NEW: 'new-value' },
      call_timeout_seconds: 5,
    });
    expect(readConfigFile(dir).servers['s']?.['env']).not.toHaveProperty('DROP');
    // The child really runs on the new config.
    const probe = await host.callTool('s__env', { name: 'NEW' });
    expect(probe.content[0]).toEqual({ type: 'text', text: JSON.stringify({ set: true, length: 'new-value'.length }) });
  });

  test('updateServer writes into a nested object what the patch set, not the defaults of its other fields', async () => {
    // `spelled` holds its nested defaults as an older write left them: unchanged, it keeps them.
    const spelled = { type: 'local', command: fixtureCommand('healthy'), tools: { include: null, exclude: [], always_load: [] }, reconnect: { max_attempts: 5, initial_delay_seconds: 1, max_delay_seconds: 30 } };
    const dir = stateDirWith({ h: { type: 'local', command: fixtureCommand('healthy') }, spelled });
    const spelledText = JSON.stringify(spelled, null, 2).replaceAll('\n', '\n    ');
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await host.settled();
    await host.updateServer('h', { tools: { approval: {} } });
    // An empty approval map is kept: the config it reads back as has `approval: {}`, not an absent one.
    expect(readConfigFile(dir).servers['h']).toEqual({ type: 'local', command: fixtureCommand('healthy'), tools: { approval: {} } });
    await host.updateServer('h', { reconnect: { max_attempts: 2 }, tools: { exclude: ['echo'] } });
    expect(readConfigFile(dir).servers['h']).toEqual({
      type: 'local',
      command: fixtureCommand('healthy'),
      tools: { exclude: ['echo'], approval: {} },
      reconnect: { max_attempts: 2 },
    });
    expect(readFileSync(join(dir, 'mcp_servers.json'), 'utf8')).toContain(`"spelled": ${spelledText}`);
    // A change of `spelled` writes it in short form, nested objects included.
    await host.updateServer('spelled', { reconnect: { max_delay_seconds: 10 } });
    expect(readConfigFile(dir).servers['spelled']).toEqual({ type: 'local', command: fixtureCommand('healthy'), reconnect: { max_delay_seconds: 10 } });
    expect(host.server('h')?.config.tools).toMatchObject({ include: null, exclude: ['echo'], always_load: [], approval: {} });
  });

  test('a PATCH whose restart fails leaves the file byte-for-byte and brings the old config back', async () => {
    const dir = stateDirWith({ s: { type: 'local', command: fixtureCommand('healthy') } });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 's', 'ready');
    const before = readFileSync(join(dir, 'mcp_servers.json'));
    await expect(host.updateServer('s', { command: fixtureCommand('crash-on-start') })).rejects.toMatchObject({
      name: 'StartFailedError',
      kind: 'spawn_failed',
    });
    expect(readFileSync(join(dir, 'mcp_servers.json'))).toEqual(before);
    await untilState(host, 's', 'ready');
    expect((await host.callTool('s__echo', { text: 'back' })).content[0]).toEqual({ type: 'text', text: 'back' });
  });

  test('removeServer stops the child, drops its tools and the entry', async () => {
    const pids = dir0();
    const dir = stateDirWith({ gone: healthy(pids, 'gone'), stays: healthy(pids, 'stays') });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'stays', 'ready');
    const pid = readPid(pidFile(pids, 'gone'));
    await host.removeServer('gone');
    // removeServer resolves only once the child has exited.
    expect(isAlive(pid)).toBe(false);
    expect(host.tools().some((tool) => tool.server === 'gone')).toBe(false);
    expect(host.server('gone')).toBeUndefined();
    expect(Object.keys(readConfigFile(dir).servers)).toEqual(['stays']);
    await expect(host.removeServer('gone')).rejects.toBeInstanceOf(NotFoundError);
  });

  test('restartServer replaces the process and re-reads the persisted entry', async () => {
    const pids = dir0();
    const dir = stateDirWith({ r: healthy(pids, 'r') });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'r', 'ready');
    const first = readPid(pidFile(pids, 'r'));
    const view = await host.restartServer('r');
    expect(view.state).toBe('ready');
    const second = readPid(pidFile(pids, 'r'));
    expect(second).not.toBe(first);
    // The old process was gone before the new one started: `closing` is left only then.
    expect(isAlive(first)).toBe(false);
  });

  test('a restart is an event to the same actor: ready → pending → ready, no new server.configured', async () => {
    const pids = dir0();
    host = createMcpHost({ stateDir: stateDirWith({ r: healthy(pids, 'r') }) });
    await host.start();
    await untilState(host, 'r', 'ready');
    const before = host.events().at(-1)!.seq;
    await host.restartServer('r');
    const after = host.events(before).filter((event) => 'server' in event && event.server === 'r');
    expect(after.filter((event) => event.type === 'server.configured')).toEqual([]);
    const moves = after.flatMap((event) => (event.type === 'server.transitioned' ? [[event.actor, event.from, event.to]] : []));
    const actor = host.events().find((event) => event.type === 'server.configured' && event.server === 'r')!;
    expect(moves).toEqual([
      [(actor as { actor: string }).actor, 'ready', 'pending'],
      [(actor as { actor: string }).actor, 'pending', 'ready'],
    ]);
  });

  test('a PATCH of enabled is server.disable / server.enable on the same actor', async () => {
    const pids = dir0();
    host = createMcpHost({ stateDir: stateDirWith({ r: healthy(pids, 'r') }) });
    await host.start();
    await untilState(host, 'r', 'ready');
    const first = readPid(pidFile(pids, 'r'));
    expect((await host.updateServer('r', { enabled: false })).state).toBe('disabled');
    expect(isAlive(first)).toBe(false);
    expect(host.tools().filter((tool) => tool.server === 'r')).toEqual([]);
    expect((await host.updateServer('r', { enabled: true })).state).toBe('ready');
    const actors = new Set(host.events().flatMap((event) => (event.type === 'server.transitioned' && event.server === 'r' ? [event.actor] : [])));
    expect(actors.size).toBe(1);
    // Enabled again, the entry is as it was written: `enabled` holds its default, so it is left out.
    expect(readConfigFile(host.stateDir).servers['r']).toEqual(healthy(pids, 'r'));
  });
});

describe('shutdown is final', () => {
  test('a server stopping slowly is not brought back by a restart or a PATCH sent meanwhile; both are refused with 503-kind errors', async () => {
    const dir = stateDirWith({ s: { type: 'local', command: fixtureCommand('stubborn') } });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 's', 'ready');
    const before = readConfigFile(dir);
    const stopping = host.shutdown();
    // `stubborn` ignores SIGTERM: it sits in `closing` (shown as stopped) for the kill grace.
    await expect(host.restartServer('s')).rejects.toBeInstanceOf(HostNotRunningError);
    await expect(host.updateServer('s', { timeout_seconds: 9 })).rejects.toBeInstanceOf(HostNotRunningError);
    await stopping;
    await expect(host.start()).rejects.toBeInstanceOf(HostNotRunningError);
    expect(host.server('s')?.state).toBe('stopped');
    const moves = host.events().flatMap((event) => (event.type === 'server.transitioned' && event.server === 's' ? [event.to] : []));
    expect(moves).toEqual(['pending', 'ready', 'stopped']);
    expect(readConfigFile(dir)).toEqual(before);
  });
});

describe('views over the journal', () => {
  test('two servers whose tool names collide: last registered wins and the loss is visible', async () => {
    const dir = stateDirWith({});
    host = createMcpHost({ stateDir: dir });
    await host.start();
    // Names are capped at 64 by shortening the server part: these two share their first 58 characters.
    const first = `${'s'.repeat(60)}_1`;
    const second = `${'s'.repeat(60)}_2`;
    await host.addServer(first, { type: 'local', command: fixtureCommand('healthy'), tools: { include: ['echo'], exclude: [] } });
    await host.addServer(second, { type: 'local', command: fixtureCommand('healthy'), tools: { include: ['echo'], exclude: [] } });
    const name = `${'s'.repeat(58)}__echo`;
    expect(host.tools().map((tool) => tool.name)).toEqual([name]);
    expect(host.tools()[0]?.server).toBe(second);
    expect(host.tool(name)).toBe(host.tools()[0]);
    expect(host.tool(`${name}_no_such`)).toBeUndefined();
    expect(host.server(first)?.shadowed_tools).toEqual([name]);
    // Its count is of the tools registered under its name: none, as a forced re-list answers too.
    expect(host.server(first)?.tool_count).toBe(0);
    expect(host.server(second)?.tool_count).toBe(1);
    expect((await host.refreshCatalog(first)).tools).toBe(0);
    expect(host.events().find((event) => event.type === 'tool.shadowed')).toMatchObject({
      server: second,
      shadowed_server: first,
      tool: name,
    });
    // The winner goes away: the loser's tool is visible again, in the registry and the status.
    await host.removeServer(second);
    expect(host.tools().map((tool) => tool.server)).toEqual([first]);
    expect(host.server(first)?.shadowed_tools).toEqual([]);
    expect(host.server(first)?.tool_count).toBe(1);
    expect((await host.refreshCatalog(first)).tools).toBe(1);
  });

  test('the journal is stored under <state_dir>/journal/ and carries no secret', async () => {
    const canary = 'canary-journal-5f1e2d3c4b';
    const dir = stateDirWith({
      s: { type: 'local', command: fixtureCommand('healthy'), env: { SECRET: canary } },
      f: { type: 'local', command: fixtureCommand('stderr-env'), env: { SECRET: canary } },
    });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 's', 'ready');
    await untilState(host, 'f', 'error');
    expect(host.server('f')?.error).toMatch(/SECRET=\S/);
    expect(host.server('f')?.error).not.toContain(canary);
    expect(host.events(host.events().at(-2)!.seq)).toHaveLength(1);
    // Stored asynchronously: once shut down, every event is on disk, in seq order.
    await host.shutdown();
    const lines = storedJournalLines(dir);
    expect(lines.map((line) => JSON.parse(line))).toEqual(host.events());
    expect(lines.join('\n')).not.toContain(canary);
  });

  test('catalog lists tools with both names; the diff shows hand edits by field, secrets as paths only', async () => {
    const dir = stateDirWith({ s: { type: 'local', command: fixtureCommand('healthy'), env: { K: 'old-secret-value' } } });
    // Not watching: a watching host would apply the edit, and the file would match again.
    host = createMcpHost({ stateDir: dir, watchConfig: false });
    await host.start();
    await untilState(host, 's', 'ready');
    const [entry] = host.catalog();
    expect(entry?.tools).toContainEqual(expect.objectContaining({ name: 's__echo', original: 'echo' }));
    expect(JSON.stringify(host.catalog())).not.toContain('old-secret-value');

    const file = readConfigFile(dir);
    file.servers['s'] = { ...file.servers['s'], env: { K: 'new-secret-value' }, timeout_seconds: 9 };
    file.servers['t'] = { type: 'local', command: ['true'] };
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify(file));
    const diff = await host.catalogDiff();
    expect(diff).toEqual({ added: ['t'], removed: [], changed: [{ name: 's', fields: ['env.K', 'timeout_seconds'] }], invalid: [] });
    expect(JSON.stringify(diff)).not.toMatch(/secret-value/);
  });
});

function dir0(): string {
  return stateDirWith({});
}
