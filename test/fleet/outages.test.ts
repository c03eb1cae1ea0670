// The shared database stopped at the moments a worker holds connections of
// its own, with real workers, a real PostgreSQL and a real authorization
// server: idle after a consent (LISTEN open), a refresh holding its lock, a
// consent half done, a startup waiting on the migration lock. Each time the
// worker stays up, a ready server's calls go on, a write answers 503
// database_unavailable, and once the cluster is back a change made on one
// worker reaches the other.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATION_LOCK_KEY } from '../../src/fleet/migrations.js';
import { fixtureCommand } from '../fixtures/index.js';
import { consentAsUser, startAuthorizationServer, startMcpResourceServer, type AuthorizationServer, type McpResourceServer } from '../oauth/servers.js';
import { deadPort } from '../security/processes.js';
import { fleetTestBed, untilStateOn, type FleetWorkerProcess } from './workers.js';

const bed = fleetTestBed();
let as: AuthorizationServer;
let mcp: McpResourceServer;
/** Access tokens live 30 s: a worker refreshes one by itself 15 s after it was issued. */
const TOKEN_TTL_S = 30;
beforeAll(async () => {
  as = await startAuthorizationServer({ accessTokenTtl: TOKEN_TTL_S });
  mcp = await startMcpResourceServer(as.issuer);
});
afterAll(async () => {
  await mcp?.close();
  await as?.close();
});

/** A local server without OAuth: the one whose config change is checked to reach the other worker. */
const healthy = () => ({ type: 'local', command: fixtureCommand('healthy.mjs'), env: {} });
const oauthServer = () => ({ type: 'remote', url: mcp.url, transport: 'streamable_http', timeout_seconds: 15, auth: { kind: 'oauth' } });

/** Two workers, the first one the public URL of both, with the OAuth server `remote` configured and waiting for a consent. */
async function twoWorkers(url: string): Promise<{ a: FleetWorkerProcess; b: FleetWorkerProcess }> {
  const port = await deadPort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const a = await bed.worker('w1', url, { port, args: ['--public-url', publicUrl] });
  const b = await bed.worker('w2', url, { args: ['--public-url', publicUrl] });
  expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'echo', ...healthy() } })).status).toBe(201);
  expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'remote', ...oauthServer() } })).status).toBe(201);
  for (const on of [a, b]) await untilStateOn(on, 'remote', 'needs_reauth');
  for (const on of [a, b]) await untilStateOn(on, 'echo', 'ready');
  return { a, b };
}

/** Begins a consent on `on`: the authorization URL, the callback not taken yet. */
async function beginConsent(on: FleetWorkerProcess): Promise<string> {
  const begun = await on.request('/api/mcp/servers/remote/auth', { method: 'POST' });
  expect(begun.status, begun.text).toBe(200);
  return begun.json.authorization_url as string;
}

async function consent(a: FleetWorkerProcess, b: FleetWorkerProcess): Promise<void> {
  const callback = await consentAsUser(await beginConsent(a));
  expect(callback.status, callback.text).toBe(200);
  for (const on of [a, b]) await untilStateOn(on, 'remote', 'ready');
}

const running = (on: FleetWorkerProcess) => on.child.exitCode === null && on.child.signalCode === null;

async function call(on: FleetWorkerProcess, text: string) {
  const answer = await on.request('/api/mcp/tools/remote__echo/call', { method: 'POST', json: { arguments: { text } } });
  expect(answer.status, answer.text).toBe(200);
  expect(answer.json.details.is_error, answer.text).toBe(false);
}

/** With the cluster stopped: both workers up, a write refused with 503 database_unavailable. */
async function duringOutage(a: FleetWorkerProcess, b: FleetWorkerProcess): Promise<void> {
  // Long enough for every broken connection to have told its error.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(running(a), a.output()).toBe(true);
  expect(running(b), b.output()).toBe(true);
  const write = await b.request('/api/mcp/servers', { method: 'POST', json: { name: 'during', ...oauthServer() } });
  expect(write.status, write.text).toBe(503);
  expect(write.json.error.code).toBe('database_unavailable');
  expect(running(a), a.output()).toBe(true);
  expect(running(b), b.output()).toBe(true);
}

/**
 * With the cluster back: a change made on `a` reaches `b`, of the local `echo` and of the OAuth server `remote`.
 * With `tokensKept`, `remote`'s restarts read the stored tokens again and come back ready, with no consent.
 */
async function caughtUp(a: FleetWorkerProcess, b: FleetWorkerProcess, timeoutSeconds: number, tokensKept = true): Promise<void> {
  for (const name of ['echo', 'remote']) {
    await expect
      .poll(async () => (await a.request(`/api/mcp/servers/${name}`, { method: 'PATCH', json: { timeout_seconds: timeoutSeconds } })).status, {
        timeout: 20_000,
        interval: 250,
      })
      .toBe(200);
    await expect
      .poll(async () => (await b.request(`/api/mcp/servers/${name}`)).json.config.timeout_seconds, {
        timeout: 15_000,
        interval: 100,
        message: `the change of ${name} did not reach ${b.id}:\n${b.output()}`,
      })
      .toBe(timeoutSeconds);
  }
  if (tokensKept) {
    for (const on of [a, b]) await untilStateOn(on, 'remote', 'ready');
    await call(b, 'caught up');
  }
  expect(running(a), a.output()).toBe(true);
  expect(running(b), b.output()).toBe(true);
}

describe('the database stopped while workers hold connections of their own', { timeout: 180_000 }, () => {
  it('idle after a consent, LISTEN open: the workers stay up, calls go on, writes answer 503; back, they catch up', async () => {
    const { a, b } = await twoWorkers(await bed.database());
    await consent(a, b);
    await bed.cluster().stop('immediate');
    try {
      await duringOutage(a, b);
      await call(a, 'idle a');
      await call(b, 'idle b');
    } finally {
      await bed.cluster().start();
    }
    await caughtUp(a, b, 21);
  });

  it('a refresh holding its lock: the workers stay up, calls go on with the tokens they have, writes answer 503; back, they catch up', async () => {
    const { a, b } = await twoWorkers(await bed.database());
    await consent(a, b);
    const refreshesBefore = as.tokenRequests.filter((grant) => grant === 'refresh_token').length;
    const grantedBefore = as.grants.filter((grant) => grant === 'refresh_token').length;
    const hold = as.holdTokenRequests();
    let released = false;
    try {
      // The scheduled refresh (halfway through the token's life) takes the lock, then waits at the token endpoint.
      await hold.arrived;
      await bed.cluster().stop('immediate');
      try {
        await duringOutage(a, b);
        // The authorization server answers; the refresh's answer cannot be stored, so the
        // workers go on with the access token they have, valid for a while yet.
        hold.release();
        released = true;
        await call(a, 'refreshing a');
        await call(b, 'refreshing b');
        expect(running(a), a.output()).toBe(true);
        expect(running(b), b.output()).toBe(true);
      } finally {
        await bed.cluster().start();
      }
    } finally {
      if (!released) hold.release();
    }
    // The refresh answered during the outage rotated the refresh token: kept unsaved, used, and stored once the database is back.
    await caughtUp(a, b, 22);
    await call(a, 'caught up a');
    // That refresh was granted once, and no refresh since sent a rotated refresh token (every one of them granted).
    const refreshes = as.tokenRequests.filter((grant) => grant === 'refresh_token').length - refreshesBefore;
    const granted = as.grants.filter((grant) => grant === 'refresh_token').length - grantedBefore;
    expect(refreshes).toBeGreaterThanOrEqual(1);
    expect(granted, `${refreshes} refresh requests, ${granted} granted`).toBe(refreshes);
  });

  it('a consent half done: the workers stay up, writes answer 503; back, the consent finishes and reaches both', async () => {
    const { a, b } = await twoWorkers(await bed.database());
    const authorizationUrl = await beginConsent(a);
    await bed.cluster().stop('fast');
    try {
      await duringOutage(a, b);
    } finally {
      await bed.cluster().start();
    }
    // The consent begun before the outage is still pending: finished now, it reaches both workers.
    const callback = await consentAsUser(authorizationUrl);
    expect(callback.status, callback.text).toBe(200);
    for (const on of [a, b]) await untilStateOn(on, 'remote', 'ready');
    await call(b, 'after the outage');
    await caughtUp(a, b, 23);
  });

  it('a startup waiting on the migration lock: the worker stays up, not ready; back, it migrates and serves', async () => {
    const url = await bed.database();
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    holder.on('error', () => {});
    await holder.query('select pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    let a: FleetWorkerProcess;
    try {
      // Its API opens once an attempt to reach the database failed.
      const starting = bed.worker('w1', url, { until: /attempt 1 failed/ });
      await expect
        .poll(
          async () =>
            (await holder.query("select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted")).rows[0].n,
          { timeout: 15_000, interval: 100 },
        )
        .toBe(1);
      await bed.cluster().stop('immediate');
      void holder.end().catch(() => {});
      a = await starting;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(running(a), a.output()).toBe(true);
      expect((await a.request('/readyz')).status).toBe(503);
    } finally {
      await bed.cluster().start();
    }
    await expect.poll(async () => (await a.request('/readyz')).status, { timeout: 30_000, interval: 100 }).toBe(200);
    const b = await bed.worker('w2', url);
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'remote', ...oauthServer() } })).status).toBe(201);
    await untilStateOn(b, 'remote', 'needs_reauth');
    expect(running(a), a.output()).toBe(true);
  });
});
