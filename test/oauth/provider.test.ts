// The OAuth provider's bookkeeping, without a browser: registrations kept per
// authorization server, tokens never handed out for another one, what a 401
// of the MCP server does to the cached discovery (SEP-2352), and the one
// discovery policy of its own: the RFC 8414 issuer check relaxed only where
// no protected resource metadata names the authorization server.
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IssuerMismatchError } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { RemoteServerConfig } from '../../src/config/schema.js';
import { credentialsPath, loadCredentials } from '../../src/auth/credentials-file.js';
import { discoverAuthorization } from '../../src/auth/discovery.js';
import { changeCredentials, createFileCredentialsStore, type CredentialsStore } from '../../src/auth/credentials-store.js';
import { beginConsent, createOAuthProvider, type OAuthServerConfig } from '../../src/auth/index.js';
import { consentAsUser, startAuthorizationServer, startMcpResourceServer } from './servers.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-provider-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function oauthConfig(url: string): OAuthServerConfig {
  return RemoteServerConfig.parse({ type: 'remote', url, auth: { kind: 'oauth' } }) as OAuthServerConfig;
}

/** An HTTP server answering with `handle`; every request's path and headers are recorded. Resolves with its origin. */
async function httpServer(
  handle: (req: IncomingMessage, res: ServerResponse, origin: string) => void,
): Promise<{ origin: string; paths: string[]; headers: IncomingMessage['headers'][] }> {
  const paths: string[] = [];
  const headers: IncomingMessage['headers'][] = [];
  let origin = '';
  const server: Server = createServer((req, res) => {
    paths.push(req.url ?? '/');
    headers.push(req.headers);
    handle(req, res, origin);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
  return { origin, paths, headers };
}

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** Authorization server metadata naming `issuer`, with its endpoints under `base`. */
function asMetadata(issuer: string, base: string) {
  return {
    issuer,
    authorization_endpoint: `${base}/authorize`,
    token_endpoint: `${base}/token`,
    registration_endpoint: `${base}/register`,
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
  };
}

describe('FleetOAuthProvider', () => {
  it('keeps a registration per authorization server: another issuer gets none, and a refused client loses only its own', async () => {
    const provider = await createOAuthProvider({ stateDir: stateDir(), name: 'moving', config: oauthConfig('http://127.0.0.1:1/mcp') });
    const first = 'http://as-one.example';
    const second = 'http://as-two.example/tenant';
    await provider.saveClientInformation({ client_id: 'one', redirect_uris: [provider.redirectUrl] } as never, { issuer: first });
    expect(provider.clientInformation({ issuer: second })).toBeUndefined();
    await provider.saveClientInformation({ client_id: 'two', redirect_uris: [provider.redirectUrl] } as never, { issuer: second });
    expect(provider.clientInformation({ issuer: first })?.client_id).toBe('one');
    // The SDK's trailing-slash tolerance: the same server either way.
    expect(provider.clientInformation({ issuer: `${second}/` })?.client_id).toBe('two');

    // Discovery names the second server: `invalidateCredentials('client')` (its invalid_client) drops that one only.
    await provider.saveDiscoveryState({ authorizationServerUrl: second, authorizationServerMetadata: asMetadata(second, second) as never });
    await provider.invalidateCredentials('client');
    expect(provider.clientInformation({ issuer: second })).toBeUndefined();
    expect(provider.clientInformation({ issuer: first })?.client_id).toBe('one');
  });

  it('hands out no token for an authorization server other than the one that issued it', async () => {
    const provider = await createOAuthProvider({ stateDir: stateDir(), name: 'stamped', config: oauthConfig('http://127.0.0.1:1/mcp') });
    await provider.saveTokens({ access_token: 'at-1', token_type: 'Bearer', issuer: 'http://as-one.example' } as never);
    expect((await provider.tokens({ issuer: 'http://as-two.example' }))).toBeUndefined();
    expect((await provider.tokens({ issuer: 'http://as-one.example' }))?.access_token).toBe('at-1');
    // The transport's per-request read asks for no issuer: the current tokens.
    expect((await provider.tokens())?.access_token).toBe('at-1');
  });

  it('a 401 to a request that carried the token drops the cached discovery; one without a token, or a DPoP nonce challenge, keeps it', async () => {
    const provider = await createOAuthProvider({ stateDir: stateDir(), name: 'refused', config: oauthConfig('http://127.0.0.1:1/mcp') });
    const cached = { authorizationServerUrl: 'http://as-one.example' };
    await provider.saveDiscoveryState(cached);
    const challenge = (scheme: string, headers: Record<string, string> = {}) =>
      new Response(null, { status: 401, headers: { 'www-authenticate': scheme, ...headers } });

    await provider.noteUnauthorized(challenge('Bearer'), false);
    expect(await provider.discoveryState()).toEqual(cached);
    await provider.noteUnauthorized(challenge('DPoP error="use_dpop_nonce"', { 'dpop-nonce': 'n-1' }), true);
    expect(await provider.discoveryState()).toEqual(cached);

    // Refused with our token: the next discovery starts over, at the resource metadata the challenge names.
    const mcp = await httpServer((req, res, origin) => {
      if (req.url === '/elsewhere/prm') return json(res, { resource: `${origin}/mcp`, authorization_servers: [`${origin}/as-two`] });
      if (req.url === '/.well-known/oauth-authorization-server/as-two') return json(res, asMetadata(`${origin}/as-two`, `${origin}/as-two`));
      res.writeHead(404).end();
    });
    const moved = await createOAuthProvider({ stateDir: stateDir(), name: 'moved', config: oauthConfig(`${mcp.origin}/mcp`) });
    await moved.saveDiscoveryState(cached);
    await moved.noteUnauthorized(challenge(`Bearer resource_metadata="${mcp.origin}/elsewhere/prm"`), true);
    const rediscovered = await moved.discoveryState();
    expect(rediscovered.authorizationServerUrl).toBe(`${mcp.origin}/as-two`);
    expect(mcp.paths[0]).toBe('/elsewhere/prm');
  });

  it('moves the one registration of an older credentials file under its issuer', async () => {
    const dir = stateDir();
    const file = credentialsPath(dir, 'old');
    mkdirSync(join(dir, 'oauth'));
    const client = { client_id: 'kept', issuer: 'http://as.example' };
    writeFileSync(file, JSON.stringify({ version: 1, server_url: 'http://127.0.0.1:1/mcp', client }));
    const record = await loadCredentials(file, 'http://127.0.0.1:1/mcp', null);
    expect(record.clients).toEqual({ 'http://as.example': client });
    expect(record).not.toHaveProperty('client');
  });
});

describe('discoverAuthorization', () => {
  it('without protected resource metadata, takes the issuer the origin\'s metadata names (the 2025-03-26 fallback)', async () => {
    const legacy = await httpServer((req, res, origin) => {
      if (req.url === '/.well-known/oauth-authorization-server') return json(res, asMetadata(`${origin}/oauth`, `${origin}/oauth`));
      res.writeHead(404).end();
    });
    const discovered = await discoverAuthorization(`${legacy.origin}/mcp`);
    expect(discovered.authorizationServerUrl).toBe(`${legacy.origin}/`);
    expect(discovered.authorizationServerMetadata?.issuer).toBe(`${legacy.origin}/oauth`);
    expect(discovered.resourceMetadata).toBeUndefined();
  });

  it('refuses metadata whose issuer is not the authorization server the resource metadata names', async () => {
    const server = await httpServer((req, res, origin) => {
      if (req.url === '/.well-known/oauth-protected-resource/mcp') return json(res, { resource: `${origin}/mcp`, authorization_servers: [`${origin}/as`] });
      if (req.url === '/.well-known/oauth-authorization-server/as') return json(res, asMetadata('https://attacker.example', `${origin}/as`));
      res.writeHead(404).end();
    });
    await expect(discoverAuthorization(`${server.origin}/mcp`)).rejects.toBeInstanceOf(IssuerMismatchError);
  });

  it("sends the server's config headers to its own origin only, never to an authorization server elsewhere", async () => {
    const as = await httpServer((req, res, origin) => {
      if (req.url === '/.well-known/oauth-authorization-server') return json(res, asMetadata(origin, origin));
      res.writeHead(404).end();
    });
    const mcp = await httpServer((req, res, origin) => {
      if (req.url === '/.well-known/oauth-protected-resource/mcp') return json(res, { resource: `${origin}/mcp`, authorization_servers: [as.origin] });
      res.writeHead(404).end();
    });
    await discoverAuthorization(`${mcp.origin}/mcp`, { serverHeaders: { 'x-gateway-key': 'gateway-secret' } });
    expect(mcp.headers[0]?.['x-gateway-key']).toBe('gateway-secret');
    expect(as.headers.length).toBeGreaterThan(0);
    expect(as.headers.every((sent) => sent['x-gateway-key'] === undefined)).toBe(true);
  });
});

describe('client registration', () => {
  const METADATA_URL = 'https://client.example/mcp-fleet.json';

  /** An MCP server and its authorization server in one; `cimd` says whether the latter takes client metadata documents. */
  async function authorizationServer(cimd: boolean) {
    const registrations: unknown[] = [];
    const server = await httpServer((req, res, origin) => {
      if (req.url === '/.well-known/oauth-protected-resource/mcp') return json(res, { resource: `${origin}/mcp`, authorization_servers: [origin] });
      if (req.url === '/.well-known/oauth-authorization-server') {
        return json(res, { ...asMetadata(origin, origin), client_id_metadata_document_supported: cimd });
      }
      if (req.url === '/register' && req.method === 'POST') {
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk));
        req.on('end', () => {
          registrations.push(JSON.parse(body));
          res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ ...JSON.parse(body), client_id: 'registered-client' }));
        });
        return;
      }
      res.writeHead(404).end();
    });
    return { ...server, registrations };
  }

  async function consentClientId(url: string, clientMetadataUrl: string | null, dir = stateDir()): Promise<string | null> {
    const config = RemoteServerConfig.parse({ type: 'remote', url, auth: { kind: 'oauth', client_metadata_url: clientMetadataUrl } }) as OAuthServerConfig;
    const provider = await createOAuthProvider({
      stateDir: dir,
      name: 'srv',
      config,
      ...(clientMetadataUrl === null ? {} : { clientMetadataUrl }),
    });
    const session = await beginConsent(provider, config, { timeoutMs: 5000 });
    session.cancel();
    return new URL(session.authorizationUrl).searchParams.get('client_id');
  }

  it('offers the client metadata document URL as client_id where the authorization server takes it: no registration', async () => {
    const server = await authorizationServer(true);
    expect(await consentClientId(`${server.origin}/mcp`, METADATA_URL)).toBe(METADATA_URL);
    expect(server.registrations).toEqual([]);
  });

  it('a document URL kept from an earlier consent is not offered once another one is (the public URL moved)', async () => {
    const server = await authorizationServer(true);
    const dir = stateDir();
    const moved = 'https://moved.example/oauth/client-metadata.json';
    expect(await consentClientId(`${server.origin}/mcp`, METADATA_URL, dir)).toBe(METADATA_URL);
    expect(await consentClientId(`${server.origin}/mcp`, moved, dir)).toBe(moved);
    // No document any more: the authorization server gets a registration, not the stale URL.
    expect(await consentClientId(`${server.origin}/mcp`, null, dir)).toBe('registered-client');
    expect(server.registrations).toHaveLength(1);
  });

  it('falls back to dynamic registration, as a native application, where it does not (or no document is configured)', async () => {
    const server = await authorizationServer(false);
    expect(await consentClientId(`${server.origin}/mcp`, METADATA_URL)).toBe('registered-client');
    expect(server.registrations).toEqual([expect.objectContaining({ application_type: 'native' })]);
    const plain = await authorizationServer(true);
    expect(await consentClientId(`${plain.origin}/mcp`, null)).toBe('registered-client');
  });
});

/**
 * A real authorization server and MCP server, a file store whose commits fail
 * while `failing.commits` > 0 (each failure counts one down: 1 fails the next,
 * Infinity all of them; the database gone before the commit), and a provider
 * consented through it.
 */
async function consentedBehindFlakyStore(name: string) {
  const as = await startAuthorizationServer({ accessTokenTtl: 4 });
  cleanups.push(() => as.close());
  const mcp = await startMcpResourceServer(as.issuer);
  cleanups.push(() => mcp.close());
  const config = oauthConfig(mcp.url);
  const files = createFileCredentialsStore(stateDir());
  const failing = { commits: 0 };
  const store: CredentialsStore = {
    ...files,
    lockForRefresh: (server, url, clientId, fn) =>
      files.lockForRefresh(server, url, clientId, async (current) => {
        const change = await fn(current);
        if (failing.commits > 0) {
          failing.commits -= 1;
          throw new Error('connection terminated before the commit');
        }
        return change;
      }),
  };
  const provider = await createOAuthProvider({ credentials: store, name, config });
  const session = await beginConsent(provider, config, { timeoutMs: 20_000 });
  const callback = await consentAsUser(session.authorizationUrl);
  expect(callback.status, callback.text).toBe(200);
  await session.completed;
  return { as, config, files, store, provider, failing };
}

describe('tokens a refresh received but could not store', () => {
  it('are used, stored at the first chance, and their refresh token never sent again (a store whose commit fails once)', async () => {
    const { as, config, files, store, provider, failing } = await consentedBehindFlakyStore('flaky');
    const consented = (await files.load('flaky', config.url, null)).tokens!;

    // Due at half-life: the refresh is answered, and the commit fails.
    // A token is due by its age only (4 s lifetime): waiting past half of it is the honest way.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    failing.commits = 1;
    await provider.refresh();
    const unsaved = (await provider.tokens())!;
    expect(unsaved.access_token).not.toBe(consented.access_token);
    expect(unsaved.refresh_token).not.toBe(consented.refresh_token);
    expect(as.grants.filter((grant) => grant === 'refresh_token')).toHaveLength(1);

    // A provider made now (a reconnect) uses them too, and the store gets them at the first chance.
    const again = await createOAuthProvider({ credentials: store, name: 'flaky', config });
    expect((await again.tokens())?.access_token).toBe(unsaved.access_token);
    await expect.poll(async () => (await files.load('flaky', config.url, null)).tokens?.refresh_token, { timeout: 5000 }).toBe(unsaved.refresh_token);

    // The next refresh starts from them: granted, never a reuse of the rotated refresh token.
    // Due again once the new token is past half its 4 s lifetime.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    await again.refresh();
    expect(as.tokenRequests.filter((grant) => grant === 'refresh_token')).toHaveLength(2);
    expect(as.grants.filter((grant) => grant === 'refresh_token')).toHaveLength(2);
    const stored = (await files.load('flaky', config.url, null)).tokens!;
    expect(stored.refresh_token).not.toBe(unsaved.refresh_token);
    expect((await again.tokens())?.access_token).toBe(stored.access_token);
  });

  it('give way to newer tokens another hand stored meanwhile', async () => {
    const { config, files, store, provider, failing } = await consentedBehindFlakyStore('other');

    // Due by age only: past half of the token's 4 s lifetime.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    failing.commits = Infinity;
    await provider.refresh();
    const unsaved = (await provider.tokens())!;
    // Another worker stores tokens of a consent of its own while these wait.
    const newer = { access_token: 'newer-access', token_type: 'Bearer', refresh_token: 'newer-refresh', obtained_at: Date.now() };
    await changeCredentials(files, 'other', config.url, null, (current) => ({ ...current, tokens: newer }));
    failing.commits = 0;
    const again = await createOAuthProvider({ credentials: store, name: 'other', config });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await files.load('other', config.url, null)).tokens?.refresh_token).toBe('newer-refresh');
    expect((await again.tokens())?.access_token).toBe('newer-access');
    expect(unsaved.access_token).not.toBe('newer-access');
  });
});
