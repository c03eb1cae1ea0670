import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { importServers, stripJsonComments } from '../../src/config/import.js';
import { ServerConfig } from '../../src/config/schema.js';
import { ConfigError } from '../../src/errors.js';

const fixture = (name: string) => readFile(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const SECRET = 'Zq9Kv8WmXp3Jd7Hn-import';

function single(entry: unknown) {
  return importServers(JSON.stringify({ mcpServers: { s: entry } }));
}

describe('importServers', () => {
  it('converts a Claude Desktop file', async () => {
    const result = importServers(await fixture('claude_desktop_config.json'));
    expect(result.servers).toEqual([
      ['filesystem', { type: 'local', command: ['npx', '-y', '@modelcontextprotocol/server-filesystem', '/Users/me/Desktop'], env: {} }],
      [
        'github',
        {
          type: 'local',
          command: ['docker', 'run', '-i', '--rm', '-e', 'GITHUB_PERSONAL_ACCESS_TOKEN', 'ghcr.io/github/github-mcp-server'],
          env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_FIXTURESECRET0000000000000001' },
        },
      ],
      ['linear', { type: 'remote', url: 'https://mcp.linear.app/sse', transport: 'sse', headers: { Authorization: 'Bearer FIXTURESECRET-linear-0002' } }],
      ['paused', { type: 'local', command: ['uvx', 'mcp-server-time'], env: {}, cwd: '/tmp', enabled: false }],
    ]);
    expect(result.skipped).toEqual([{ name: 'not a valid name', reason: 'name must be 1 to 64 characters, each a letter, a digit, "_" or "-", and not "__proto__"' }]);
    expect(result.warnings).toEqual([]);
    for (const [, config] of result.servers) expect(ServerConfig.safeParse(config).success).toBe(true);
  });

  it('converts a VS Code mcp.json (JSONC, "servers", typed entries)', async () => {
    const result = importServers(await fixture('vscode-mcp.json'));
    expect(result.servers).toEqual([
      [
        'perplexity',
        {
          type: 'local',
          command: ['npx', '-y', 'server-perplexity-ask'],
          env: { PERPLEXITY_API_KEY: '${input:perplexity-key}', URL_WITH_SLASHES: 'http://a//b' },
        },
      ],
      ['fetch', { type: 'remote', url: 'https://api.example.com/mcp', transport: 'streamable_http', headers: { 'X-Key': 'FIXTURESECRET-vscode-0003' } }],
      ['events', { type: 'remote', url: 'http://localhost:3000/sse', transport: 'sse', headers: {} }],
    ]);
    expect(result.skipped).toEqual([]);
    expect(result.warnings).toEqual([
      '"inputs" ignored: mcp-fleet does not prompt for VS Code inputs',
      'server "perplexity": ignored fields: envFile',
      'server "perplexity": env.PERPLEXITY_API_KEY contains a ${...} placeholder, imported literally',
    ]);
  });

  it('says which fields of the other kind of server it left out, naming no value', () => {
    const result = importServers(
      '{"mcpServers": {"g": {"command": "node", "headers": {"A": "hdr-SECRET-1"}}, "h": {"url": "https://x.example/mcp", "env": {"A": "env-SECRET-2"}, "args": ["x"], "cwd": "/tmp"}}}',
    );
    expect(result.servers.map(([name]) => name)).toEqual(['g', 'h']);
    expect(result.warnings).toEqual(['server "g": ignored fields: headers', 'server "h": ignored fields: env, args, cwd']);
    expect(JSON.stringify(result)).not.toMatch(/SECRET/);
  });

  it('warns of a ${...} placeholder in every field that can hold one, naming the field, never its value', () => {
    const local = single({ command: '${env:HOME}/bin/srv', args: ['${workspaceFolder}/server.js', '--plain'], cwd: '${workspaceFolder}', env: { K: 'a-${input:k}' } });
    expect(local.warnings).toEqual([
      'server "s": command contains a ${...} placeholder, imported literally',
      'server "s": args[0] contains a ${...} placeholder, imported literally',
      'server "s": cwd contains a ${...} placeholder, imported literally',
      'server "s": env.K contains a ${...} placeholder, imported literally',
    ]);
    expect(single({ command: ['node', '${workspaceFolder}/x.js'] }).warnings).toEqual(['server "s": command[1] contains a ${...} placeholder, imported literally']);
    const remote = single({ url: 'https://x.example/${input:tenant}/mcp', headers: { Authorization: 'Bearer ${input:token}' } });
    expect(remote.warnings).toEqual([
      'server "s": url contains a ${...} placeholder, imported literally',
      'server "s": headers.Authorization contains a ${...} placeholder, imported literally',
    ]);
  });

  it("says it left out VS Code's top-level inputs, in mcp.json or under mcp in settings", () => {
    const input = '[{"type": "promptString", "id": "k", "password": true}]';
    expect(importServers(`{"inputs": ${input}, "servers": {"a": {"command": "x"}}}`).warnings).toEqual(['"inputs" ignored: mcp-fleet does not prompt for VS Code inputs']);
    expect(importServers(`{"mcp": {"inputs": ${input}, "servers": {"a": {"command": "x"}}}}`).warnings).toEqual(['"mcp.inputs" ignored: mcp-fleet does not prompt for VS Code inputs']);
  });

  it('reads VS Code settings ("mcp": {"servers": …}) and Cursor-style url entries', () => {
    const result = importServers('{"mcp": {"servers": {"c": {"url": "https://c.example/mcp", "headers": {"K": "v"}}}}}');
    expect(result.servers).toEqual([['c', { type: 'remote', url: 'https://c.example/mcp', transport: 'auto', headers: { K: 'v' } }]]);
  });

  it.each([
    ['streamable-http', 'streamable_http'],
    ['http', 'streamable_http'],
    ['sse', 'sse'],
    [undefined, 'auto'],
  ])('maps url type %j to transport %j', (type, transport) => {
    expect(single({ url: 'https://x.example', type }).servers[0]?.[1]).toMatchObject({ transport });
  });

  it('takes entries already in mcp-fleet form as they are', () => {
    const native = { type: 'remote', url: 'https://n.example', auth: { kind: 'bearer', token: SECRET } };
    expect(single(native).servers).toEqual([['s', native]]);
  });

  it.each([
    ['both command and url', { command: 'x', url: 'https://x.example' }, 'has both "command" and "url"'],
    ['neither command nor url', { args: ['x'] }, 'has neither "command" nor "url"'],
    ['url with type stdio', { url: 'https://x.example', type: 'stdio' }, '"url" with type "stdio"'],
    ['command with type http', { command: 'x', type: 'http' }, '"command" with a type other than "stdio"'],
    ['an unknown type', { url: 'https://x.example', type: 'websocket' }, 'type: expected one of stdio, http, streamable-http, sse'],
    ['args not an array', { command: 'x', args: '--flag' }, 'args: expected an array of strings'],
    ['an empty command', { command: '' }, 'command.0: must not be empty'],
    ['a non-string env value', { command: 'x', env: { KEY: 42, OTHER: SECRET } }, 'env.KEY: expected a string'],
    ['a non-string header', { url: 'https://x.example', headers: { H: [SECRET] } }, 'headers.H: expected a string'],
    ['a non-http url', { url: 'file:///etc/passwd', headers: { H: SECRET } }, 'url: must be an http:// or https:// URL'],
    ['not an object', [SECRET], 'entry is not an object'],
    ['an invalid native entry', { type: 'local', command: [], env: { K: SECRET } }, 'command: needs at least the program to run'],
    ['"disabled" not a boolean', { command: 'x', disabled: 'true', env: { K: SECRET } }, '"disabled" must be true or false'],
  ])('skips %s with the reason, never a value', (_what, entry, reason) => {
    const result = single(entry);
    expect(result.servers).toEqual([]);
    expect(result.skipped).toEqual([{ name: 's', reason }]);
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it('reads the first server map of a file and says it ignored the others', () => {
    const result = importServers('{"mcpServers": {"a": {"command": "a"}}, "servers": {"b": {"command": "b"}}, "mcp": {"servers": {"c": {"command": "c"}}}}');
    expect(result.servers.map(([n]) => n)).toEqual(['a']);
    expect(result.warnings).toEqual([
      '"servers" ignored: only the first server map of the file is read',
      '"mcp.servers" ignored: only the first server map of the file is read',
    ]);
  });

  it('keeps going after a skipped entry', () => {
    const result = importServers('{"mcpServers": {"a": 5, "b": {"command": "b"}, "c d": {}}}');
    expect(result.servers.map(([n]) => n)).toEqual(['b']);
    expect(result.skipped.map((s) => s.name)).toEqual(['a', 'c d']);
  });

  it.each([
    ['not JSON', `{"mcpServers": {"a": {"env": {"K": ${SECRET}}}}}`, 'invalid JSON: line 1 column 36: expected a value'],
    ['no server map', '{"other": {}}', 'no "mcpServers" or "servers" object found at the top level'],
    ['an array', '[]', 'no "mcpServers" or "servers" object found at the top level'],
  ])('throws a ConfigError for %s', (_what, text, message) => {
    let caught: unknown;
    try {
      importServers(text);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as Error).message).toBe(message);
  });
});

describe('stripJsonComments', () => {
  it('blanks comments and trailing commas, keeps strings and every position', () => {
    const text = '{\n  // line\n  "a": "x // not a comment /* nor this */", /* block\n comment */ "b": [1, 2,],\n}';
    const stripped = stripJsonComments(text);
    expect(stripped).toHaveLength(text.length);
    expect(stripped.split('\n')).toHaveLength(text.split('\n').length);
    expect(JSON.parse(stripped)).toEqual({ a: 'x // not a comment /* nor this */', b: [1, 2] });
  });

  it('leaves escaped quotes inside strings alone', () => {
    expect(JSON.parse(stripJsonComments('{"a": "q\\" // x",}'))).toEqual({ a: 'q" // x' });
  });
});
