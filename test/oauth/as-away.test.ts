// The authorization server away: a refresh that gets no answer (the server
// stopped: connection refused) or a 5xx is `unreachable`, not `needs_reauth`.
// Calls fail fast, the server retries with the reconnect backoff and becomes
// ready by itself, with the stored refresh token, once the authorization
// server is back. A refused refresh (invalid_grant) still asks for consent,
// and a consent begun while the authorization server is away answers at once
// with `unreachable`. A real oidc-provider stopped and started on its port,
// a real protected MCP server, a host in-process and a real `serve` process.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import type { ServerState } from '../../src/journal/events.js';
import { startFleet, type Fleet } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';
import { BIN } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';
import { until } from '../support/wait.js';
import { consentAsUser, startAuthorizationServer, startMcpResourceServer, type AuthorizationServer } from './servers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// Short waits, so that a recovery within the backoff is seconds.
const RECONNECT = { max_attempts: 2, initial_delay_seconds: 0.5, max_delay_seconds: 2 };

function oauthServer(url: string) {
  return { type: 'remote', url, transport: 'streamable_http', timeout_seconds: 15, auth: { kind: 'oauth' }, reconnect: RECONNECT };
}

async function authorizationServer(accessTokenTtl = 600): Promise<AuthorizationServer> {
  const as = await startAuthorizationServer({ accessTokenTtl });
  cleanups.push(() => as.close());
  return as;
}

function untilState(host: McpHost, name: string, state: ServerState, timeoutMs = 20_000): Promise<void> {
  const view = () => host.server(name);
  return until(() => view()?.state === state, `${name} to be ${state}`, timeoutMs).catch((error: Error) => {
    throw new Error(`${error.message}: it is ${view()?.state} (${view()?.error_kind}: ${view()?.error})`);
  });
}

/** A fleet whose remote OAuth server was consented to over the API and is ready. */
async function consentedFleet(accessTokenTtl = 600) {
  const as = await authorizationServer(accessTokenTtl);
  const mcp = await startMcpResourceServer(as.issuer);
  cleanups.push(() => mcp.close());
  const fleet = await startFleet(() => ({ remote: oauthServer(mcp.url) }));
  cleanups.push(() => fleet.close());
  await untilState(fleet.host, 'remote', 'needs_reauth');
  const begun = await fleet.request('/api/mcp/servers/remote/auth', { method: 'POST' });
  expect(begun.status, begun.text).toBe(200);
  expect((await consentAsUser(begun.json.authorization_url)).status).toBe(200);
  await untilState(fleet.host, 'remote', 'ready');
  return { as, mcp, fleet };
}

function credentialsFile(fleet: Fleet): string {
  return join(fleet.dir, 'oauth', 'remote.json');
}

/** Marks the stored access token expired, as it is after a night off: the next start must refresh first. */
function expireStoredToken(fleet: Fleet): void {
  const record = JSON.parse(readFileSync(credentialsFile(fleet), 'utf8'));
  record.tokens.expires_at = Date.now() - 1000;
  writeFileSync(credentialsFile(fleet), JSON.stringify(record));
}

function storedRefreshToken(fleet: Fleet): string {
  return JSON.parse(readFileSync(credentialsFile(fleet), 'utf8')).tokens.refresh_token;
}

/** A cold start of a host on `fleet`'s state dir (its config and stored tokens). */
async function restartedHost(fleet: Fleet): Promise<McpHost> {
  await fleet.host.shutdown();
  const host = createMcpHost({ stateDir: fleet.dir, persistJournal: false, logger: { info: () => {}, warn: () => {} } });
  cleanups.push(() => host.shutdown());
  await host.start();
  return host;
}

/** The server's transitions journaled after `since` (a `seq`). */
function transitions(host: McpHost, since = 0) {
  return host.events(since).flatMap((event) => (event.type === 'server.transitioned' && event.server === 'remote' ? [event] : []));
}

function lastSeq(host: McpHost): number {
  return host.events().at(-1)?.seq ?? 0;
}

// How fast is bench's business; here: the call fails without waiting for the authorization server.
async function expectFailure(host: McpHost): Promise<string> {
  const result = await host.callTool('remote__echo', { text: 'hi' });
  expect(result.details.is_error).toBe(true);
  return JSON.stringify(result.content);
}

describe('the authorization server away', { timeout: 90_000 }, () => {
  it('a ready server whose token runs out while the authorization server is stopped: error/unreachable, calls fail fast, ready again by itself once it is back', async () => {
    const { as, mcp, fleet } = await consentedFleet(4);
    const refreshToken = storedRefreshToken(fleet);
    const consented = lastSeq(fleet.host);
    await as.pause();
    // The background refresh gets no answer; when the token has run out the server cannot be used.
    await untilState(fleet.host, 'remote', 'error', 15_000);
    const view = fleet.host.server('remote')!;
    expect(view.error_kind).toBe('unreachable');
    // Refused, as a rule; a pooled connection cut by the stop reads as reset or closed.
    expect(view.error).toMatch(new RegExp(`^could not reach the authorization server ${as.issuer} \\(of ${new URL(mcp.url).origin}\\): connection (refused|reset|closed)`));
    expect(await expectFailure(fleet.host)).toContain('not ready');
    const seen = transitions(fleet.host, consented);
    expect(seen.some((event) => event.to === 'error' && event.error_kind === 'unreachable')).toBe(true);
    expect(seen.some((event) => event.to === 'needs_reauth')).toBe(false);
    // Still retrying, never asking for a person, while it stays away: two more refreshes fail the same way.
    const failedRefreshes = () => transitions(fleet.host, consented).filter((event) => event.to === 'error').length;
    await until(() => failedRefreshes() >= 3, 'two more failed refreshes', 15_000);
    expect(transitions(fleet.host, consented).some((event) => event.to === 'needs_reauth')).toBe(false);

    await as.resume();
    await untilState(fleet.host, 'remote', 'ready', 10_000);
    const result = await fleet.host.callTool('remote__echo', { text: 'back' });
    expect(result.details.is_error).toBe(false);
    // The stored grant carried on: refreshed with it, no new consent.
    expect(as.grants.filter((grant) => grant === 'authorization_code')).toHaveLength(1);
    expect(as.grants).toContain('refresh_token');
    expect(storedRefreshToken(fleet)).not.toBe(refreshToken);
    expect(transitions(fleet.host, consented).some((event) => event.to === 'needs_reauth')).toBe(false);
  });

  it('a cold start on an expired token while the token endpoint answers 503: error/unreachable, then ready once it answers', async () => {
    const { as, mcp, fleet } = await consentedFleet();
    expireStoredToken(fleet);
    as.failWith({ status: 503, pathSuffix: '/token' });
    const host = await restartedHost(fleet);
    await untilState(host, 'remote', 'error');
    expect(host.server('remote')).toMatchObject({ error_kind: 'unreachable', ready: false });
    expect(host.server('remote')?.error).toBe(`the authorization server ${as.issuer} (of ${new URL(mcp.url).origin}) answered HTTP 503 (/token)`);
    expect(await expectFailure(host)).toContain('HTTP 503');
    const refreshesWhileAway = as.grants.length;

    as.failWith(null);
    await untilState(host, 'remote', 'ready', 10_000);
    expect(as.grants.slice(refreshesWhileAway)).toEqual(['refresh_token']);
    expect((await host.callTool('remote__echo', { text: 'again' })).details.is_error).toBe(false);
    expect(transitions(host).some((event) => event.to === 'needs_reauth')).toBe(false);
  });

  it('a refused refresh (invalid_grant) still asks for consent: needs_reauth, no retries', async () => {
    const { as, fleet } = await consentedFleet();
    await as.revokeGrantOf(storedRefreshToken(fleet));
    expireStoredToken(fleet);
    const host = await restartedHost(fleet);
    await untilState(host, 'remote', 'needs_reauth');
    expect(host.server('remote')?.error_kind).toBe('needs_reauth');
    const requests = as.tokenRequests.length;
    // No event marks a retry that never comes: wait past when the 0.5 s backoff would have sent a few.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(as.tokenRequests.length).toBe(requests);
    expect(host.server('remote')?.state).toBe('needs_reauth');
  });

  it('a consent begun while the authorization server is away answers 503 unreachable at once, and the server still waits for consent', async () => {
    const as = await authorizationServer();
    const mcp = await startMcpResourceServer(as.issuer);
    cleanups.push(() => mcp.close());
    const fleet = await startFleet(() => ({ remote: oauthServer(mcp.url) }));
    cleanups.push(() => fleet.close());
    await untilState(fleet.host, 'remote', 'needs_reauth');
    await as.pause();
    const begun = await fleet.request('/api/mcp/servers/remote/auth', { method: 'POST' });
    expect(begun.status, begun.text).toBe(503);
    expect(begun.json.error.code).toBe('unreachable');
    expect(begun.json.error.message).toContain(`could not reach the authorization server ${as.issuer} (of ${new URL(mcp.url).origin}): connection`);
    expect(fleet.host.server('remote')?.state).toBe('needs_reauth');

    // Back: the same request starts the consent.
    await as.resume();
    const again = await fleet.request('/api/mcp/servers/remote/auth', { method: 'POST' });
    expect(again.status, again.text).toBe(200);
    expect((await consentAsUser(again.json.authorization_url)).status).toBe(200);
    await untilState(fleet.host, 'remote', 'ready');
  });

  it('a failure names the authorization server by its own address, not that of the MCP server: stopped, then answering 503', async () => {
    const as = await authorizationServer();
    const mcp = await startMcpResourceServer(as.issuer);
    cleanups.push(() => mcp.close());
    const fleet = await startFleet(() => ({ remote: oauthServer(mcp.url) }));
    cleanups.push(() => fleet.close());
    await untilState(fleet.host, 'remote', 'needs_reauth');
    const server = new URL(mcp.url).origin;
    expect(as.issuer).not.toBe(server);

    // Where to look is the authorization server's host: the MCP server answered.
    await as.pause();
    const stopped = await fleet.request('/api/mcp/servers/remote/auth', { method: 'POST' });
    expect(stopped.status, stopped.text).toBe(503);
    expect(stopped.json.error.message).toBe(
      `cannot start OAuth consent with ${server}: could not reach the authorization server ${as.issuer} (of ${server}): connection refused (ECONNREFUSED)`,
    );

    await as.resume();
    as.failWith({ status: 503, pathSuffix: '/.well-known/oauth-authorization-server' });
    const failing = await fleet.request('/api/mcp/servers/remote/auth', { method: 'POST' });
    expect(failing.status, failing.text).toBe(503);
    expect(failing.json.error.message).toBe(
      `cannot start OAuth consent with ${server}: the authorization server ${as.issuer} (of ${server}) answered HTTP 503 (/.well-known/oauth-authorization-server)`,
    );
    expect(fleet.host.server('remote')?.state).toBe('needs_reauth');
  });

  it('a real serve process: unreachable while the authorization server is stopped, ready by itself after it restarts', async () => {
    const { as, fleet } = await consentedFleet();
    expireStoredToken(fleet);
    await fleet.host.shutdown();
    await as.pause();
    const worker = spawn(process.execPath, [BIN, 'serve', '--state-dir', fleet.dir, '--port', '0'], {
      env: cleanEnv({ MCP_FLEET_API_TOKEN: TOKEN }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((done) => worker.once('exit', done));
    cleanups.push(async () => {
      if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGTERM');
      await exited;
    });
    let output = '';
    worker.stdout!.on('data', (chunk) => (output += chunk));
    worker.stderr!.on('data', (chunk) => (output += chunk));
    await until(() => /API\s+http:\/\/127\.0\.0\.1:\d+\//.test(output), 'serve to print its API address').catch((error: Error) => {
      throw new Error(`${error.message}:\n${output}`);
    });
    const api = /API\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(output)![1]!;
    const view = async () => (await (await fetch(`${api}/api/mcp/servers/remote`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as any;

    await expect.poll(async () => (await view()).state, { timeout: 20_000, interval: 100 }).toBe('error');
    expect((await view()).error_kind).toBe('unreachable');
    await as.resume();
    await expect.poll(async () => (await view()).state, { timeout: 10_000, interval: 100 }).toBe('ready');
    expect(as.grants.filter((grant) => grant === 'authorization_code')).toHaveLength(1);
    expect(output).not.toMatch(/needs_reauth|the token was refused/);
    expect(output).not.toContain(storedRefreshToken(fleet));
  });
});
