import { spawn } from 'node:child_process';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ServerConfig, ServerConfigInput } from '../../src/config/schema.js';
import { ConfigFileBrokenError, createConfigStore, serializeServers } from '../../src/config/store.js';
import { ConfigError } from '../../src/errors.js';
import { resolveStateDir } from '../../src/config/paths.js';
import { modeOf, recordingLogger, removeDirs, tempDir, tempFiles } from './helpers.js';

const dirs: string[] = [];
let dir: string;
let file: string;

beforeEach(async () => {
  dir = await tempDir();
  dirs.push(dir);
  file = path.join(dir, 'mcp_servers.json');
});
afterEach(() => removeDirs(dirs));

function local(command: string, extra: Partial<ServerConfigInput> = {}): ServerConfigInput {
  return { type: 'local', command: [command], ...extra } as ServerConfigInput;
}

function storeFor(stateDir = dir) {
  const logger = recordingLogger();
  return { store: createConfigStore({ stateDir: () => stateDir, logger }), logger };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('load', () => {
  it('gives no servers and exactly one warning for a missing file, logged once', async () => {
    const { store, logger } = storeFor();
    const loaded = await store.load();
    expect(loaded).toEqual({ servers: [], warnings: [expect.stringContaining(file)], broken: null, invalid: [], versions: {} });
    await store.load();
    await store.load();
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]).toContain('no config file');
  });

  it.each([
    ['bad JSON', '{"servers": {"a": ', 'invalid JSON: line 1 column 19: expected a value, found end of file'],
    ['an array', '[]', 'not a {"servers": {...}} document: expected object, received array'],
    ['an unknown top-level field', '{"servers": {}, "extra": true}', 'extra: unknown field'],
    ['servers not an object', '{"servers": "none"}', 'servers: expected record, received string'],
  ])('treats %s as broken: no servers, one warning, the problem reported', async (_what, text, problem) => {
    await writeFile(file, text);
    const { store, logger } = storeFor();
    const loaded = await store.load();
    expect(loaded.servers).toEqual([]);
    expect(loaded.broken).toEqual({ file, problem: expect.stringContaining(problem) });
    expect(loaded.warnings).toHaveLength(1);
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]).toContain(file);
    expect(logger.lines[0]).toContain(problem);
  });

  it('skips one invalid entry with a warning naming server and field, keeping the others in order', async () => {
    // Written by hand: JSON.stringify would move "10" first, as any JS object does.
    await writeFile(
      file,
      `{"servers": {
        "zeta": {"type": "local", "command": ["z"]},
        "10": {"type": "local", "command": ["ten"]},
        "broken": {"type": "local", "command": ["x"], "max_concurrent_calls": 0},
        "alpha": {"type": "local", "command": ["a"]}
      }}`,
    );
    const { store, logger } = storeFor();
    const loaded = await store.load();
    expect(loaded.servers.map(([name]) => name)).toEqual(['zeta', '10', 'alpha']);
    expect(loaded.warnings).toEqual([
      'skipping server "broken": servers.broken.max_concurrent_calls: must be at least 1',
    ]);
    expect(logger.lines).toEqual(loaded.warnings);
    expect(loaded.broken).toBeNull();
    // Skipped, but still the user's: a reader must not take it for a deletion.
    expect(loaded.invalid.map((entry) => entry.name)).toEqual(['broken']);
    // With the path of its first problem, for a refused change's `field`.
    expect(loaded.invalid[0]?.field).toBe('servers.broken.max_concurrent_calls');
  });

  it('warns of a server name written twice, using the last entry as JSON does', async () => {
    await writeFile(
      file,
      `{"servers": {
        "twice": {"type": "local", "command": ["first"]},
        "other": {"type": "local", "command": ["o"]},
        "twice": {"type": "local", "command": ["second"]}
      }}`,
    );
    const { store, logger } = storeFor();
    const loaded = await store.load();
    expect(loaded.servers.map(([name, config]) => [name, config.type === 'local' ? config.command : null])).toEqual([
      ['twice', ['second']],
      ['other', ['o']],
    ]);
    expect(loaded.warnings).toEqual(['server "twice" is written more than once; the last entry is used, and the next write keeps only it']);
    expect(logger.lines).toEqual(loaded.warnings);
    expect(loaded.broken).toBeNull();
  });

  it('logs a warning again once it went away and came back', async () => {
    const { store, logger } = storeFor();
    await store.load();
    await store.save([]);
    await store.load();
    await writeFile(file, 'nope');
    await store.load();
    await writeFile(file, '{}');
    await store.load();
    await writeFile(file, 'nope');
    await store.load();
    expect(logger.lines.map((l) => l.split(' ')[0])).toEqual(['no', 'config', 'config']);
  });

  it('re-reads an unchanged file to the same versions, each load its own record, and follows a hand edit', async () => {
    await writeFile(file, JSON.stringify({ servers: { a: local('a'), b: local('b') } }));
    const { store } = storeFor();
    const first = await store.load();
    const second = await store.load();
    expect(second.versions).toEqual(first.versions);
    // Every load answers a record of its own: changing one changes no later answer.
    expect(second.versions).not.toBe(first.versions);
    first.versions.a = 999;
    expect((await store.load()).versions.a).toBe(second.versions.a);
    expect(store.stored('b')).toMatchObject({ version: second.versions.b, config: { command: ['b'] } });
    // A hand edit of one entry: a new version for it alone, and stored() says so.
    await writeFile(file, JSON.stringify({ servers: { a: local('a'), b: local('b2') } }));
    const edited = await store.load();
    expect(edited.versions.a).toBe(second.versions.a);
    expect(edited.versions.b).toBeGreaterThan(second.versions.b!);
    expect(store.stored('b')).toMatchObject({ version: edited.versions.b, config: { command: ['b2'] } });
    // Back to the text read before: the version of the config it holds now, not the one remembered for that text.
    await writeFile(file, JSON.stringify({ servers: { a: local('a'), b: local('b') } }));
    const back = await store.load();
    expect(back.versions.b).toBeGreaterThan(edited.versions.b!);
    expect(store.stored('b')).toMatchObject({ version: back.versions.b, config: { command: ['b'] } });
  });

  it('follows the state dir function on every call', async () => {
    const other = await tempDir();
    dirs.push(other);
    let current = dir;
    const store = createConfigStore({ stateDir: () => current, logger: recordingLogger() });
    await store.save([['one', local('x')]]);
    current = other;
    expect(store.file()).toBe(path.join(other, 'mcp_servers.json'));
    expect((await store.load()).servers).toEqual([]);
    current = dir;
    expect((await store.load()).servers.map(([n]) => n)).toEqual(['one']);
  });
});

describe('with resolveStateDir as the state dir', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('switches profile mid-run without a new store', async () => {
    vi.stubEnv('MCP_FLEET_STATE_DIR', dir);
    vi.stubEnv('MCP_FLEET_PROFILE', 'work');
    const store = createConfigStore({ stateDir: () => resolveStateDir(), logger: recordingLogger() });
    await store.save([['work_server', local('w')]]);
    vi.stubEnv('MCP_FLEET_PROFILE', 'home');
    expect((await store.load()).servers).toEqual([]);
    await store.save([['home_server', local('h')]]);
    vi.stubEnv('MCP_FLEET_PROFILE', 'work');
    expect((await store.load()).servers.map(([n]) => n)).toEqual(['work_server']);
    expect(store.file()).toBe(path.join(dir, 'profiles', 'work', 'mcp_servers.json'));
  });
});

describe('a broken file', () => {
  const text = '{"servers": {"mine": {"type": "local", "command": ["x"],}}}';

  it('is never overwritten: save and update are refused naming file and problem, bytes unchanged', async () => {
    await writeFile(file, text);
    const before = await readFile(file);
    const { store } = storeFor();
    await store.load();
    let mutatorRan = false;
    for (const attempt of [
      () => store.save([['a', local('x')]]),
      () =>
        store.update((servers) => {
          mutatorRan = true;
          return servers;
        }),
    ]) {
      const err = await rejection(attempt());
      expect(err).toBeInstanceOf(ConfigError);
      expect(err).toBeInstanceOf(ConfigFileBrokenError);
      expect(err.message).toContain(file);
      expect(err.message).toContain('invalid JSON: line 1 column 57: expected a double-quoted property name');
    }
    expect(mutatorRan).toBe(false);
    expect(await readFile(file)).toEqual(before);
    expect(await tempFiles(dir)).toEqual([]);
  });

  it('unblocks writes once fixed by hand, re-checked on each write', async () => {
    await writeFile(file, text);
    const { store } = storeFor();
    expect((await store.load()).broken).not.toBeNull();
    await writeFile(file, text.replace(',}', '}'));
    await store.update((servers) => ({ ...servers, added: local('y') as ServerConfig }));
    expect((await store.load()).servers.map(([n]) => n)).toEqual(['mine', 'added']);
    // And broken again: refused again, without a load in between.
    await writeFile(file, text);
    await expect(store.save([])).rejects.toBeInstanceOf(ConfigFileBrokenError);
    expect(await readFile(file, 'utf8')).toBe(text);
  });

  it('counts an unreadable path as broken too', async () => {
    await mkdir(file);
    const { store } = storeFor();
    expect((await store.load()).broken).toEqual({ file, problem: 'cannot be read (EISDIR)' });
    await expect(store.save([])).rejects.toBeInstanceOf(ConfigFileBrokenError);
    expect((await stat(file)).isDirectory()).toBe(true);
  });
});

describe('save', () => {
  it('writes pretty JSON in the given order, readable back', async () => {
    const { store } = storeFor();
    await store.save([
      ['zeta', local('z')],
      ['1', local('one', { env: { K: 'v' } })],
    ]);
    const text = await readFile(file, 'utf8');
    expect(text.endsWith('}\n')).toBe(true);
    expect(text).toContain('\n  "servers": {\n    "zeta": {\n      "type": "local",');
    expect(text.indexOf('"zeta"')).toBeLessThan(text.indexOf('"1"'));
    expect((await store.load()).servers.map(([n]) => n)).toEqual(['zeta', '1']);
  });

  it('writes what was given, not the defaults, a nested object\'s included', async () => {
    const { store } = storeFor();
    const given = local('z', { tools: { approval: {} }, reconnect: { max_attempts: 2, initial_delay_seconds: 1 }, call_timeout_seconds: 120 });
    await store.save([['z', given]]);
    const written = JSON.parse(await readFile(file, 'utf8')) as { servers: Record<string, unknown> };
    expect(written.servers.z).toEqual({ type: 'local', command: ['z'], tools: { approval: {} }, reconnect: { max_attempts: 2 } });
    expect(store.stored('z')?.config).toEqual((await store.load()).servers[0]![1]);
  });

  it('formats exactly like JSON.stringify with 2 spaces plus a newline', () => {
    const entries: Array<[string, unknown]> = [
      ['a', { x: [1, { y: 'multi\nline' }], z: {} }],
      ['b', { type: 'local' }],
    ];
    expect(serializeServers(entries)).toBe(`${JSON.stringify({ servers: Object.fromEntries(entries) }, null, 2)}\n`);
    expect(serializeServers([])).toBe(`${JSON.stringify({ servers: {} }, null, 2)}\n`);
  });

  it('accepts a record as well as entries', async () => {
    const { store } = storeFor();
    await store.save({ a: local('x'), b: local('y') });
    expect((await store.load()).servers.map(([n]) => n)).toEqual(['a', 'b']);
  });

  it('creates the file 0600 and a missing state dir 0700', async () => {
    const nested = path.join(dir, 'profiles', 'work');
    const { store } = storeFor(nested);
    await store.save([['a', local('x')]]);
    expect(await modeOf(path.join(nested, 'mcp_servers.json'))).toBe(0o600);
    expect(await modeOf(nested)).toBe(0o700);
    expect(await modeOf(path.join(dir, 'profiles'))).toBe(0o700);
  });

  it('narrows a 0644 file to 0600', async () => {
    await writeFile(file, '{"servers": {}}\n');
    await chmod(file, 0o644);
    expect(await modeOf(file)).toBe(0o644);
    const { store } = storeFor();
    await store.save([['a', local('x')]]);
    expect(await modeOf(file)).toBe(0o600);
  });

  it('leaves no temp file behind', async () => {
    const { store } = storeFor();
    for (let i = 0; i < 5; i++) await store.save([[`s${i}`, local('x')]]);
    expect(await tempFiles(dir)).toEqual([]);
  });

  it('refuses an invalid config without touching the file', async () => {
    const { store } = storeFor();
    await store.save([['a', local('x')]]);
    const before = await readFile(file);
    const err = await rejection(store.save([['a', { type: 'local', command: [] } as ServerConfigInput]]));
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).field).toBe('servers.a.command');
    await expect(store.save([['bad name', local('x')]])).rejects.toThrow('name: must be 1 to 64 characters');
    await expect(store.save([['a', local('x')], ['a', local('y')]])).rejects.toThrow('servers.a: duplicate name');
    expect(await readFile(file)).toEqual(before);
  });

  it('keeps the file whole under concurrent saves: the last one wins entirely', async () => {
    const { store } = storeFor();
    const docs = Array.from({ length: 10 }, (_, i) =>
      Array.from({ length: 20 }, (__, j): [string, ServerConfigInput] => [`d${i}_s${j}`, local(`cmd${i}`)]),
    );
    await Promise.all(docs.map((doc) => store.save(doc)));
    const names = (await store.load()).servers.map(([n]) => n);
    expect(names).toEqual(docs[9]?.map(([n]) => n));
  });

  it('removes temp files of dead writers and leaves those of live ones', async () => {
    const exited = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => exited.once('exit', resolve));
    const alive = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)']);
    try {
      const dead = `.mcp_servers.json.${exited.pid}.0123456789ab.tmp`;
      const live = `.mcp_servers.json.${alive.pid}.0123456789ab.tmp`;
      await writeFile(path.join(dir, dead), 'partial');
      await writeFile(path.join(dir, live), 'partial');
      await storeFor().store.save([]);
      expect(await tempFiles(dir)).toEqual([live]);
    } finally {
      alive.kill();
    }
  });
});

describe('update', () => {
  it('runs 20 parallel read-modify-writes without losing one', async () => {
    const { store } = storeFor();
    const other = createConfigStore({ stateDir: () => dir, logger: recordingLogger() });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? store : other).update(async (servers) => {
          // Yield inside the critical section, so an unserialized update would interleave.
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
          return { ...servers, [`server_${i}`]: local(`cmd${i}`) as ServerConfig };
        }),
      ),
    );
    const names = (await store.load()).servers.map(([n]) => n).sort();
    expect(names).toEqual(Array.from({ length: 20 }, (_, i) => `server_${i}`).sort());
    expect(await tempFiles(dir)).toEqual([]);
  });

  it('hands the mutator a copy, keeps file order and appends new names', async () => {
    await writeFile(
      file,
      '{"servers": {"b": {"type": "local", "command": ["b"]}, "7": {"type": "local", "command": ["7"]}, "a": {"type": "local", "command": ["a"]}}}',
    );
    const { store } = storeFor();
    await store.update((servers) => {
      const b = servers.b;
      if (b?.type !== 'local') throw new Error('expected b');
      b.enabled = false; // changing the argument in place is allowed
      delete servers.a;
      return { ...servers, c: local('c') as ServerConfig };
    });
    const loaded = await store.load();
    expect(loaded.servers.map(([n, c]) => [n, c.enabled])).toEqual([
      ['b', false],
      ['7', true],
      ['c', true],
    ]);
  });

  it('keeps invalid entries verbatim and unchanged entries as written', async () => {
    const invalid = { type: 'local', command: ['x'], timeout_seconds: 'sixty', note: 'hand-written' };
    const minimal = { type: 'local', command: ['keep-me-short'] };
    await writeFile(file, JSON.stringify({ servers: { minimal, invalid, changed: local('old') } }));
    const { store } = storeFor();
    let seen: readonly string[] = [];
    const result = await store.update((servers, info) => {
      seen = info.invalidNames;
      expect(Object.keys(servers)).toEqual(['minimal', 'changed']);
      return { ...servers, changed: local('new') as ServerConfig };
    });
    expect(seen).toEqual(['invalid']);
    expect(result.servers.map(([n]) => n)).toEqual(['minimal', 'changed']);
    const written = JSON.parse(await readFile(file, 'utf8')) as { servers: Record<string, unknown> };
    expect(Object.keys(written.servers)).toEqual(['minimal', 'invalid', 'changed']);
    expect(written.servers.invalid).toEqual(invalid);
    expect(written.servers.minimal).toEqual(minimal);
    // A changed entry is written without the fields that hold their default.
    expect(written.servers.changed).toEqual({ type: 'local', command: ['new'] });
    const again = await store.update((servers) => ({ added: local('z') as ServerConfig, ...servers }));
    // Returned in file order: existing names first, new ones after, whatever the record's order.
    expect(again.servers.map(([n]) => n)).toEqual(['minimal', 'changed', 'added']);
    // The versions the write stored: a new config gets a new one, an unchanged one keeps its own.
    expect(again.versions.added).toBeGreaterThan(result.versions.changed!);
    expect(again.versions.changed).toBe(result.versions.changed);
    expect(again.versions).toEqual((await store.load()).versions);
    // Discarded, the invalid entry goes; the others stay as they were.
    await store.update((servers, info) => {
      info.discard('invalid');
      return servers;
    });
    const after = JSON.parse(await readFile(file, 'utf8')) as { servers: Record<string, unknown> };
    expect(Object.keys(after.servers)).toEqual(['minimal', 'changed', 'added']);
    expect(after.servers.minimal).toEqual(minimal);
  });

  it('an entry named __proto__ (JSON keeps such a key; no server may be named so) is invalid like any other: warned of and kept', async () => {
    await writeFile(file, '{"servers": {"__proto__": {"type":"local","command":["x"]}, "keep": {"type":"local","command":["y"]}}}');
    const { store } = storeFor();
    let seen: readonly string[] = [];
    await store.update((servers, info) => {
      seen = info.invalidNames;
      return { ...servers, added: local('z') as ServerConfig };
    });
    expect(seen).toEqual(['__proto__']);
    const text = await readFile(file, 'utf8');
    expect(text).toContain('"__proto__": {"type":"local","command":["x"]}');
    expect(Object.keys((JSON.parse(text) as { servers: object }).servers)).toEqual(['__proto__', 'keep', 'added']);
  });

  it('writes the entries it leaves unchanged back as the file had them, layout and all; only the changed one is written anew', async () => {
    // Laid out by hand as the bundled demo is: arrays on one line, a BOM, an invalid entry.
    const entry = (name: string, text: string) => `    ${JSON.stringify(name)}: ${text}`;
    const kept = ['{\n      "type": "local",\n      "command": ["node", "a.js", "stdio"]\n    }', '{ "type": "local", "command": ["b"], "env": { "B": "1" } }'];
    const invalid = '{"type": "local", "command": ["x"], "timeout_seconds": "sixty"}';
    const changing = '{\n      "type": "local",\n      "command": ["node", "c.js"]\n    }';
    await writeFile(file, `\uFEFF{\n  "servers": {\n${[entry('a', kept[0]!), entry('b', kept[1]!), entry('bad', invalid), entry('c', changing)].join(',\n')}\n  }\n}\n`);
    const { store } = storeFor();
    await store.update((servers) => ({ ...servers, c: { ...servers.c!, enabled: false } }));
    const text = await readFile(file, 'utf8');
    // The BOM stays, as the rest of the file outside the changed entry does.
    const before = `\uFEFF{\n  "servers": {\n${[entry('a', kept[0]!), entry('b', kept[1]!), entry('bad', invalid)].join(',\n')},\n    "c": {\n`;
    expect(text.startsWith(before)).toBe(true);
    // The changed entry is written anew, without the fields that hold their default.
    const written = JSON.parse(text.slice(1)) as { servers: Record<string, Record<string, unknown>> };
    expect(written.servers.c).toEqual({ type: 'local', command: ['node', 'c.js'], enabled: false });
    expect(text.slice(before.length - '{\n'.length)).toBe(`${JSON.stringify(written.servers.c, null, 2).replaceAll('\n', '\n    ')}\n  }\n}\n`);
    // What it wrote reads back as the same servers, the change made.
    const loaded = await store.load();
    expect(loaded.servers.map(([name, config]) => [name, config.enabled])).toEqual([['a', true], ['b', true], ['c', false]]);
    expect(loaded.invalid.map((entry) => entry.name)).toEqual(['bad']);
  });

  describe('replaces only the text of what changed, the rest of a hand-formatted file byte for byte', () => {
    // Opened on the first line, entries two spaces in, names aligned, no trailing newline.
    const line = (name: string) => `  ${`${JSON.stringify(name)}:`.padEnd(14)}{ "type": "local", "command": [${JSON.stringify(name)}] }`;
    const handMade = (...names: string[]) => `{ "servers": {\n${names.map(line).join(',\n')}\n} }`;
    const pretty = (value: unknown, indent: string) => JSON.stringify(value, null, 2).replaceAll('\n', `\n${indent}`);
    const extra = local('extra') as ServerConfig;
    const withExtra = (text: string) => `${text.slice(0, -'\n} }'.length)},\n  "extra": ${pretty({ type: 'local', command: ['extra'] }, '  ')}\n} }`;
    type Mutator = (servers: Record<string, ServerConfig>) => Record<string, ServerConfig>;
    const without = (name: string): Mutator => (servers) => Object.fromEntries(Object.entries(servers).filter(([n]) => n !== name));
    const cases: Array<[string, string, Mutator, string]> = [
      [
        'a changed entry: its value, indented as its line is; its aligned name kept',
        handMade('files', 'memory', 'search'),
        (servers) => ({ ...servers, files: { ...servers.files!, enabled: false } }),
        handMade('files', 'memory', 'search').replace(
          '{ "type": "local", "command": ["files"] }',
          pretty({ type: 'local', command: ['files'], enabled: false }, '  '),
        ),
      ],
      ['the first entry removed', handMade('files', 'memory', 'search'), without('files'), handMade('memory', 'search')],
      ['a middle entry removed', handMade('files', 'memory', 'search'), without('memory'), handMade('files', 'search')],
      ['the last entry removed', handMade('files', 'memory', 'search'), without('search'), handMade('files', 'memory')],
      ['every entry removed', handMade('files', 'memory'), () => ({}), '{ "servers": {} }'],
      ['the only entry removed', '{"servers": {"a": {"type": "local", "command": ["a"]}}}\n', () => ({}), '{"servers": {}}\n'],
      [
        'an entry added: after the last, parted as the last two are',
        handMade('files', 'memory'),
        (servers) => ({ ...servers, extra }),
        withExtra(handMade('files', 'memory')),
      ],
      [
        'an entry added beside the only one',
        '{"servers": {"a": {"type": "local", "command": ["a"]}}}',
        (servers) => ({ ...servers, extra }),
        `{"servers": {"a": {"type": "local", "command": ["a"]},"extra": ${pretty({ type: 'local', command: ['extra'] }, '')}}}`,
      ],
      [
        'the last entry removed and one added',
        handMade('files', 'memory', 'search'),
        (servers) => ({ ...without('search')(servers), extra }),
        withExtra(handMade('files', 'memory')),
      ],
      [
        'an entry added to an empty object: a line each, a level in',
        '{\n  "servers": {}\n}\n',
        () => ({ extra }),
        serializeServers([['extra', { type: 'local', command: ['extra'] }]]),
      ],
      [
        'a name written twice: kept where first written, as last written, the other one cut',
        '{"servers": {"a": {"type":"local","command":["old"]}, "b": {"type":"local","command":["b"]}, "a": {"type":"local","command":["new"]}}}',
        (servers) => ({ ...servers, b: { ...servers.b!, enabled: false } }),
        `{"servers": {"a": {"type":"local","command":["new"]}, "b": ${pretty({ type: 'local', command: ['b'], enabled: false }, '')}}}`,
      ],
    ];
    it.each(cases)('%s', async (_what, before, mutator, after) => {
      await writeFile(file, before);
      const { store } = storeFor();
      const result = await store.update(mutator);
      expect(await readFile(file, 'utf8')).toBe(after);
      expect(await modeOf(file)).toBe(0o600);
      // It reads back as the servers the write stored.
      expect((await store.load()).servers).toEqual(result.servers);
    });
  });

  it('writes a changed or added entry without its defaults, nested ones too, keeping what a default depends on, and it reads back the same', async () => {
    await writeFile(file, JSON.stringify({ servers: { a: local('a') } }));
    const { store } = storeFor();
    const perUser = {
      type: 'local',
      command: ['n', '${user.KEY}'],
      scope: 'per_user',
      user_inputs: { KEY: { description: 'the key' } },
    } as unknown as ServerConfig;
    const result = await store.update((servers) => ({
      ...servers,
      a: { ...servers.a!, timeout_seconds: 30, reconnect: { ...servers.a!.reconnect, max_attempts: 2 } },
      n: perUser,
    }));
    const written = JSON.parse(await readFile(file, 'utf8')) as { servers: Record<string, unknown> };
    expect(written.servers).toEqual({
      // A nested object keeps only the fields that differ from their default.
      a: { type: 'local', command: ['a'], timeout_seconds: 30, reconnect: { max_attempts: 2 } },
      // scope stays: without it the ${user.…} reference would not validate; an input's `secret: true` is its default.
      n: { type: 'local', command: ['n', '${user.KEY}'], scope: 'per_user', user_inputs: { KEY: { description: 'the key' } } },
    });
    // What it wrote reads back as the configs it was given, at the versions it returned.
    const loaded = await store.load();
    expect(loaded.servers).toEqual(result.servers);
    expect(loaded.versions).toEqual(result.versions);
  });

  it("the bundled demo file is laid out as a write lays it out: disabling a server and enabling it again leaves it as committed", async () => {
    const demo = await readFile(path.join(import.meta.dirname, '../../examples/demo/mcp_servers.json'), 'utf8');
    await writeFile(file, demo);
    const { store } = storeFor();
    await store.update((servers) => ({ ...servers, everything: { ...servers.everything!, enabled: false } }));
    const disabled = await readFile(file, 'utf8');
    // The one change is the line it needs (and the comma before it).
    expect(disabled).toBe(demo.replace('"stdio"\n      ]\n', '"stdio"\n      ],\n      "enabled": false\n'));
    expect(disabled).not.toBe(demo);
    await store.update((servers) => ({ ...servers, everything: { ...servers.everything!, enabled: true } }));
    expect(await readFile(file, 'utf8')).toBe(demo);
  });

  it('replaces an invalid entry when the mutator returns that name', async () => {
    await writeFile(file, JSON.stringify({ servers: { fixme: { type: 'local' } } }));
    const { store } = storeFor();
    await store.update((servers) => ({ ...servers, fixme: local('fixed') as ServerConfig }));
    const loaded = await store.load();
    expect(loaded.warnings).toEqual([]);
    expect(loaded.servers.map(([n, c]) => [n, c.type === 'local' && c.command])).toEqual([['fixme', ['fixed']]]);
  });

  it('writes nothing when the mutator throws or returns an invalid config, and stays usable', async () => {
    const { store } = storeFor();
    await store.save([['a', local('x')]]);
    const before = await readFile(file);
    await expect(
      store.update(() => {
        throw new Error('mutator failed');
      }),
    ).rejects.toThrow('mutator failed');
    const err = await rejection(store.update((s) => ({ ...s, b: { type: 'remote', url: 'nope' } as ServerConfigInput })));
    expect((err as ConfigError).field).toBe('servers.b.url');
    expect(await readFile(file)).toEqual(before);
    expect(await tempFiles(dir)).toEqual([]);
    await store.update((s) => ({ ...s, c: local('c') as ServerConfig }));
    expect((await store.load()).servers.map(([n]) => n)).toEqual(['a', 'c']);
  });

  it('creates the file when it is missing', async () => {
    const { store } = storeFor();
    await store.update(() => ({ first: local('x') as ServerConfig }));
    expect(await modeOf(file)).toBe(0o600);
    expect((await store.load()).servers.map(([n]) => n)).toEqual(['first']);
  });
});
