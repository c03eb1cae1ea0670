// OAuth 2.1 end to end: a real authorization server (oidc-provider) in front
// of SDK-built Streamable HTTP MCP servers, the host as the client, and the
// test playing the user in the browser over plain HTTP.
import { execFile } from 'node:child_process';
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { ServerConfig } from '../../src/config/schema.js';
import { connect } from '../../src/connection/connection.js';
import type { ServerState } from '../../src/journal/events.js';
import { createOAuthProvider, isOAuthConfig } from '../../src/auth/index.js';
import { startFleet, type Fleet } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';
import { deadPort } from '../security/processes.js';
import {
  consentAsUser,
  startAuthorizationServer,
  startMcpResourceServer,
  type AuthorizationServer,
  type McpResourceServer,
} from './servers.js';
import { storedJournalLines } from '../support/journal-files.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function authorizationServer(accessTokenTtl = 600): Promise<AuthorizationServer> {
  const as = await startAuthorizationServer({ accessTokenTtl });
  cleanups.push(() => as.close());
  return as;
}

async function resourceServer(issuer: string | (() => string), prefix = 'a', options: { dpop?: boolean } = {}): Promise<McpResourceServer> {
  const server = await startMcpResourceServer(issuer, prefix, options);
  cleanups.push(() => server.close());
  return server;
}

function oauthServer(url: string, extra: Record<string, unknown> = {}) {
  return { type: 'remote', url, transport: 'streamable_http', timeout_seconds: 15, auth: { kind: 'oauth' }, ...extra };
}

interface Logged {
  lines: string[];
  logger: { info: (m: string) => void; warn: (m: string) => void };
}

function capturingLogger(): Logged {
  const lines: string[] = [];
  return { lines, logger: { info: (m) => lines.push(m), warn: (m) => lines.push(m) } };
}

async function fleetWith(servers: Record<string, unknown>, hostOptions: Parameters<typeof startFleet>[2] = {}): Promise<Fleet> {
  const fleet = await startFleet(() => servers, {}, hostOptions);
  cleanups.push(() => fleet.close());
  return fleet;
}

/** A cold restart: a new host on `fleet`'s state dir (its tokens and config), started. */
async function restartedHost(fleet: Fleet): Promise<McpHost> {
  const host = createMcpHost({ stateDir: fleet.dir, persistJournal: false, logger: { info: () => {}, warn: () => {} } });
  cleanups.push(() => host.shutdown());
  await host.start();
  return host;
}

async function untilState(host: McpHost, name: string, state: ServerState, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (host.server(name)?.state === state) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`server ${name} did not reach ${state} (now ${host.server(name)?.state}: ${host.server(name)?.error})`);
}

function credentials(dir: string, name: string) {
  return JSON.parse(readFileSync(join(dir, 'oauth', `${name}.json`), 'utf8'));
}

async function callEcho(host: McpHost, server: string, text: string) {
  const result = await host.callTool(`${server}__echo`, { text });
  expect(result.details.is_error, JSON.stringify(result.content)).toBe(false);
  return result.content[0];
}

/** Consents for `name` over the API, as the user would after `mcp-fleet auth NAME`. */
async function consentOverApi(fleet: Fleet, name: string) {
  const begun = await fleet.request(`/api/mcp/servers/${name}/auth`, { method: 'POST' });
  expect(begun.status, begun.text).toBe(200);
  const callback = await consentAsUser(begun.json.authorization_url);
  expect(callback.status, callback.text).toBe(200);
  // The loopback callback's page names the server, as the public one does.
  expect(callback.text).toContain(`Authorized ${name}. You can close this window.`);
  await untilState(fleet.host, name, 'ready');
}

/** A remote OAuth server consented to once, then its host shut down: its tokens stored for a cold start. */
async function consentedThenStopped() {
  const as = await authorizationServer();
  const mcp = await resourceServer(as.issuer);
  const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
  await untilState(fleet.host, 'remote', 'needs_reauth');
  await consentOverApi(fleet, 'remote');
  await fleet.host.shutdown();
  return { as, mcp, fleet };
}

describe('OAuth with a real authorization server', () => {
  it('first authorization: needs_reauth without holding startup, consent over the API, then ready', async () => {
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await fleet.host.settled();
    await untilState(fleet.host, 'remote', 'needs_reauth');
    expect(fleet.host.server('remote')).toMatchObject({ error_kind: 'needs_reauth', ready: false });
    expect(fleet.host.server('remote')?.error).toContain('mcp-fleet auth remote');

    await consentOverApi(fleet, 'remote');
    expect(await callEcho(fleet.host, 'remote', 'hello')).toEqual({ type: 'text', text: 'hello' });
    expect(as.grants).toEqual(['authorization_code']);
    const stored = credentials(fleet.dir, 'remote');
    expect(stored.server_url).toBe(mcp.url);
    expect(stored.tokens.expires_at).toBeGreaterThan(Date.now());
    // One registration, kept under the issuer of the authorization server it was made with.
    expect(Object.keys(stored.clients)).toEqual([as.issuer]);
    expect(stored.clients[as.issuer].redirect_uris).toEqual([`http://127.0.0.1:${stored.redirect_port}/oauth/callback`]);
    expect(as.registrations()).toBe(1);
  });

  it('a pre-registered client_id / client_secret is used as given, on its callback_port, with no registration', async () => {
    const port = await deadPort();
    const as = await startAuthorizationServer({
      accessTokenTtl: 600,
      clients: [
        {
          client_id: 'fleet-client',
          client_secret: 'canary-token-SECRET-0004-client',
          redirect_uris: [`http://127.0.0.1:${port}/oauth/callback`],
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
        },
      ],
    });
    cleanups.push(() => as.close());
    const mcp = await resourceServer(as.issuer);
    const auth = { kind: 'oauth', client_id: 'fleet-client', client_secret: 'canary-token-SECRET-0004-client', callback_port: port };
    const fleet = await fleetWith({ remote: oauthServer(mcp.url, { auth }) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    const begun = await fleet.host.beginAuth('remote');
    expect(new URL(begun.authorization_url).searchParams.get('client_id')).toBe('fleet-client');
    expect((await consentAsUser(begun.authorization_url)).status).toBe(200);
    await untilState(fleet.host, 'remote', 'ready');
    expect(await callEcho(fleet.host, 'remote', 'pre')).toEqual({ type: 'text', text: 'pre' });
    expect(as.registrations()).toBe(0);
    const stored = credentials(fleet.dir, 'remote');
    expect(stored).toMatchObject({ clients: {}, configured_client_id: 'fleet-client', redirect_port: port });
    // The secret stays in the config, masked in every answer (fleet.request checks the canary).
    expect(readFileSync(join(fleet.dir, 'oauth', 'remote.json'), 'utf8')).not.toContain('canary-token-SECRET-0004');
    await fleet.request('/api/mcp/servers/remote');
  });

  it('403 insufficient_scope for a scope the token lacks: no refresh (it cannot widen a grant), the server needs consent and the next consent asks for the scope', async () => {
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    await consentOverApi(fleet, 'remote');
    const refused = await fleet.host.callTool('remote__admin', {});
    expect(refused.details.is_error).toBe(true);
    // A refresh keeps the granted scope (RFC 6749 §6), so the step-up goes straight to a new authorization: the user's.
    expect(as.grants).toEqual(['authorization_code']);
    await untilState(fleet.host, 'remote', 'needs_reauth');
    expect(fleet.host.server('remote')?.error).toContain('requires the scope "mcp:tools mcp:admin"');

    const begun = await fleet.host.beginAuth('remote');
    // offline_access too: the authorization server offers it, and mcp-fleet keeps a refresh token (SEP-2207).
    expect(new URL(begun.authorization_url).searchParams.get('scope')).toBe('mcp:tools mcp:admin offline_access');
    expect((await consentAsUser(begun.authorization_url)).status).toBe(200);
    await untilState(fleet.host, 'remote', 'ready');
    const admin = await fleet.host.callTool('remote__admin', {});
    expect(admin.content[0]).toEqual({ type: 'text', text: 'admin done' });
  });

  it('a cold restart (new host, same state dir) reuses the stored tokens: ready with no consent', async () => {
    const { as, fleet } = await consentedThenStopped();

    const again = await restartedHost(fleet);
    await untilState(again, 'remote', 'ready');
    expect(again.events().some((event) => event.type === 'server.transitioned' && event.to === 'needs_reauth')).toBe(false);
    expect(await callEcho(again, 'remote', 'again')).toEqual({ type: 'text', text: 'again' });
    expect(as.grants).toEqual(['authorization_code']);
  });

  it('a cold start whose stored token expired refreshes it first: pending → authenticating → ready, one refresh', async () => {
    const { as, mcp, fleet } = await consentedThenStopped();

    const stored = credentials(fleet.dir, 'remote');
    stored.tokens.expires_at = Date.now() - 1000;
    stored.tokens.obtained_at = stored.tokens.expires_at - 600_000;
    writeFileSync(join(fleet.dir, 'oauth', 'remote.json'), JSON.stringify(stored));
    const presented = mcp.presentedTokens.length;

    const again = await restartedHost(fleet);
    await untilState(again, 'remote', 'ready');
    const path = again
      .events()
      .flatMap((event) => (event.type === 'server.transitioned' && event.server === 'remote' ? [event.to] : []));
    expect(path).toEqual(['pending', 'authenticating', 'ready']);
    expect(as.tokenRequests).toEqual(['authorization_code', 'refresh_token']);
    // The expired token never reached the resource server: the connect used the fresh one.
    expect(mcp.presentedTokens.slice(presented)).not.toContain(stored.tokens.access_token);
    expect(await callEcho(again, 'remote', 'refreshed')).toEqual({ type: 'text', text: 'refreshed' });
  });

  it('auth.dpop: tokens bound to a key kept beside them, presented with a proof per request, across a restart and a refresh', async () => {
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer, 'a', { dpop: true });
    const fleet = await fleetWith({ remote: oauthServer(mcp.url, { auth: { kind: 'oauth', dpop: true } }) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    await consentOverApi(fleet, 'remote');
    expect(await callEcho(fleet.host, 'remote', 'bound')).toEqual({ type: 'text', text: 'bound' });
    const stored = credentials(fleet.dir, 'remote');
    expect(stored.tokens.token_type).toMatch(/^dpop$/i);
    expect(stored.dpop_key).toMatchObject({ alg: 'ES256', private_jwk: { kty: 'EC', crv: 'P-256' } });
    const keys = new Set(mcp.dpopKeys);
    expect(keys.size).toBe(1);
    // The config shows that DPoP is on; the key never leaves the credentials file.
    const view = await fleet.request('/api/mcp/servers/remote');
    expect(view.json.config.auth).toMatchObject({ kind: 'oauth', dpop: true });
    expect(view.text).not.toContain(stored.dpop_key.private_jwk.d);
    await fleet.host.shutdown();

    // A cold start on an expired token: the refresh is signed with the stored key, and so is every call after it.
    stored.tokens.expires_at = Date.now() - 1000;
    stored.tokens.obtained_at = stored.tokens.expires_at - 600_000;
    writeFileSync(join(fleet.dir, 'oauth', 'remote.json'), JSON.stringify(stored));
    const again = await restartedHost(fleet);
    await untilState(again, 'remote', 'ready');
    expect(as.tokenRequests).toEqual(['authorization_code', 'refresh_token']);
    expect(await callEcho(again, 'remote', 'still bound')).toEqual({ type: 'text', text: 'still bound' });
    expect(new Set(mcp.dpopKeys)).toEqual(keys);
    expect(credentials(fleet.dir, 'remote').dpop_key).toEqual(stored.dpop_key);
  });

  it('publicUrl without a database: the browser comes back to the management app (here through a proxy), once', async () => {
    const proxy = await forwardingProxy();
    cleanups.push(() => proxy.close());
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) }, { publicUrl: proxy.url });
    proxy.forwardTo(fleet.served.port);
    await untilState(fleet.host, 'remote', 'needs_reauth');
    const begun = await fleet.request('/api/mcp/servers/remote/auth', { method: 'POST' });
    expect(new URL(begun.json.authorization_url).searchParams.get('redirect_uri')).toBe(`${proxy.url}/oauth/callback`);
    const callback = await consentAsUser(begun.json.authorization_url);
    expect(callback.status, callback.text).toBe(200);
    expect(callback.text).toContain('Authorized remote');
    await untilState(fleet.host, 'remote', 'ready');
    expect(await callEcho(fleet.host, 'remote', 'via proxy')).toEqual({ type: 'text', text: 'via proxy' });
    // No loopback port was registered, and the state was used up.
    expect(credentials(fleet.dir, 'remote').clients[as.issuer].redirect_uris).toEqual([`${proxy.url}/oauth/callback`]);
    const again = await fetch(`${proxy.url}/oauth/callback?state=made-up&code=x`);
    expect(again.status).toBe(400);
  });

  it('a DPoP-only resource server refuses Bearer tokens: without auth.dpop the server needs consent again', async () => {
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer, 'a', { dpop: true });
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    const begun = await fleet.request('/api/mcp/servers/remote/auth', { method: 'POST' });
    expect((await consentAsUser(begun.json.authorization_url)).status).toBe(200);
    await untilState(fleet.host, 'remote', 'needs_reauth');
    expect(credentials(fleet.dir, 'remote').dpop_key).toBeNull();
    expect(mcp.dpopKeys).toEqual([]);
  });

  it('an access token the server refuses before its expiry: the SDK refresh after the 401 goes through the lock, one refresh, then ready', async () => {
    const { as, mcp, fleet } = await consentedThenStopped();

    // Not expired by its stamp, but not a token the server accepts (as after a key rotation at the authorization server).
    const stored = credentials(fleet.dir, 'remote');
    stored.tokens.access_token = 'refused-before-expiry';
    writeFileSync(join(fleet.dir, 'oauth', 'remote.json'), JSON.stringify(stored));

    const again = await restartedHost(fleet);
    await untilState(again, 'remote', 'ready');
    expect(mcp.presentedTokens).toContain('refused-before-expiry');
    expect(as.tokenRequests).toEqual(['authorization_code', 'refresh_token']);
    const now = credentials(fleet.dir, 'remote').tokens;
    expect(now.access_token).not.toBe('refused-before-expiry');
    expect(now.refresh_token).not.toBe(stored.tokens.refresh_token);
    expect(await callEcho(again, 'remote', 'refreshed')).toEqual({ type: 'text', text: 'refreshed' });
  });

  it('an expiring access token is refreshed in the background, the rotated refresh token stored; the server stays ready', async () => {
    const as = await authorizationServer(2);
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    await consentOverApi(fleet, 'remote');
    const first = credentials(fleet.dir, 'remote').tokens;
    // Half way through the first token's 2 s lifetime a background refresh runs: wait for the rotated tokens on disk.
    await expect
      .poll(() => credentials(fleet.dir, 'remote').tokens?.refresh_token, { timeout: 20_000 })
      .not.toBe(first.refresh_token);
    expect(as.grants.filter((grant) => grant === 'refresh_token').length).toBeGreaterThan(0);
    const now = credentials(fleet.dir, 'remote').tokens;
    expect(now.access_token).not.toBe(first.access_token);
    expect(now.refresh_token).not.toBe(first.refresh_token);
    const presented = mcp.presentedTokens.length;
    expect(await callEcho(fleet.host, 'remote', 'fresh')).toEqual({ type: 'text', text: 'fresh' });
    // The call went out with a refreshed token: the expired one was never presented again.
    expect(mcp.presentedTokens.length).toBeGreaterThan(presented);
    expect(mcp.presentedTokens.slice(presented)).not.toContain(first.access_token);
    expect(fleet.host.server('remote')?.state).toBe('ready');
    expect(as.grants.filter((grant) => grant === 'authorization_code')).toHaveLength(1);
  });

  it('a revoked refresh token moves the server to needs_reauth (auth), never to a consent by itself; consent makes it ready', async () => {
    const as = await authorizationServer(2);
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    await consentOverApi(fleet, 'remote');
    await as.revokeGrantOf(credentials(fleet.dir, 'remote').tokens.refresh_token);

    await untilState(fleet.host, 'remote', 'needs_reauth');
    const view = fleet.host.server('remote')!;
    expect(view.error_kind).toBe('needs_reauth');
    expect(view.error).toContain('invalid_grant');
    expect(fleet.host.tools()).toEqual([]);
    expect(credentials(fleet.dir, 'remote').tokens).toBeNull();

    await consentOverApi(fleet, 'remote');
    expect(await callEcho(fleet.host, 'remote', 'back')).toEqual({ type: 'text', text: 'back' });
  });

  it('tokens stamped by another authorization server: the refresh token is never sent to this one, the server needs consent', async () => {
    const { as, mcp, fleet } = await consentedThenStopped();

    // The stored tokens now say another authorization server issued them, and they are due for a refresh.
    const stored = credentials(fleet.dir, 'remote');
    expect(stored.tokens.issuer.startsWith(as.issuer)).toBe(true);
    stored.tokens.issuer = 'http://127.0.0.1:9/elsewhere';
    stored.tokens.expires_at = Date.now() - 1000;
    stored.tokens.obtained_at = stored.tokens.expires_at - 600_000;
    writeFileSync(join(fleet.dir, 'oauth', 'remote.json'), JSON.stringify(stored));
    const presented = mcp.presentedTokens.length;

    const again = await restartedHost(fleet);
    await untilState(again, 'remote', 'needs_reauth');
    expect(again.server('remote')?.error_kind).toBe('needs_reauth');
    // The token endpoint saw the consent's code exchange and nothing since: no refresh request at all.
    expect(as.tokenRequests).toEqual(['authorization_code']);
    expect(credentials(fleet.dir, 'remote').tokens).toBeNull();
    expect(mcp.presentedTokens.slice(presented)).not.toContain(stored.tokens.access_token);

    const begun = await again.beginAuth('remote');
    expect((await consentAsUser(begun.authorization_url)).status).toBe(200);
    await untilState(again, 'remote', 'ready');
    expect(await callEcho(again, 'remote', 'rebound')).toEqual({ type: 'text', text: 'rebound' });
  });

  it('a server that moves to another authorization server: its refused token sends the worker to the new one, registered anew there, the old registration kept and its refresh token never sent to the new one', async () => {
    const first = await authorizationServer();
    const second = await authorizationServer();
    let issuer = first.issuer;
    const mcp = await resourceServer(() => issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    await consentOverApi(fleet, 'remote');
    expect(await callEcho(fleet.host, 'remote', 'before')).toEqual({ type: 'text', text: 'before' });

    // The server now names (and accepts tokens of) the second authorization server only.
    issuer = second.issuer;
    const refused = await fleet.host.callTool('remote__echo', { text: 'moved' });
    expect(refused.details.is_error).toBe(true);
    await untilState(fleet.host, 'remote', 'needs_reauth');
    expect(second.tokenRequests).toEqual([]);

    const begun = await fleet.host.beginAuth('remote');
    expect(begun.authorization_url.startsWith(`${second.issuer}/auth?`)).toBe(true);
    expect((await consentAsUser(begun.authorization_url)).status).toBe(200);
    await untilState(fleet.host, 'remote', 'ready');
    expect(await callEcho(fleet.host, 'remote', 'after')).toEqual({ type: 'text', text: 'after' });
    expect([first.registrations(), second.registrations()]).toEqual([1, 1]);
    const stored = credentials(fleet.dir, 'remote');
    expect(Object.keys(stored.clients).sort()).toEqual([first.issuer, second.issuer].sort());
    expect(stored.tokens.issuer).toBe(second.issuer);
    expect(second.tokenRequests).toEqual(['authorization_code']);
  });

  it('a callback with a wrong state is refused and the consent keeps waiting for the real one', async () => {
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    const { authorization_url: url } = await fleet.host.beginAuth('remote');
    expect(fleet.host.server('remote')?.state).toBe('authenticating');
    // Asking again while it waits gives the same consent.
    expect((await fleet.host.beginAuth('remote')).authorization_url).toBe(url);

    const port = credentials(fleet.dir, 'remote').redirect_port;
    const forged = await fetch(`http://127.0.0.1:${port}/oauth/callback?code=forged&state=not-the-state`);
    expect(forged.status).toBe(400);
    const missing = await fetch(`http://127.0.0.1:${port}/oauth/callback?code=forged`);
    expect(missing.status).toBe(400);
    expect(fleet.host.server('remote')?.state).toBe('authenticating');
    expect(as.grants).toEqual([]);

    const callback = await consentAsUser(url);
    expect(callback.status).toBe(200);
    await untilState(fleet.host, 'remote', 'ready');
  });

  it('a refusal at the authorization server (error=access_denied with our state) ends the consent: needs_reauth', async () => {
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    const { authorization_url: url } = await fleet.host.beginAuth('remote');
    const state = new URL(url).searchParams.get('state');
    const port = credentials(fleet.dir, 'remote').redirect_port;
    const refused = await fetch(`http://127.0.0.1:${port}/oauth/callback?error=access_denied&state=${state}`);
    expect(refused.status).toBe(400);
    await untilState(fleet.host, 'remote', 'needs_reauth');
    expect(fleet.host.server('remote')?.error).toContain('refused (access_denied)');
    expect(await portFree(port)).toBe(true);
    expect(credentials(fleet.dir, 'remote').tokens).toBeNull();
  });

  it('an answer whose iss names another authorization server (RFC 9207) is refused before its code is redeemed', async () => {
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    const { authorization_url: url } = await fleet.host.beginAuth('remote');
    const state = new URL(url).searchParams.get('state');
    const port = credentials(fleet.dir, 'remote').redirect_port;
    // A mix-up: another server's answer, delivered with our state.
    const mixedUp = await fetch(`http://127.0.0.1:${port}/oauth/callback?code=stolen&state=${state}&iss=${encodeURIComponent('https://evil.example')}`);
    expect(mixedUp.status).toBe(502);
    await untilState(fleet.host, 'remote', 'needs_reauth');
    expect(fleet.host.server('remote')?.error).toContain('issuer does not match');
    expect(as.tokenRequests).toEqual([]);
    expect(credentials(fleet.dir, 'remote').tokens).toBeNull();
  });

  it('a cancelled consent (restart, timeout) frees its port and leaves the server needs_reauth, not authorized', async () => {
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) }, { consentTimeoutMs: 1500 });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    const { authorization_url: url } = await fleet.host.beginAuth('remote');
    const port: number = credentials(fleet.dir, 'remote').redirect_port;
    expect(await portFree(port)).toBe(false);

    const restarted = await fleet.request('/api/mcp/servers/remote/restart', { method: 'POST' });
    expect(restarted.json).toMatchObject({ state: 'needs_reauth', error_kind: 'needs_reauth' });
    expect(await portFree(port)).toBe(true);
    // The user finishing the cancelled consent late reaches nobody.
    await expect(consentAsUser(url)).rejects.toThrow();
    expect(fleet.host.server('remote')?.state).toBe('needs_reauth');

    // Same port again (the registered redirect_uri); this time nobody answers in time.
    await fleet.host.beginAuth('remote');
    expect(credentials(fleet.dir, 'remote').redirect_port).toBe(port);
    await untilState(fleet.host, 'remote', 'needs_reauth');
    expect(fleet.host.server('remote')?.error).toContain('consent was not completed within');
    expect(await portFree(port)).toBe(true);
    expect(as.grants).toEqual([]);
  });

  it('two servers on different URLs never share tokens, and a changed URL gets no stored token', async () => {
    const as = await authorizationServer();
    const a = await resourceServer(as.issuer, 'a');
    const b = await resourceServer(as.issuer, 'b');
    const fleet = await fleetWith({ alpha: oauthServer(a.url), beta: oauthServer(b.url) });
    await untilState(fleet.host, 'alpha', 'needs_reauth');
    await untilState(fleet.host, 'beta', 'needs_reauth');
    await consentOverApi(fleet, 'alpha');
    await consentOverApi(fleet, 'beta');
    await callEcho(fleet.host, 'alpha', 'a');
    await callEcho(fleet.host, 'beta', 'b');
    const alpha = credentials(fleet.dir, 'alpha');
    const beta = credentials(fleet.dir, 'beta');
    expect([alpha.server_url, beta.server_url]).toEqual([a.url, b.url]);
    expect(a.presentedTokens).toContain(alpha.tokens.access_token);
    expect(b.presentedTokens).toContain(beta.tokens.access_token);
    // Presented, not accepted: each server would refuse the other's token, so only what was sent tells.
    expect(a.presentedTokens.filter((token) => b.presentedTokens.includes(token))).toEqual([]);

    // alpha pointed at beta's URL: its stored token is for the old URL and is not sent.
    const moved = await fleet.request('/api/mcp/servers/alpha', { method: 'PATCH', body: { url: b.url } });
    expect(moved.json).toMatchObject({ state: 'needs_reauth', error_kind: 'needs_reauth' });
    expect(b.presentedTokens).not.toContain(alpha.tokens.access_token);
  });

  it('twenty concurrent calls with an expired token cause one refresh request', async () => {
    // Long-lived tokens: the expiry comes from the client's clock below, so a slow machine cannot
    // let the refreshed token run out too while the twenty calls are still going out.
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    await consentOverApi(fleet, 'remote');
    await fleet.host.shutdown();

    // A connection without the ready-state watcher: only the calls themselves can refresh.
    const config = ServerConfig.parse(oauthServer(mcp.url));
    if (!isOAuthConfig(config)) throw new Error('not an OAuth config');
    let skew = 0;
    const provider = await createOAuthProvider({ stateDir: fleet.dir, name: 'remote', config, now: () => Date.now() + skew });
    const connection = await connect('remote', config, { authProvider: provider });
    cleanups.push(() => connection.close());
    expect(provider.needsRefresh()).toBe(false);
    // The client's clock moves past the stored token's expiry (time is the subject: no waiting for it).
    skew = credentials(fleet.dir, 'remote').tokens.expires_at - Date.now() + 1000;
    expect(provider.needsRefresh()).toBe(true);
    const before = as.grants.length;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => connection.callTool('echo', { text: `call ${i}` })),
    );
    expect(results.map((result) => result.content[0])).toEqual(
      Array.from({ length: 20 }, (_, i) => ({ type: 'text', text: `call ${i}` })),
    );
    expect(as.grants.slice(before)).toEqual(['refresh_token']);
  });

  it('the token file is 0600 and no token reaches an API response, a log line or the journal', async () => {
    const as = await authorizationServer(2);
    const mcp = await resourceServer(as.issuer);
    const logged = capturingLogger();
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) }, { logger: logged.logger, persistJournal: true });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    await consentOverApi(fleet, 'remote');
    // A background refresh too, so its tokens are among those looked for below.
    await expect.poll(() => as.grants, { timeout: 20_000 }).toContain('refresh_token');
    await callEcho(fleet.host, 'remote', 'x');
    const file = join(fleet.dir, 'oauth', 'remote.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(fleet.dir, 'oauth')).mode & 0o777).toBe(0o700);
    // Left open to others by hand: the next read narrows both again.
    chmodSync(file, 0o644);
    chmodSync(join(fleet.dir, 'oauth'), 0o755);
    await fleet.host.restartServer('remote');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(fleet.dir, 'oauth')).mode & 0o777).toBe(0o700);

    const stored = credentials(fleet.dir, 'remote');
    const secrets = [...new Set([...mcp.presentedTokens, stored.tokens.refresh_token, stored.code_verifier])];
    const outputs = [
      (await fleet.request('/api/mcp/servers')).text,
      (await fleet.request('/api/mcp/servers/remote')).text,
      (await fleet.request('/api/mcp/catalog')).text,
      (await fleet.request('/api/mcp/catalog/diff')).text,
      (await fleet.request('/api/mcp/events')).text,
      storedJournalLines(fleet.dir).join('\n'),
      logged.lines.join('\n'),
      JSON.stringify(fleet.host.events()),
    ];
    for (const secret of secrets) for (const output of outputs) expect(output).not.toContain(secret);
  });

  it('`mcp-fleet auth NAME` asks the running worker for consent and prints the authorization URL', async () => {
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const fleet = await fleetWith({ remote: oauthServer(mcp.url) });
    await untilState(fleet.host, 'remote', 'needs_reauth');
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
      execFile(
        process.execPath,
        [resolve('bin/mcp-fleet.js'), 'auth', 'remote', '--url', `http://127.0.0.1:${fleet.served.port}`],
        { env: { ...process.env, MCP_FLEET_API_TOKEN: TOKEN }, timeout: 30_000 },
        (err, stdout, stderr) => done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    const url = /^(http:\/\/\S+)$/m.exec(run.stdout)?.[1];
    expect(url?.startsWith(`${as.issuer}/auth?`)).toBe(true);
    expect(fleet.host.server('remote')?.state).toBe('authenticating');
    expect((await consentAsUser(url!)).status).toBe(200);
    await untilState(fleet.host, 'remote', 'ready');
  });
});

/** Whether `port` on 127.0.0.1 can be listened on right now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A reverse proxy on a port known before the worker's: what a public URL points at. */
async function forwardingProxy(): Promise<{ url: string; forwardTo(port: number): void; close(): Promise<void> }> {
  const { createServer: createHttpServer, request: forward } = await import('node:http');
  let target = 0;
  const server = createHttpServer((req, res) => {
    const upstream = forward(
      { host: '127.0.0.1', port: target, path: req.url, method: req.method, headers: { ...req.headers, host: `127.0.0.1:${target}` } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    forwardTo: (port) => (target = port),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
