import { describe, expect, it } from 'vitest';
import { secretValues, toResponse } from '../../src/config/masking.js';
import { ServerConfig, type ServerConfigInput } from '../../src/config/schema.js';
import { parseServerConfig } from '../../src/config/validate.js';
import { isSealed, SecretOpenError } from '../../src/config/secrets/sealed.js';
import { openServerConfig, sealServerConfig } from '../../src/config/secrets/seal-config.js';
import { EACH, SERVER_SECRET_PATHS } from '../../src/config/secrets/secret-paths.js';
import { leaks, newKey, openFailure } from './keys.js';

const cfg = (input: ServerConfigInput): ServerConfig => ServerConfig.parse(input);
const PEM = '-----BEGIN PRIVATE KEY-----\ncanary-pem-4d2e\n-----END PRIVATE KEY-----';

/** One config of each type and auth kind, every secret a canary. */
const configs: Record<string, ServerConfig> = {
  local: cfg({
    type: 'local',
    command: ['node', 'server.js'],
    env: { API_KEY: 'canary-env-7f3a', 'KEY:WITH:COLONS': 'canary-env-colon-8c1e', EMPTY: '' },
  }),
  bearer: cfg({
    type: 'remote',
    url: 'https://mcp.example.com/mcp',
    headers: { 'X-Api-Key': 'canary-header-2b9c' },
    auth: { kind: 'bearer', token: 'canary-bearer-55aa' },
  }),
  urlKey: cfg({
    type: 'remote',
    url: 'https://mcp.example.com/mcp?api_key=canary-url-key-6b6b&format=json',
    auth: { kind: 'bearer', token: 'canary-bearer-66bb' },
  }),
  oauth: cfg({
    type: 'remote',
    url: 'https://mcp.example.com/mcp',
    auth: { kind: 'oauth', client_id: 'client-1', client_secret: 'canary-client-secret-0e0e' },
  }),
  oauthPublic: cfg({ type: 'remote', url: 'https://mcp.example.com/mcp', auth: { kind: 'oauth' } }),
  clientSecret: cfg({
    type: 'remote',
    url: 'https://mcp.example.com/mcp',
    auth: { kind: 'client_credentials', client_id: 'machine', client_secret: 'canary-cc-secret-1234' },
  }),
  privateKey: cfg({
    type: 'remote',
    url: 'https://mcp.example.com/mcp',
    auth: { kind: 'client_credentials', client_id: 'machine', private_key: PEM, algorithm: 'ES256' },
  }),
  workload: cfg({
    type: 'remote',
    url: 'https://mcp.example.com/mcp',
    auth: { kind: 'workload_identity', client_id: 'workload', assertion_file: '/var/run/token' },
  }),
  enterprise: cfg({
    type: 'remote',
    url: 'https://mcp.example.com/mcp',
    auth: {
      kind: 'enterprise',
      client_id: 'ent',
      client_secret: 'canary-ent-secret-9d9d',
      idp_token_endpoint: 'https://idp.example.com/token',
      idp_client_id: 'idp-client',
      idp_client_secret: 'canary-idp-secret-3f3f',
      id_token_file: '/var/run/id_token',
    },
  }),
};
const cases = Object.entries(configs);

describe('the secret paths of a server config', () => {
  it('are read from the schema: every env and header value and each secret of auth', () => {
    const shown = SERVER_SECRET_PATHS.map((path) => path.map((step) => (step === EACH ? '*' : step)).join('.'));
    expect(shown).toEqual(['env.*', 'headers.*', 'auth.token', 'auth.client_secret', 'auth.private_key', 'auth.idp_client_secret']);
  });
});

describe('sealServerConfig and openServerConfig', () => {
  const key = newKey();

  it.each(cases)('round-trips %s', (name, config) => {
    const stored = sealServerConfig(key, name, config);
    expect(parseServerConfig(name, openServerConfig(key, name, stored))).toEqual(config);
  });

  it.each(cases)('leaves no secret of %s readable, in any encoding', (name, config) => {
    const dump = JSON.stringify(sealServerConfig(key, name, config));
    expect(leaks(dump, secretValues(config))).toEqual([]);
  });

  it('a dump of every config holds no canary, raw or base64 or hex', () => {
    const dump = JSON.stringify(cases.map(([name, config]) => sealServerConfig(key, name, config)));
    const canaries = [...dump.matchAll(/canary-[a-z-]+-[0-9a-f]{4}/g)].map((m) => m[0]);
    expect(canaries).toEqual([]);
    const planted = cases.flatMap(([, config]) => secretValues(config));
    expect(planted.length).toBeGreaterThanOrEqual(9);
    expect(leaks(dump, [...planted, 'canary-pem-4d2e'])).toEqual([]);
  });

  it('keeps every field that is not a secret as it was, and every key name', () => {
    const stored = sealServerConfig(key, 'bearer', configs.bearer!);
    const { headers, auth, ...plain } = stored as Record<string, any>;
    const { headers: _h, auth: _a, ...expected } = configs.bearer as Record<string, unknown>;
    expect(plain).toEqual(expected);
    expect(Object.keys(headers)).toEqual(['X-Api-Key']);
    expect(isSealed(headers['X-Api-Key'])).toBe(true);
    expect(auth.kind).toBe('bearer');
    expect(isSealed(auth.token)).toBe(true);
  });

  it('seals a url whole when a query parameter named like a credential carries a value; keeps any other url readable', () => {
    const withKey = sealServerConfig(key, 'urlKey', configs.urlKey!) as Record<string, any>;
    expect(isSealed(withKey.url)).toBe(true);
    expect(JSON.stringify(withKey)).not.toContain('canary-url-key');
    expect(openServerConfig(key, 'urlKey', withKey)).toMatchObject({ url: (configs.urlKey as { url: string }).url });
    const url = 'https://mcp.example.com/mcp?format=json&api_key=';
    expect((sealServerConfig(key, 'plain', cfg({ type: 'remote', url })) as Record<string, any>).url).toBe(url);
  });

  it('still opens a row written before urls were sealed, the url in plain text', () => {
    const stored = sealServerConfig(key, 'urlKey', configs.urlKey!) as Record<string, any>;
    const old = { ...stored, url: (configs.urlKey as { url: string }).url };
    expect(parseServerConfig('urlKey', openServerConfig(key, 'urlKey', old))).toEqual(configs.urlKey);
  });

  it('does not open a sealed url moved to another server', () => {
    const stored = sealServerConfig(key, 'urlKey', configs.urlKey!) as Record<string, any>;
    const other = sealServerConfig(key, 'other', configs.bearer!) as Record<string, any>;
    expect(openFailure(() => openServerConfig(key, 'other', { ...other, url: stored.url })).context).toBe('server:other:url');
  });

  it('seals empty values too, and leaves null secrets null', () => {
    const local = sealServerConfig(key, 'local', configs.local!) as Record<string, any>;
    expect(isSealed(local.env.EMPTY)).toBe(true);
    const open = sealServerConfig(key, 'oauthPublic', configs.oauthPublic!) as Record<string, any>;
    expect(open.auth.client_secret).toBeNull();
  });

  it('does not change the config it seals', () => {
    const before = structuredClone(configs.enterprise);
    sealServerConfig(key, 'enterprise', configs.enterprise!);
    expect(configs.enterprise).toEqual(before);
  });

  it('leaves masking unchanged: the opened config shows the same response and redacts the same values', () => {
    for (const [name, config] of cases) {
      const opened = parseServerConfig(name, openServerConfig(key, name, sealServerConfig(key, name, config)));
      expect(toResponse(opened)).toEqual(toResponse(config));
      expect(secretValues(opened)).toEqual(secretValues(config));
    }
  });

  it('does not open under another server name (a row copied to another server)', () => {
    const stored = sealServerConfig(key, 'bearer', configs.bearer!);
    expect(() => openServerConfig(key, 'other', stored)).toThrow(SecretOpenError);
  });

  it('does not open a value moved to another field', () => {
    const stored = sealServerConfig(key, 'local', configs.local!) as Record<string, any>;
    const moved = { ...stored, env: { ...stored.env, OTHER: stored.env.API_KEY } };
    const err = openFailure(() => openServerConfig(key, 'local', moved));
    expect(err.reason).toBe('authentication');
    expect(err.context).toBe('server:local:env:OTHER');
  });

  it('keeps map keys apart even when they hold colons', () => {
    const stored = sealServerConfig(key, 'local', configs.local!) as Record<string, any>;
    const moved = { ...stored, env: { KEY: stored.env['KEY:WITH:COLONS'] } };
    expect(openFailure(() => openServerConfig(key, 'local', moved)).context).toBe('server:local:env:KEY');
  });

  it('names the key ids when the worker holds another key', () => {
    const other = newKey();
    const err = openFailure(() => openServerConfig(other, 'bearer', sealServerConfig(key, 'bearer', configs.bearer!)));
    expect(err.reason).toBe('unknown_key');
    expect(err.message).toContain(key.id);
    expect(err.message).toContain(other.id);
  });

  it('refuses a secret stored in plain text, without repeating it', () => {
    const stored = sealServerConfig(key, 'bearer', configs.bearer!) as Record<string, any>;
    const tampered = { ...stored, auth: { ...stored.auth, token: 'plain-token-value' } };
    const err = openFailure(() => openServerConfig(key, 'bearer', tampered));
    expect(err.reason).toBe('plaintext');
    expect(err.message).toBe('the secret at server:bearer:auth:token is stored in plain text, not sealed');
  });

  it('refuses a broken sealed value as malformed', () => {
    const stored = sealServerConfig(key, 'bearer', configs.bearer!) as Record<string, any>;
    const broken = { ...stored, auth: { ...stored.auth, token: { $sealed: 'aes-256-gcm', kid: key.id } } };
    expect(openFailure(() => openServerConfig(key, 'bearer', broken)).reason).toBe('malformed');
  });
});

