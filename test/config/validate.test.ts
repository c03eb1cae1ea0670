import { describe, expect, it } from 'vitest';
import { ServerConfig } from '../../src/config/schema.js';
import { parseJsonText, parseServerConfig, parseServersDocument } from '../../src/config/validate.js';
import { describeZodError } from '../../src/config/zod-errors.js';
import { ConfigError } from '../../src/errors.js';

const CANARY = 'CANARY-validate-7f3a9c1e';

function zodError(raw: unknown) {
  const result = ServerConfig.safeParse(raw);
  if (result.success) throw new Error('expected the config to be invalid');
  return result.error;
}

function thrown(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('describeZodError', () => {
  it('names the dotted field path with the prefix, in one line', () => {
    const d = describeZodError(zodError({ type: 'local', command: ['x'], timeout_seconds: 'soon' }), 'servers.files');
    expect(d).toEqual({
      field: 'servers.files.timeout_seconds',
      message: 'servers.files.timeout_seconds: expected number, received string',
    });
  });

  it('says a missing field is required', () => {
    expect(describeZodError(zodError({ type: 'local' }), 'servers.files').message).toBe('servers.files.command: required: expected array');
    expect(describeZodError(zodError({ type: 'remote', url: 'https://a.example/mcp', auth: { kind: 'bearer' } })).message).toBe(
      'auth.token: required: expected string',
    );
  });

  it('says a fraction where a whole number goes in plain words', () => {
    expect(describeZodError(zodError({ type: 'local', command: ['x'], max_concurrent_calls: 2.5 })).message).toBe('max_concurrent_calls: must be a whole number');
  });

  it('names each unknown field itself', () => {
    const d = describeZodError(zodError({ type: 'local', command: ['x'], colour: 1, size: 2 }));
    expect(d.field).toBe('colour');
    expect(d.message).toBe('colour: unknown field; size: unknown field');
  });

  it('paths into records and arrays', () => {
    const d = describeZodError(zodError({ type: 'local', command: ['x', ''], env: { A: 1 } }));
    expect(d.message).toBe(
      'command.1: must not be empty; env.A: expected string, received number',
    );
    expect(d.field).toBe('command.1');
  });

  it('lists at most three problems and counts the rest', () => {
    const d = describeZodError(zodError({ type: 'local', command: [], a: 1, b: 2, c: 3, d: 4 }));
    expect(d.message).toMatch(/\(\+2 more\)$/);
    expect(d.message.split('; ')).toHaveLength(3);
  });

  it('never repeats input values, whatever field holds them', () => {
    const bad = [
      { type: CANARY },
      { type: 'local', command: CANARY },
      { type: 'local', command: [CANARY], timeout_seconds: CANARY },
      { type: 'local', command: ['x'], env: { K: { v: CANARY } }, cwd: 5 },
      { type: 'remote', url: CANARY },
      { type: 'remote', url: `ftp://${CANARY}` },
      { type: 'remote', url: 'https://x', transport: CANARY, auth: { kind: CANARY } },
      { type: 'remote', url: 'https://x', auth: { kind: 'bearer', token: 5, extra: CANARY } },
      { type: 'remote', url: 'https://x', headers: [CANARY], tools: { include: CANARY } },
    ];
    for (const raw of bad) {
      const { message, field } = describeZodError(zodError(raw));
      expect(message).not.toContain(CANARY);
      expect(field).not.toContain(CANARY);
    }
  });
});

describe('parseServerConfig', () => {
  it('returns the defaulted config', () => {
    expect(parseServerConfig('files', { type: 'local', command: ['x'] })).toMatchObject({
      env: {},
      cwd: null,
      enabled: true,
      timeout_seconds: 60,
    });
  });

  it('rejects a bad name with field "name"', () => {
    const err = thrown(() => parseServerConfig('no way', { type: 'local', command: ['x'] }));
    expect(err.field).toBe('name');
  });

  it.each([
    [{ type: 'local', command: ['node'], env: { 'A=B': 'value' } }, 'env.A=B', 'key must be an environment variable name'],
    [{ type: 'local', command: ['node'], env: { '': 'value' } }, 'env.', 'key must be an environment variable name'],
    [{ type: 'local', command: ['node'], env: { API_KEY: 'sk-\0live-SECRET-0123' } }, 'env.API_KEY', 'must not contain a NUL character'],
    [{ type: 'local', command: ['node', 'a\0b'] }, 'command.1', 'must not contain a NUL character'],
    [{ type: 'local', command: ['node'], cwd: '/tmp\0x' }, 'cwd', 'must not contain a NUL character'],
    [{ type: 'remote', url: 'https://x.invalid/mcp', headers: { 'X Team': 'v' } }, 'headers.X Team', 'key must be an HTTP header name'],
    [{ type: 'remote', url: 'https://x.invalid/mcp', headers: { 'X-Team': 'plat\nform-SECRET' } }, 'headers.X-Team', 'must not contain a line break'],
  ])('refuses what spawn or fetch would refuse later, naming the field: %j', (config, field, problem) => {
    const err = thrown(() => parseServerConfig('files', config));
    expect(err.field).toBe(field);
    expect(err.message).toContain(problem);
    expect(err.message).not.toMatch(/SECRET|form/);
  });

  it('says whether a URL is not one, or not one of the schemes the field takes', () => {
    expect(thrown(() => parseServerConfig('r', { type: 'remote', url: 'ftp://files.example/mcp' })).message).toBe('url: must be an http:// or https:// URL');
    expect(thrown(() => parseServerConfig('r', { type: 'remote', url: 'not a url' })).message).toBe('url: must be a valid URL');
    const metadata = { type: 'remote', url: 'https://x.example/mcp', auth: { kind: 'oauth', client_metadata_url: 'http://x.example/client.json' } };
    expect(thrown(() => parseServerConfig('r', metadata)).message).toBe('auth.client_metadata_url: must be an https:// URL');
  });

  it('throws a ConfigError carrying the field', () => {
    const err = thrown(() => parseServerConfig('files', { type: 'local', command: ['x'], enabled: 'yes' }));
    expect(err.field).toBe('enabled');
    expect(err.message).toBe('enabled: expected boolean, received string');
  });
});

describe('parseJsonText', () => {
  it('locates a syntax error by line and column without quoting the text', () => {
    const text = `{\n  "servers": {\n    "x": {"env": {"K": ${CANARY}}}\n  }\n}`;
    const err = thrown(() => parseJsonText(text));
    expect(err.message).toBe('invalid JSON: line 3 column 24: expected a value');
    expect(err.message).not.toContain(CANARY);
    // V8's own message would have leaked it: this is why we do not use it.
    expect(() => JSON.parse(`{"a": ${CANARY}}`)).toThrow(/CANARY/);
  });

  it.each([
    ['', 'line 1 column 1: expected a value, found end of file'],
    ['{"a": 1,}', "line 1 column 9: expected a double-quoted property name"],
    ['{"a" 1}', "line 1 column 6: expected ':' after a property name"],
    ['{"a": "x', 'line 1 column 9: expected a closing quote, found end of file'],
    ['[1, 2', "line 1 column 6: expected ',' or ']' after an array element"],
    ['{} {}', 'line 1 column 4: expected end of file after the JSON value'],
    ['{"a": "\\q"}', 'line 1 column 8: expected a valid escape sequence'],
    ['{"a": 01}', "line 1 column 8: expected ',' or '}' after a property value"],
  ])('reports %j as %s', (text, where) => {
    expect(thrown(() => parseJsonText(text)).message).toBe(`invalid JSON: ${where}`);
  });

  it('keeps the written order of servers, integer-like names included', () => {
    const { value, serverOrder } = parseJsonText('{"servers": {"zeta": {}, "10": {}, "alpha": {}, "2": {}}}');
    expect(Object.keys((value as { servers: object }).servers)).toEqual(['2', '10', 'zeta', 'alpha']);
    expect(serverOrder).toEqual(['zeta', '10', 'alpha', '2']);
  });

  it('ignores a byte order mark', () => {
    expect(parseJsonText('\uFEFF{"servers": {}}').value).toEqual({ servers: {} });
  });
});

describe('parseServersDocument', () => {
  const ok = { type: 'local', command: ['x'] };

  it('keeps the given order and skips invalid entries with a warning naming server and field', () => {
    const raw = {
      servers: {
        '2': ok,
        files: { ...ok, timeout_seconds: 'x', env: { K: CANARY } },
        'bad name': ok,
        remote: { type: 'remote', url: 'https://example.com/mcp' },
      },
    };
    const doc = parseServersDocument(raw, ['remote', 'files', 'bad name', '2']);
    expect(doc.servers.map(([n]) => n)).toEqual(['remote', '2']);
    expect(doc.entries.map((e) => [e.name, e.config === null])).toEqual([
      ['remote', false],
      ['files', true],
      ['bad name', true],
      ['2', false],
    ]);
    expect(doc.warnings).toEqual([
      'skipping server "files": servers.files.timeout_seconds: expected number, received string',
      'skipping server "bad name": name: must be 1 to 64 characters, each a letter, a digit, "_" or "-", and not "__proto__"',
    ]);
    expect(doc.warnings.join('\n')).not.toContain(CANARY);
  });

  it('rejects an unknown top-level field as a whole-document problem', () => {
    const err = thrown(() => parseServersDocument({ servers: {}, mcpServers: {} }));
    expect(err.field).toBe('mcpServers');
    expect(err.message).toBe('not a {"servers": {...}} document: mcpServers: unknown field');
  });

  it.each([[[]], ['text'], [null], [{ servers: [] }]])('rejects the document %j', (raw) => {
    expect(() => parseServersDocument(raw)).toThrow(ConfigError);
  });

  it('treats a document without "servers" as empty', () => {
    expect(parseServersDocument({}).servers).toEqual([]);
  });
});
