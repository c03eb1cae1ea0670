import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AuthResponse,
  MASK,
  ServerConfigResponse,
  maskSecret,
  maskUrl,
  redact,
  secretValues,
  secretValuesOf,
  toResponse,
  toStorage,
} from '../../src/config/masking.js';
import { mergePatch } from '../../src/config/merge-patch.js';
import { AuthKind, LocalServerConfig, ServerConfig } from '../../src/config/schema.js';
import type { ServerConfigInput } from '../../src/config/schema.js';
import { parseServerConfig, parseServersDocument } from '../../src/config/validate.js';
import { ConfigError } from '../../src/errors.js';
import { sampleValue, sharedFields } from './field-samples.js';

const cfg = (input: ServerConfigInput): ServerConfig => ServerConfig.parse(input);

const localCfg = cfg({
  type: 'local',
  command: ['node', 'server.js'],
  env: { API_KEY: 'sk-local-0123456789', SHORT: 'abc', EMPTY: '' },
  cwd: '/srv',
});
const bearerCfg = cfg({
  type: 'remote',
  url: 'https://example.com/mcp',
  headers: { 'X-Team': 'team-secret-value-42', 'X-Short': 'tiny' },
  auth: { kind: 'bearer', token: 'bearer-token-abcdef' },
});
const oauthCfg = cfg({
  type: 'remote',
  url: 'https://example.com/mcp',
  transport: 'sse',
  auth: { kind: 'oauth', client_id: 'client-1', client_secret: 'oauth-client-secret-9876', scopes: ['read'], callback_port: 7777 },
});
const noneCfg = cfg({ type: 'remote', url: 'https://example.com/mcp' });

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('AuthResponse', () => {
  it('has one masked form for each auth kind, in the same order', () => {
    expect(AuthResponse.options.map((variant) => variant.shape.kind.value)).toEqual(AuthKind.options);
  });
});

describe('maskSecret', () => {
  it.each([
    ['', MASK],
    ['a', MASK],
    ['12345678901', MASK],
    ['123456789012', `${MASK}9012`],
    ['sk-a-very-long-secret-WXYZ', `${MASK}WXYZ`],
    // Characters, not UTF-16 units: six emoji are six characters, and none is cut in half.
    ['😀😀😀😀😀😀', MASK],
    ['abcdefghijk😀xyz', `${MASK}😀xyz`],
  ])('masks %j as %j', (value, masked) => {
    expect(maskSecret(value)).toBe(masked);
  });
});

describe('toResponse', () => {
  it('masks every env value', () => {
    const r = toResponse(localCfg);
    expect(r).toEqual({
      type: 'local',
      command: ['node', 'server.js'],
      env: {
        API_KEY: { has_value: true, masked: `${MASK}6789` },
        SHORT: { has_value: true, masked: MASK },
        EMPTY: { has_value: false, masked: MASK },
      },
      cwd: '/srv',
      enabled: true,
      timeout_seconds: 60,
      call_timeout_seconds: 120,
      max_concurrent_calls: 16,
      tools: { include: null, exclude: [], always_load: [] },
      inherit_env: [],
      max_result_bytes: 1024 * 1024,
      large_results: 'spill',
      results_ttl_seconds: 3600,
      results_max_bytes: 256 * 1024 * 1024,
      reconnect: { max_attempts: 5, initial_delay_seconds: 1, max_delay_seconds: 30 },
      ping_interval_seconds: 30,
      protocol: 'auto',
      start: 'eager',
      scope: 'shared',
      user_inputs: {},
      max_sessions: 100,
      idle_timeout_seconds: 300,
      approval_from_annotations: false,
      approval_timeout_seconds: 300,
    });
  });

  it('shows every non-secret field of the config as stored', () => {
    for (const config of [localCfg, bearerCfg]) {
      const { env: _env, headers: _headers, auth: _auth, ...plain } = config as Record<string, unknown>;
      expect(toResponse(config)).toMatchObject(plain);
    }
  });

  it('masks headers and the bearer token', () => {
    const r = toResponse(bearerCfg);
    if (r.type !== 'remote') throw new Error('expected remote');
    expect(r.headers).toEqual({
      'X-Team': { has_value: true, masked: `${MASK}e-42` },
      'X-Short': { has_value: true, masked: MASK },
    });
    expect(r.auth).toEqual({ kind: 'bearer', has_token: true, token_masked: `${MASK}cdef` });
  });

  it.each([
    [oauthCfg, { has_client_secret: true, client_secret_masked: `${MASK}9876` }],
    [cfg({ type: 'remote', url: 'https://x.example', auth: { kind: 'oauth' } }), { has_client_secret: false, client_secret_masked: null }],
  ])('shows oauth presence and mask, keeping non-secret fields (%#)', (config, secretPart) => {
    const r = toResponse(config);
    if (r.type !== 'remote' || config.type !== 'remote' || config.auth.kind !== 'oauth') throw new Error('expected oauth');
    expect(r.auth).toEqual({
      kind: 'oauth',
      client_id: config.auth.client_id,
      scopes: config.auth.scopes,
      callback_port: config.auth.callback_port,
      client_metadata_url: null,
      dpop: false,
      ...secretPart,
    });
  });

  it('passes auth none through', () => {
    const r = toResponse(noneCfg);
    expect(r.type === 'remote' && r.auth).toEqual({ kind: 'none' });
  });

  it('matches the response schema and never the stored value', () => {
    for (const config of [localCfg, bearerCfg, oauthCfg, noneCfg]) {
      const response = toResponse(config);
      expect(ServerConfigResponse.parse(response)).toEqual(response);
      const text = JSON.stringify(response);
      for (const secret of secretValues(config)) if (secret.length > 4) expect(text).not.toContain(secret);
    }
  });
});

describe('toStorage', () => {
  it('keeps every value and is a copy', () => {
    const stored = toStorage(bearerCfg);
    expect(stored).toEqual(bearerCfg);
    expect(stored).not.toBe(bearerCfg);
    if (stored.type === 'remote') stored.headers['X-Team'] = 'changed';
    expect(bearerCfg.type === 'remote' && bearerCfg.headers['X-Team']).toBe('team-secret-value-42');
  });
});

describe('secretValues and redact', () => {
  it('lists every non-empty secret of each kind', () => {
    expect(secretValues(localCfg).sort()).toEqual(['abc', 'sk-local-0123456789']);
    expect(secretValues(bearerCfg).sort()).toEqual(['bearer-token-abcdef', 'team-secret-value-42', 'tiny']);
    expect(secretValues(oauthCfg)).toEqual(['oauth-client-secret-9876']);
    expect(secretValues(noneCfg)).toEqual([]);
  });

  it("takes a URL's query values as secrets only where the parameter is named like a credential", () => {
    const url = 'https://mcp.example/mcp?format=json&v=2026&api_key=query-key-123456&X-Amz-Signature=sig%2Fvalue&access_token=tok-998877';
    const config = ServerConfig.parse({ type: 'remote', url });
    expect(secretValues(config).sort()).toEqual(['query-key-123456', 'sig%2Fvalue', 'sig/value', 'tok-998877']);
    expect(redact(`GET ${url} failed on 2026-07-28`, secretValues(config))).not.toMatch(/query-key|sig%2Fvalue|tok-998877/);
    expect(redact('the 2026-07-28 era as json', secretValues(config))).toBe('the 2026-07-28 era as json');
  });

  it('takes the credential inside an Authorization-style value too: a server may log the bare token, or what Basic encodes', () => {
    const basic = Buffer.from('alice:basic-password-77').toString('base64');
    const config = cfg({
      type: 'remote',
      url: 'https://mcp.example/mcp',
      headers: { Authorization: 'Bearer header-token-123456', 'X-Basic': `Basic ${basic}`, 'X-Short': 'Bearer abc' },
    });
    expect(secretValues(config)).toEqual(
      expect.arrayContaining(['Bearer header-token-123456', 'header-token-123456', basic, 'alice:basic-password-77', 'basic-password-77']),
    );
    expect(redact('got header-token-123456 and basic-password-77', secretValues(config))).toBe(`got ${MASK} and ${MASK}`);
    // Only a scheme that carries a credential: any env value is a secret, and its words must stay readable.
    const env = cfg({ type: 'local', command: ['node'], env: { FORMAT: 'json prettyprinted', AUTH: 'token env-token-998877' } });
    expect(secretValues(env).sort()).toEqual(['env-token-998877', 'json prettyprinted', 'token env-token-998877']);
    expect(secretValues(config)).not.toContain('abc');
  });

  it.each([
    ['token abcd and abcdef', ['abcd', 'abcdef'], `token ${MASK} and ${MASK}`],
    ['a.bc a+bc a.bc', ['a.bc'], `${MASK} a+bc ${MASK}`],
    ['x$&y (x$&y)', ['x$&y'], `${MASK} (${MASK})`],
    ['nothing here', [], 'nothing here'],
    ['keep', [''], 'keep'],
    ['ssss', ['ss', 'ss'], 'ssss'],
    ['secretsecret', ['secret', 'secret'], `${MASK}${MASK}`],
    ['••••', ['••••'], MASK],
    // Shorter values are not treated as secrets in text: "1" or "on" would blank every line.
    ['DEBUG=1 on abc', ['1', 'on', 'abc'], 'DEBUG=1 on abc'],
    ['a password1 b password c', ['password', 'password1'], `a ${MASK} b ${MASK} c`],
    ['say "qq\\"x"', ['qq"x'], `say "${MASK}"`],
    // As Node's own errors quote a value (util.inspect), alone and inside a JSON line.
    ["Received 'sk-\\x00live-SECRET'", ['sk-\0live-SECRET'], `Received '${MASK}'`],
    [JSON.stringify(`got \`it's"q\\\\bLEAK77\``), [`it's"q\\bLEAK77`], JSON.stringify(`got \`${MASK}\``)],
  ])('redacts %j with %j', (text, secrets, expected) => {
    expect(redact(text, secrets)).toBe(expected);
  });

  it('redacts values far longer than a regular expression may be (found by the route fuzzer)', () => {
    const huge = 'a'.repeat(40_000);
    const others = Array.from({ length: 200 }, (_, i) => `secret-${i}-${'b'.repeat(i * 50)}`);
    const text = `head ${huge} mid ${others[199]} tail ${huge}`;
    expect(redact(text, [huge, ...others])).toBe(`head ${MASK} mid ${MASK} tail ${MASK}`);
  });
});

function without(map: Record<string, string>, key: string): Record<string, string> {
  return Object.fromEntries(Object.entries(map).filter(([k]) => k !== key));
}

describe('a ${user.NAME} reference', () => {
  it('alone is no secret, so a message naming it keeps it; with more text around it the value is still one', () => {
    const message = 'env.K: ${user.NOPE} names no input of user_inputs';
    expect(redact(message, secretValuesOf({ env: { K: '${user.NOPE}' } }))).toBe(message);
    expect(secretValues(cfg({ type: 'local', command: ['x'], env: { K: '${user.TOKEN}' }, scope: 'per_user', user_inputs: { TOKEN: {} } }))).toEqual([]);
    expect(secretValuesOf({ headers: { A: 'Bearer sk-live-0123${user.X}' } })).toEqual(['Bearer sk-live-0123${user.X}']);
  });
});

describe('a credential in the URL query', () => {
  const keyed = () => cfg({ type: 'remote', url: 'https://mcp.example/sse?api_key=qk-0123456789-SECRET&format=json#top' }) as Extract<ServerConfig, { type: 'remote' }>;
  const urlOf = (config: unknown) => (config as { url: string }).url;

  it('is masked in a response, the other parameters kept as written', () => {
    expect(urlOf(toResponse(keyed()))).toBe('https://mcp.example/sse?api_key=••••CRET&format=json#top');
    expect(maskUrl('https://mcp.example/mcp?token=short&sig=')).toBe('https://mcp.example/mcp?token=••••&sig=');
    expect(maskUrl('https://mcp.example/mcp')).toBe('https://mcp.example/mcp');
    expect(JSON.stringify(toResponse(keyed()))).not.toContain('SECRET');
  });

  it('a PATCH sending the URL back as shown keeps the stored one; another URL replaces it', () => {
    const stored = keyed();
    const shown = urlOf(toResponse(stored));
    expect((mergePatch(stored, { url: shown, timeout_seconds: 9 }) as { url: string }).url).toBe(stored.url);
    expect((mergePatch(stored, { url: 'https://mcp.example/sse?api_key=new-key-0123456789' }) as { url: string }).url).toBe(
      'https://mcp.example/sse?api_key=new-key-0123456789',
    );
  });
});

describe('mergePatch', () => {
  const secretMaps = [
    ['env', localCfg, { API_KEY: 'sk-local-0123456789', SHORT: 'abc', EMPTY: '' }],
    ['headers', bearerCfg, { 'X-Team': 'team-secret-value-42', 'X-Short': 'tiny' }],
  ] as const;

  describe.each(secretMaps)('%s', (key, base, stored) => {
    const [first, second] = Object.keys(stored) as [string, string];
    const mapOf = (config: ServerConfig) => (config as Record<string, unknown>)[key];

    it.each([
      ['an empty patch map keeps every value', {}, stored],
      ['a string replaces', { [first]: 'replaced' }, { ...stored, [first]: 'replaced' }],
      ['null deletes', { [first]: null }, without(stored, first)],
      ['a new key adds', { NEW_KEY: 'v' }, { ...stored, NEW_KEY: 'v' }],
      ['null on an unknown key is a no-op', { NOPE: null }, stored],
      ['omitted, null and string mix', { [first]: null, [second]: 'r', ADD: 'a' }, { ...without(stored, first), [second]: 'r', ADD: 'a' }],
    ])('%s', (_name, patchMap, expected) => {
      expect(mapOf(base)).toEqual(stored);
      expect(mapOf(mergePatch(base, { [key]: patchMap }))).toEqual(expected);
    });

    it('keeps the whole map when the patch omits it', () => {
      expect(mapOf(mergePatch(base, { enabled: false }))).toEqual(stored);
    });
  });

  const auth = (c: ServerConfig) => (c.type === 'remote' ? c.auth : null);
  const oauthStored = {
    kind: 'oauth',
    client_id: 'client-1',
    client_secret: 'oauth-client-secret-9876',
    scopes: ['read'],
    callback_port: 7777,
    client_metadata_url: null,
    dpop: false,
  };
  const oauthFresh = { kind: 'oauth', client_id: null, client_secret: null, scopes: [], callback_port: null, client_metadata_url: null, dpop: false };
  const authTable: Array<[string, ServerConfig, unknown, unknown]> = [
    ['bearer: token omitted keeps it', bearerCfg, { auth: {} }, { kind: 'bearer', token: 'bearer-token-abcdef' }],
    ['bearer: kind repeated, token omitted keeps it', bearerCfg, { auth: { kind: 'bearer' } }, { kind: 'bearer', token: 'bearer-token-abcdef' }],
    ['bearer: token string replaces', bearerCfg, { auth: { token: 'new-token' } }, { kind: 'bearer', token: 'new-token' }],
    ['bearer → oauth drops the token', bearerCfg, { auth: { kind: 'oauth' } }, oauthFresh],
    ['bearer → oauth with a secret', bearerCfg, { auth: { kind: 'oauth', client_secret: 'cs' } }, { ...oauthFresh, client_secret: 'cs' }],
    ['bearer → none drops the token', bearerCfg, { auth: { kind: 'none' } }, { kind: 'none' }],
    ['oauth: client_secret omitted keeps it', oauthCfg, { auth: { scopes: ['a', 'b'] } }, { ...oauthStored, scopes: ['a', 'b'] }],
    ['oauth: client_secret string replaces', oauthCfg, { auth: { client_secret: 'new' } }, { ...oauthStored, client_secret: 'new' }],
    ['oauth: client_secret null deletes', oauthCfg, { auth: { client_secret: null } }, { ...oauthStored, client_secret: null }],
    ['oauth: client_id null is a value, not a delete', oauthCfg, { auth: { client_id: null } }, { ...oauthStored, client_id: null }],
    ['oauth → bearer drops every oauth field', oauthCfg, { auth: { kind: 'bearer', token: 't' } }, { kind: 'bearer', token: 't' }],
    ['oauth → none drops every oauth field', oauthCfg, { auth: { kind: 'none' } }, { kind: 'none' }],
    ['oauth → oauth (same kind) keeps every field', oauthCfg, { auth: { kind: 'oauth' } }, oauthStored],
    ['none → bearer with a token', noneCfg, { auth: { kind: 'bearer', token: 't' } }, { kind: 'bearer', token: 't' }],
    ['none → oauth with a client', noneCfg, { auth: { kind: 'oauth', client_id: 'c' } }, { ...oauthFresh, client_id: 'c' }],
    ['auth omitted keeps it all', oauthCfg, { enabled: false }, oauthStored],
  ];

  it.each(authTable)('%s', (_name, current, patch, expected) => {
    expect(auth(mergePatch(current, patch))).toEqual(expected);
  });

  const errorTable: Array<[string, ServerConfig, unknown, string]> = [
    ['bearer: token null cannot delete a required token', bearerCfg, { auth: { token: null } }, 'auth.token'],
    ['oauth → bearer without a token', oauthCfg, { auth: { kind: 'bearer' } }, 'auth.token'],
    ['none → bearer without a token', noneCfg, { auth: { kind: 'bearer' } }, 'auth.token'],
    ['unknown auth kind', noneCfg, { auth: { kind: 'magic' } }, 'auth.kind'],
    ['auth as a string', noneCfg, { auth: 'bearer' }, 'auth'],
    ['token as a number', bearerCfg, { auth: { token: 42 } }, 'auth.token'],
    ['client_secret as an object', oauthCfg, { auth: { client_secret: { v: 1 } } }, 'auth.client_secret'],
    ['env value as a number', localCfg, { env: { API_KEY: 42 } }, 'env.API_KEY'],
    ['env as null', localCfg, { env: null }, 'env'],
    ['env as an array', localCfg, { env: ['A=1'] }, 'env'],
    ['headers value as a boolean', bearerCfg, { headers: { 'X-Team': true } }, 'headers.X-Team'],
    ['env on a remote server', bearerCfg, { env: { A: 'b' } }, 'env'],
    ['auth on a local server', localCfg, { auth: { kind: 'none' } }, 'auth'],
    ['an unknown field', localCfg, { colour: 'red' }, 'colour'],
    ['an empty command', localCfg, { command: [] }, 'command'],
    ['a non-http url', bearerCfg, { url: 'file:///etc/passwd' }, 'url'],
    ['local → remote without url', localCfg, { type: 'remote' }, 'url'],
    ['remote → local without command', bearerCfg, { type: 'local' }, 'command'],
    ['an unknown type', localCfg, { type: 'wasm' }, 'type'],
    ['a patch that is not an object', localCfg, ['enabled'], ''],
    ['timeout null (not a secret: null is not delete)', localCfg, { timeout_seconds: null }, 'timeout_seconds'],
  ];

  it.each(errorTable)('rejects %s with the field', (_name, current, patch, field) => {
    expect(configError(() => mergePatch(current, patch)).field).toBe(field);
  });

  it('changes type local → remote keeping the shared fields, dropping the local ones', () => {
    const current = cfg({ ...localCfg, enabled: false, timeout_seconds: 5 });
    const next = mergePatch(current, { type: 'remote', url: 'https://new.example/mcp', headers: { H: 'h', GONE: null } });
    expect(next).toEqual({
      ...cfg({ type: 'remote', url: 'https://new.example/mcp', headers: { H: 'h' } }),
      enabled: false,
      timeout_seconds: 5,
    });
  });

  it('changes type remote → local dropping headers and auth', () => {
    const next = mergePatch(bearerCfg, { type: 'local', command: ['x'] });
    expect(next).toEqual(cfg({ type: 'local', command: ['x'] }));
    expect(secretValues(next)).toEqual([]);
  });

  it('every field both types share survives local → remote → local; the other type’s own fields do not', () => {
    const shared = Object.fromEntries(
      sharedFields().map((key) => [key, sampleValue(key, LocalServerConfig.shape[key as keyof typeof LocalServerConfig.shape])]),
    );
    expect(Object.keys(shared)).toEqual(expect.arrayContaining(['max_result_bytes', 'reconnect', 'ping_interval_seconds', 'log_level']));
    const local = cfg({ type: 'local', command: ['x'], env: { A: 'a' }, cwd: '/srv', inherit_env: ['HOME'], ...shared });
    const remote = mergePatch(local, { type: 'remote', url: 'https://new.example/mcp' });
    expect(remote).toEqual(cfg({ type: 'remote', url: 'https://new.example/mcp', ...shared }));
    const back = mergePatch(remote, { type: 'local', command: ['y'] });
    expect(back).toEqual(cfg({ type: 'local', command: ['y'], ...shared }));
  });

  it('merges tools field by field and replaces other fields', () => {
    const current = cfg({ type: 'local', command: ['a'], tools: { include: ['t1'], exclude: ['t2'] } });
    const next = mergePatch(current, { tools: { exclude: [] }, command: ['b', 'c'], cwd: null });
    expect(next).toMatchObject({ tools: { include: ['t1'], exclude: [] }, command: ['b', 'c'], cwd: null });
  });

  it('merges reconnect field by field: the fields not sent keep their stored values', () => {
    const current = cfg({ type: 'local', command: ['a'], reconnect: { max_attempts: 9, initial_delay_seconds: 3, max_delay_seconds: 50 } });
    const next = mergePatch(current, { reconnect: { max_attempts: 2 } });
    expect(next.reconnect).toEqual({ max_attempts: 2, initial_delay_seconds: 3, max_delay_seconds: 50 });
  });

  it('is pure: the current config is not changed, whether the patch applies or fails', () => {
    const patches: Record<string, unknown>[] = [
      { env: { API_KEY: null, SHORT: 'x' }, tools: { exclude: ['t'] }, command: ['y'] },
      { headers: { 'X-Team': null }, auth: { token: 'x', client_secret: null, scopes: ['s'] } },
      { auth: { kind: 'none' } },
      { type: 'remote', url: 'https://a.example' },
      { type: 'local', command: ['x'] },
      { timeout_seconds: 'invalid', env: { API_KEY: 'changed' }, headers: { 'X-Team': 'changed' } },
    ];
    let applied = 0;
    for (const current of [localCfg, bearerCfg, oauthCfg]) {
      const snapshot = structuredClone(current);
      for (const patch of patches) {
        try {
          mergePatch(current, patch);
          applied++;
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
        }
      }
      expect(current).toEqual(snapshot);
    }
    expect(applied).toBeGreaterThanOrEqual(8);
  });

  it('keeps a "__proto__" key as data: rejected as a field, no prototype touched', () => {
    const patch: unknown = JSON.parse('{"__proto__": {"polluted": true}}');
    expect(configError(() => mergePatch(localCfg, patch)).field).toBe('__proto__');
    const envPatch: unknown = JSON.parse('{"env": {"__proto__": "value"}, "tools": {"__proto__": {"polluted": true}}}');
    expect(configError(() => mergePatch(localCfg, envPatch)).field).toBe('tools.__proto__');
    const next = mergePatch(localCfg, JSON.parse('{"env": {"__proto__": "value"}}'));
    expect(next.type === 'local' && Object.getPrototypeOf(next.env)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('no secret escapes (canaries)', () => {
  // Distinct canaries in every secret field of several configs.
  // Letters and digits that no field name, message or mask can spell by chance.
  const canary = (slot: number) => `Zq${slot}Kv8W${slot}mXp3J${slot}d7Hn${slot}`;
  const planted: ServerConfig[] = [
    cfg({ type: 'local', command: ['x'], env: { A: canary(1), B: canary(2) } }),
    cfg({ type: 'remote', url: 'https://a.example', headers: { H: canary(3) }, auth: { kind: 'bearer', token: canary(4) } }),
    cfg({ type: 'remote', url: 'https://b.example', headers: { G: canary(5) }, auth: { kind: 'oauth', client_id: 'id', client_secret: canary(6) } }),
  ];
  const canaries = planted.flatMap(secretValues);

  /** The text leaks if it holds a canary, or any 5 consecutive characters of one (the mask shows 4). */
  function expectClean(text: string, secrets: readonly string[] = canaries): void {
    for (const secret of secrets) {
      for (let i = 0; i + 5 <= secret.length; i++) {
        if (text.includes(secret.slice(i, i + 5))) throw new Error(`leaked ${secret.slice(i, i + 5)} of a canary in: ${text}`);
      }
    }
  }

  it('planted a canary in every secret field', () => {
    expect(canaries).toHaveLength(6);
  });

  it('toResponse carries none', () => {
    for (const config of planted) expectClean(JSON.stringify(toResponse(config)));
  });

  it('no validation error carries one: wrong-typed fields, canaries next to invalid fields', () => {
    const c = canary(7);
    const patches: unknown[] = [
      { timeout_seconds: c },
      { command: c },
      { command: [c, 5] },
      { url: c },
      { url: `ftp://user:${c}@host` },
      { type: c },
      { transport: c },
      { enabled: c },
      { cwd: 5, env: { K: c } },
      { env: { K: c, L: 5 } },
      { env: { K: { nested: c } } },
      { env: c },
      { headers: c },
      { headers: { K: [c] } },
      { auth: c },
      { auth: { kind: c } },
      { auth: { kind: 'bearer', token: c, extra: c } },
      { auth: { kind: 'oauth', client_secret: c, scopes: c } },
      { auth: { token: [c] } },
      { tools: { include: c } },
      { max_concurrent_calls: c, env: { A: c } },
      { unknown_field: c },
    ];
    let errors = 0;
    for (const current of planted) {
      for (const patch of patches) {
        try {
          mergePatch(current, patch);
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          errors++;
          expectClean(`${err.message} ${err.field ?? ''}`, [...canaries, c]);
        }
      }
    }
    // Nearly every patch is invalid for every config; a silent success would hide a missed check.
    expect(errors).toBeGreaterThanOrEqual(patches.length * planted.length - 6);
  });

  it('no warning about an invalid file entry carries one', () => {
    const raw = {
      servers: Object.fromEntries(
        planted.map((config, i) => [`s${i}`, { ...toStorage(config), timeout_seconds: canary(8), bogus: canary(9) }]),
      ),
    };
    const doc = parseServersDocument(raw);
    expect(doc.warnings).toHaveLength(planted.length);
    expectClean(doc.warnings.join('\n'), [...canaries, canary(8), canary(9)]);
    for (const [name, value] of Object.entries(raw.servers)) {
      try {
        parseServerConfig(name, value);
      } catch (err) {
        expectClean((err as Error).message, [...canaries, canary(8), canary(9)]);
      }
    }
  });

  it('holds for generated configs and patches (property)', () => {
    // Runs of capitals appear in no field name or message; stored secrets and
    // patch values use disjoint letters so one cannot look like the other.
    const secret = fc.stringMatching(/^[A-M]{12,24}$/);
    const patchValue = fc.stringMatching(/^[N-Z]{12,24}$/);
    const scenario = fc
      .record({ kind: fc.constantFrom('local', 'bearer', 'oauth'), s: fc.tuple(secret, secret, secret), p: patchValue })
      .chain(({ kind, s, p }) => {
        const value = fc.constantFrom<unknown>(p, [p], { v: p }, 7, null, true);
        const secretMap = fc.dictionary(fc.constantFrom('A', 'B', 'H', 'K'), value, { maxKeys: 3 });
        const auth = fc.record(
          { kind: fc.constantFrom<unknown>('none', 'bearer', 'oauth', p), token: value, client_secret: value, extra: value },
          { requiredKeys: [] },
        );
        const patch = fc.record(
          {
            type: fc.constantFrom<unknown>('local', 'remote', p),
            url: fc.constantFrom<unknown>(p, 'https://y.example', `https://${p}.example`),
            command: fc.constantFrom<unknown>([p], p, ['ok']),
            env: fc.oneof(secretMap, value),
            headers: fc.oneof(secretMap, value),
            auth: fc.oneof(auth, value),
            timeout_seconds: fc.constantFrom<unknown>(p, 5, null),
            cwd: value,
            transport: value,
            tools: value,
            extra: value,
          },
          { requiredKeys: [] },
        );
        return fc.record({ kind: fc.constant(kind), s: fc.constant(s), p: fc.constant(p), patch });
      });
    fc.assert(
      fc.property(scenario, ({ kind, s: [a, b, c], p, patch }) => {
        const current =
          kind === 'local'
            ? cfg({ type: 'local', command: ['x'], env: { A: a, B: b } })
            : kind === 'bearer'
              ? cfg({ type: 'remote', url: 'https://x.example', headers: { H: a }, auth: { kind: 'bearer', token: b } })
              : cfg({ type: 'remote', url: 'https://x.example', headers: { H: a }, auth: { kind: 'oauth', client_secret: c } });
        expectClean(JSON.stringify(toResponse(current)), [a, b, c]);
        try {
          const response = toResponse(mergePatch(current, patch));
          expectClean(JSON.stringify(response), [a, b, c]);
          // The patch value may sit in a non-secret field (command, url…); in the secret ones it is masked.
          const secretParts = response.type === 'local' ? [response.env] : [response.headers, response.auth];
          expectClean(JSON.stringify(secretParts), [p]);
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          expectClean(`${err.message} ${err.field ?? ''}`, [a, b, c, p]);
        }
      }),
      { numRuns: 500 },
    );
  });
});
