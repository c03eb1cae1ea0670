// auth.kind "client_credentials": machine-to-machine OAuth against a real
// authorization server (oidc-provider) and an MCP resource server that takes
// only its JWTs. The client authenticates with a client secret, or with a JWT
// assertion signed by its private key; no user and no consent in either case.
import { generateKeyPairSync } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { RemoteServerConfig } from '../../src/config/schema.js';
import { toResponse } from '../../src/config/masking.js';
import { connect } from '../../src/connection/connection.js';
import { FleetError, StartFailedError } from '../../src/errors.js';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { readConfigFile, stateDirWith, untilState } from '../host/helpers.js';
import { SCOPE, startAuthorizationServer, startMcpResourceServer, type AuthorizationServer, type McpResourceServer } from './servers.js';

const SECRET = 'job-secret-0123456789abcdef';
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PRIVATE_PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const PUBLIC_JWK = { ...publicKey.export({ format: 'jwk' }), kid: 'job-key', alg: 'RS256', use: 'sig' };

const CLIENTS = [
  { client_id: 'job', client_secret: SECRET, grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope: SCOPE },
  {
    client_id: 'signed-job',
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    scope: SCOPE,
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: 'RS256',
    jwks: { keys: [PUBLIC_JWK] },
  },
];

let as: AuthorizationServer | undefined;
let mcp: McpResourceServer | undefined;
let host: McpHost | undefined;
afterEach(async () => {
  await host?.shutdown();
  host = undefined;
  await mcp?.close();
  await as?.close();
  as = mcp = undefined;
});

async function servers(): Promise<string> {
  as = await startAuthorizationServer({ accessTokenTtl: 300, clients: CLIENTS });
  mcp = await startMcpResourceServer(as.issuer);
  return mcp.url;
}

function config(url: string, auth: Record<string, unknown>): RemoteServerConfig {
  return RemoteServerConfig.parse({ type: 'remote', url, transport: 'streamable_http', auth: { kind: 'client_credentials', scopes: [SCOPE], ...auth } });
}

describe('auth.kind client_credentials', () => {
  it('gets a token with the client secret and calls the server with it', async () => {
    const url = await servers();
    const connection = await connect('job', config(url, { client_id: 'job', client_secret: SECRET, issuer: as!.issuer }));
    try {
      const result = await connection.callTool('echo', { text: 'hi' });
      expect(result.content).toEqual([{ type: 'text', text: 'hi' }]);
      expect(as!.grants).toEqual(['client_credentials']);
      expect(mcp!.presentedTokens.length).toBeGreaterThan(0);
    } finally {
      await connection.close();
    }
  });

  it('signs a JWT assertion with the private key instead (private_key_jwt)', async () => {
    const url = await servers();
    const connection = await connect('signed', config(url, { client_id: 'signed-job', private_key: PRIVATE_PEM, algorithm: 'RS256', issuer: as!.issuer }));
    try {
      expect((await connection.callTool('echo', { text: 'signed' })).content).toEqual([{ type: 'text', text: 'signed' }]);
      expect(as!.grants).toEqual(['client_credentials']);
    } finally {
      await connection.close();
    }
  });

  it('never sends the credentials to another authorization server than its issuer', async () => {
    const url = await servers();
    const error = await connect('job', config(url, { client_id: 'job', client_secret: SECRET, issuer: 'http://127.0.0.1:9/' })).then(
      () => null,
      (err: unknown) => err,
    );
    expect((error as FleetError).kind).toBe('auth');
    expect(as!.tokenRequests).toEqual([]);
  });

  it('a refused secret is an auth error, without the secret in it', async () => {
    const url = await servers();
    const wrong = 'wrong-secret-0123456789abcdef';
    const error = await connect('job', config(url, { client_id: 'job', client_secret: wrong, issuer: as!.issuer })).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(FleetError);
    expect((error as FleetError).kind).toBe('auth');
    expect((error as FleetError).message).not.toContain(wrong);
  });

  it('in a host, a refused secret is an error of kind auth, not a wait for a sign-in; a change to a refused secret is rolled back', async () => {
    const url = await servers();
    const auth = { kind: 'client_credentials', client_id: 'job', scopes: [SCOPE], issuer: as!.issuer };
    const dir = stateDirWith({
      good: { type: 'remote', url, transport: 'streamable_http', auth: { ...auth, client_secret: SECRET } },
      bad: { type: 'remote', url, transport: 'streamable_http', auth: { ...auth, client_secret: 'wrong-secret-0123456789abcdef' }, reconnect: { max_attempts: 0 } },
    });
    host = createMcpHost({ stateDir: dir, logger: { info() {}, warn() {} } });
    await host.start();
    await untilState(host, 'good', 'ready');
    await untilState(host, 'bad', 'error');
    expect(host.server('bad')).toMatchObject({ state: 'error', error_kind: 'auth', error: `OAuth with ${new URL(url).origin} failed (invalid_client)` });
    expect(host.events().some((event) => event.type === 'server.transitioned' && event.to === 'needs_reauth')).toBe(false);

    const before = readConfigFile(dir);
    const changed = await host.updateServer('good', { auth: { client_secret: 'typo-secret-0123456789abcdef' } }).then(
      () => new Error('the change was taken'),
      (err: unknown) => err,
    );
    expect(changed).toBeInstanceOf(StartFailedError);
    expect((changed as StartFailedError).kind).toBe('auth');
    // The stored secret is the good one still, and the server runs on it again.
    expect(readConfigFile(dir)).toEqual(before);
    await untilState(host, 'good', 'ready');
  });

  it('needs exactly one of client_secret and private_key, and masks both in responses', () => {
    const neither = RemoteServerConfig.safeParse({ type: 'remote', url: 'http://x/mcp', auth: { kind: 'client_credentials', client_id: 'job' } });
    expect(neither.success).toBe(false);
    expect(neither.error?.issues[0]).toMatchObject({ path: ['auth', 'client_secret'], message: 'set exactly one of client_secret and private_key' });
    const shown = JSON.stringify(toResponse(config('http://x/mcp', { client_id: 'signed-job', private_key: PRIVATE_PEM })));
    expect(shown).not.toContain('PRIVATE KEY');
    expect(JSON.parse(shown).auth).toEqual({
      kind: 'client_credentials',
      client_id: 'signed-job',
      has_client_secret: false,
      client_secret_masked: null,
      has_private_key: true,
      algorithm: 'RS256',
      scopes: [SCOPE],
      issuer: null,
    });
  });
});
