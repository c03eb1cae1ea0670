// OAuth credentials in the PostgreSQL a fleet shares (issue 15), on a real
// cluster (test/support/postgres.ts) with a real authorization server that
// rotates refresh tokens (oidc-provider, test/oauth/servers.ts): records
// sealed at rest, one refresh at a time across workers, and the errors a
// wrong key or a stopped database give.
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RemoteServerConfig } from '../../src/config/schema.js';
import { connect } from '../../src/connection/connection.js';
import { DatabaseUnavailableError, openDatabase, type Database } from '../../src/fleet/database.js';
import { migrate } from '../../src/fleet/migrations.js';
import { CredentialsRecord, emptyRecord } from '../../src/auth/credentials-file.js';
import { grantKey, type CredentialsStore } from '../../src/auth/credentials-store.js';
import { createDpopKey } from '../../src/auth/dpop-key.js';
import { beginConsent, createOAuthProvider, type OAuthServerConfig } from '../../src/auth/index.js';
import { createPgCredentialsStore } from '../../src/auth/pg-credentials-store.js';
import { scopeChallengeFetch } from '../../src/auth/step-up.js';
import type { SecretKey } from '../../src/config/secrets/secret-key.js';
import { FleetError } from '../../src/errors.js';
import { postgresAvailable, startPostgres, type PgCluster } from '../support/postgres.js';
import { leaks, newKey } from '../secrets/keys.js';
import { consentAsUser, startAuthorizationServer, startMcpResourceServer, type AuthorizationServer, type McpResourceServer } from './servers.js';

const ISSUER = 'https://as.example.com/';

let cluster: PgCluster;
let databases = 0;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  if (!postgresAvailable) console.error("initdb/pg_ctl not found: install Debian's postgresql package");
  cluster = await startPostgres();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await cluster?.destroy();
});

/** A fresh migrated database in `on` (the shared cluster by default); its URL. */
async function freshDatabase(on: PgCluster = cluster, url = on.url): Promise<string> {
  const name = `credentials_${++databases}`;
  const admin = new pg.Client({ connectionString: on.url });
  await admin.connect();
  await admin.query(`create database ${name}`).finally(() => admin.end());
  const fresh = url.replace(/\/[^/]*$/, `/${name}`);
  const db = openDatabase(fresh);
  try {
    await migrate(db.pool);
  } finally {
    await db.close();
  }
  return fresh;
}

/** A worker's pool on `url` (closed after the test). */
function pool(url: string, workerId: string): Database {
  const db = openDatabase(url, { applicationName: workerId });
  cleanups.push(() => db.close());
  return db;
}

/** A worker: its own pool on `url`, and the credentials store on it. */
function worker(url: string, key: SecretKey, workerId: string): { db: Database; store: CredentialsStore } {
  const db = pool(url, workerId);
  return { db, store: createPgCredentialsStore({ db, key, workerId }) };
}

async function rowText(db: Database, server: string): Promise<string> {
  const { rows } = await db.pool.query<{ text: string }>('select record::text as text from credentials where server = $1', [server]);
  return rows[0]?.text ?? '';
}

async function authorizationServer(): Promise<AuthorizationServer> {
  const as = await startAuthorizationServer({ accessTokenTtl: 600 });
  cleanups.push(() => as.close());
  return as;
}

async function resourceServer(issuer: string, options: { dpop?: boolean } = {}): Promise<McpResourceServer> {
  const server = await startMcpResourceServer(issuer, 'a', options);
  cleanups.push(() => server.close());
  return server;
}

function oauthConfig(url: string, auth: Record<string, unknown> = {}): OAuthServerConfig {
  return RemoteServerConfig.parse({ type: 'remote', url, transport: 'streamable_http', auth: { kind: 'oauth', ...auth } }) as OAuthServerConfig;
}

/** One consent as the user gives it, with a provider on `store`: the tokens end up stored there. */
async function consented(store: CredentialsStore, config: OAuthServerConfig): Promise<void> {
  const provider = await createOAuthProvider({ credentials: store, name: 'remote', config });
  const session = await beginConsent(provider, config, { timeoutMs: 20_000 });
  const callback = await consentAsUser(session.authorizationUrl);
  expect(callback.status, callback.text).toBe(200);
  await session.completed;
}

/** A record with every kind of secret a server's credentials hold, each a canary. */
async function fullRecord(serverUrl: string): Promise<CredentialsRecord> {
  const { stored: dpopKey } = await createDpopKey();
  return CredentialsRecord.parse({
    ...emptyRecord(serverUrl, null),
    redirect_port: 43_210,
    clients: { [ISSUER]: { client_id: 'dyn-client', client_secret: 'canary-client-secret-6a6a', issuer: ISSUER } },
    tokens: {
      access_token: 'canary-access-4c4c',
      token_type: 'Bearer',
      refresh_token: 'canary-refresh-91b2',
      id_token: 'canary-id-token-7e7e',
      scope: 'mcp:tools',
      issuer: ISSUER,
      expires_at: 1_900_000_000_000,
      obtained_at: 1_800_000_000_000,
    },
    discovery: { authorizationServerUrl: ISSUER },
    code_verifier: 'canary-verifier-3d3d',
    dpop_key: dpopKey,
  });
}

describe('credentials in PostgreSQL', () => {
  it('round-trips a record; another URL or client reads an empty one keeping the port; delete removes it', async () => {
    const key = newKey();
    const { db, store } = worker(await freshDatabase(), key, 'worker-a');
    const record = await fullRecord('https://mcp.example.com/mcp');
    expect(await store.load('remote', record.server_url, null)).toEqual(emptyRecord(record.server_url, null));

    await store.save('remote', record);
    expect(await store.load('remote', record.server_url, null)).toEqual(record);
    // Read by another worker with the same key.
    const other = createPgCredentialsStore({ db: pool(db.url, 'worker-b'), key, workerId: 'worker-b' });
    expect(await other.load('remote', record.server_url, null)).toEqual(record);
    const { rows } = await db.pool.query('select updated_by from credentials where server = $1', ['remote']);
    expect(rows).toEqual([{ updated_by: 'worker-a' }]);

    expect(await store.load('remote', 'https://elsewhere.example.com/mcp', null)).toEqual({
      ...emptyRecord('https://elsewhere.example.com/mcp', null),
      redirect_port: 43_210,
    });
    expect(await store.load('remote', record.server_url, 'pre-registered')).toEqual({
      ...emptyRecord(record.server_url, 'pre-registered'),
      redirect_port: 43_210,
    });

    await store.delete('remote');
    expect(await store.load('remote', record.server_url, null)).toEqual(emptyRecord(record.server_url, null));
  });

  it('per-user grants: each under its own key, sealed to it; deleted by server, by principal, or both, never a server\'s own record', async () => {
    const url = await freshDatabase();
    const key = newKey();
    const { db, store } = worker(url, key, 'w1');
    const record = (token: string): CredentialsRecord => ({
      ...emptyRecord('https://mcp.example.com/mcp', null),
      tokens: { access_token: token, token_type: 'Bearer' },
    });
    // `my_srv` and `myXsrv`: a LIKE pattern's `_` must not match any character.
    const keys = {
      shared: 'my_srv',
      alice: grantKey('my_srv', 'alice'),
      bob: grantKey('my_srv', 'bob'),
      aliceElsewhere: grantKey('myXsrv', 'alice'),
      bobElsewhere: grantKey('myXsrv', 'bob'),
    };
    for (const [name, stored] of Object.entries(keys)) await store.save(stored, record(`${name}-token`));
    expect((await store.load(keys.alice, 'https://mcp.example.com/mcp', null)).tokens?.access_token).toBe('alice-token');
    // A grant's sealed record does not open under another principal's key.
    const row = await db.pool.query('select record from credentials where server = $1', [keys.alice]);
    await db.pool.query('update credentials set record = $1 where server = $2', [row.rows[0].record, keys.bob]);
    await expect(store.load(keys.bob, 'https://mcp.example.com/mcp', null)).rejects.toThrow(/cannot open/);

    const present = async () => {
      const { rows } = await db.pool.query<{ server: string }>('select server from credentials order by server');
      return rows.map((found) => Object.entries(keys).find(([, stored]) => stored === found.server)?.[0]).sort();
    };
    await store.deleteGrants!({ server: 'my_srv', principal: 'alice' });
    expect(await present()).toEqual(['aliceElsewhere', 'bob', 'bobElsewhere', 'shared']);
    await store.deleteGrants!({ principal: 'bob' });
    expect(await present()).toEqual(['aliceElsewhere', 'shared']);
    await store.deleteGrants!({ server: 'my_srv' });
    expect(await present()).toEqual(['aliceElsewhere', 'shared']);
    await store.deleteGrants!({ server: 'myXsrv' });
    expect(await present()).toEqual(['shared']);
    // Every worker with the fleet's key signs consent bindings alike.
    const other = worker(url, key, 'w2').store;
    expect((await other.bindingKey!()).equals(await store.bindingKey!())).toBe(true);
    expect((await worker(url, newKey(), 'w3').store.bindingKey!()).equals(await store.bindingKey!())).toBe(false);
  });

  it('stores no token, client secret, PKCE verifier or DPoP private key readable', async () => {
    const key = newKey();
    const { db, store } = worker(await freshDatabase(), key, 'worker-a');
    const canaries = await fullRecord('https://mcp.example.com/mcp');
    await store.save('canaries', canaries);
    const canaryText = await rowText(db, 'canaries');
    expect(canaryText).not.toContain('canary');
    const secrets = [
      canaries.tokens!.access_token,
      canaries.tokens!.refresh_token!,
      canaries.tokens!.id_token!,
      canaries.clients[ISSUER]!.client_secret as string,
      canaries.code_verifier!,
      canaries.dpop_key!.private_jwk.d,
    ];
    expect(leaks(canaryText, secrets)).toEqual([]);
    // What is not secret stays readable: the DPoP key's public part names it.
    expect(canaryText).toContain(canaries.dpop_key!.private_jwk.x);

    // A real consent, DPoP-bound: its tokens, verifier and key as the authorization server issued them.
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer, { dpop: true });
    const config = oauthConfig(mcp.url, { dpop: true });
    await consented(store, config);
    const record = await store.load('remote', mcp.url, null);
    expect(record.tokens?.token_type).toMatch(/^dpop$/i);
    const real = [record.tokens!.access_token, record.tokens!.refresh_token!, record.code_verifier!, record.dpop_key!.private_jwk.d];
    const text = await rowText(db, 'remote');
    expect(text).toContain(as.issuer);
    expect(leaks(text, real)).toEqual([]);
  });

  it('three workers, twenty concurrent refreshes of one expired token: one refresh_token grant, the same fresh tokens everywhere', async () => {
    const key = newKey();
    const url = await freshDatabase();
    const workers = ['worker-a', 'worker-b', 'worker-c'].map((id) => worker(url, key, id));
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const config = oauthConfig(mcp.url);
    await consented(workers[0]!.store, config);
    const stored = await workers[0]!.store.load('remote', mcp.url, null);
    const expired = stored.tokens!;

    // Each worker's clock is past the stored token's expiry (time is the subject: no waiting for it).
    const skew = expired.expires_at! - Date.now() + 1000;
    const now = () => Date.now() + skew;
    const providers = await Promise.all(
      workers.map(({ store }) => createOAuthProvider({ credentials: store, name: 'remote', config, now })),
    );
    // One more worker that holds the expired tokens and does not refresh: the SDK's own refresh, below.
    const stale = await createOAuthProvider({ credentials: workers[2]!.store, name: 'remote', config, now });
    for (const provider of providers) expect(provider.needsRefresh()).toBe(true);

    const before = as.tokenRequests.length;
    await Promise.all(Array.from({ length: 20 }, (_, i) => providers[i % providers.length]!.refresh()));
    expect(as.tokenRequests.slice(before)).toEqual(['refresh_token']);

    const fresh = await Promise.all(providers.map(async (provider) => (await provider.tokens())?.access_token));
    expect(new Set(fresh).size).toBe(1);
    expect(fresh[0]).not.toBe(expired.access_token);
    const committed = (await workers[1]!.store.load('remote', mcp.url, null)).tokens!;
    expect(committed.access_token).toBe(fresh[0]);
    expect(committed.refresh_token).not.toBe(expired.refresh_token);
    for (const provider of providers) expect(provider.needsRefresh()).toBe(false);

    // A provider made after the commit (a starting server's refresh step makes its own) finds nothing due.
    const late = await createOAuthProvider({ credentials: workers[1]!.store, name: 'remote', config, now });
    await late.refresh();
    expect(as.tokenRequests.slice(before)).toEqual(['refresh_token']);

    // The adopted tokens work: a worker that did not refresh calls the server with them.
    const connection = await connect('remote', config, { authProvider: providers[2]! });
    cleanups.push(() => connection.close());
    expect((await connection.callTool('echo', { text: 'hi' })).content).toEqual([{ type: 'text', text: 'hi' }]);

    // The SDK refreshing by itself (after a 401) with the old refresh token: answered under the lock
    // with the tokens already committed, never sent (a rotated token used twice would revoke the grant).
    const sdkFetch = scopeChallengeFetch(stale)!;
    const answer = await sdkFetch(`${as.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: expired.refresh_token! }),
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ access_token: fresh[0], refresh_token: committed.refresh_token });
    expect(as.tokenRequests.slice(before)).toEqual(['refresh_token']);
  });

  it('an authorization server that is down fails the refresh as itself, not as the database, and commits nothing', async () => {
    const key = newKey();
    const { store } = worker(await freshDatabase(), key, 'worker-a');
    const as = await authorizationServer();
    const mcp = await resourceServer(as.issuer);
    const config = oauthConfig(mcp.url);
    await consented(store, config);
    const before = await store.load('remote', mcp.url, null);
    const skew = before.tokens!.expires_at! - Date.now() + 1000;
    const provider = await createOAuthProvider({ credentials: store, name: 'remote', config, now: () => Date.now() + skew });
    await as.close();

    const failure = await provider.refresh().then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(Error);
    expect(failure).not.toBeInstanceOf(DatabaseUnavailableError);
    expect((await store.load('remote', mcp.url, null)).tokens).toEqual(before.tokens);
  });

  it('a worker with another secret key is told which key sealed the record and which it holds, and changes nothing', async () => {
    const key = newKey();
    const url = await freshDatabase();
    const { db, store } = worker(url, key, 'worker-a');
    const record = await fullRecord('https://mcp.example.com/mcp');
    await store.save('remote', record);
    const storedText = await rowText(db, 'remote');

    const wrong = newKey();
    const misconfigured = worker(url, wrong, 'worker-b').store;
    const failure = await misconfigured.load('remote', record.server_url, null).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(FleetError);
    expect((failure as FleetError).kind).toBe('config');
    expect((failure as FleetError).message).toContain(`server "remote"`);
    expect((failure as FleetError).message).toContain(`sealed with key ${key.id}, but the worker's key is ${wrong.id}`);

    const config = oauthConfig(record.server_url);
    await expect(createOAuthProvider({ credentials: misconfigured, name: 'remote', config })).rejects.toThrow(key.id);
    await expect(
      misconfigured.lockForRefresh('remote', record.server_url, null, async (current) => ({ record: current, result: null })),
    ).rejects.toThrow(wrong.id);
    expect(await rowText(db, 'remote')).toBe(storedText);
  });

  it('tokens stored while a watcher was not listening are told once it listens again', async () => {
    const key = newKey();
    const url = await freshDatabase();
    const a = worker(url, key, 'worker-a');
    const b = worker(url, key, 'worker-b');
    const told: string[] = [];
    const stop = b.store.watchTokens!((server) => told.push(server));
    cleanups.push(async () => stop());
    const listeners = async () =>
      (
        await a.db.pool.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where application_name = 'mcp-fleet listen mcp_fleet_tokens' and query ilike 'listen%'",
        )
      ).rows[0]!.n;
    await expect.poll(listeners, { timeout: 10_000, interval: 20 }).toBe(1);
    await a.store.save('first', await fullRecord('https://mcp.example.com/first'));
    await expect.poll(() => told, { timeout: 5_000, interval: 20 }).toEqual(['first']);

    // The watcher's connection is cut; the next tokens are stored before it is back (its first retry waits 250 ms).
    await a.db.pool.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'mcp-fleet listen mcp_fleet_tokens'");
    await expect.poll(listeners, { timeout: 5_000, interval: 5 }).toBe(0);
    await a.store.save('second', await fullRecord('https://mcp.example.com/second'));
    // Not from the lost notification but from the rows, read once LISTEN is back.
    await expect.poll(() => told.includes('second'), { timeout: 10_000, interval: 20 }).toBe(true);
    // What this worker stored itself is never told to it.
    await b.store.save('own', await fullRecord('https://mcp.example.com/own'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(told).not.toContain('own');
  });

  it('the database stopped: load and a refresh reject with DatabaseUnavailableError naming host:port, never the password', async () => {
    const own = await startPostgres();
    cleanups.push(() => own.destroy());
    // Trust auth ignores the password: it is here to be kept out of every message.
    const password = 'db-password-canary-5e5e';
    const url = await freshDatabase(own, own.url.replace('postgres@', `postgres:${password}@`));
    const key = newKey();
    const { store } = worker(url, key, 'worker-a');
    const record = await fullRecord('https://mcp.example.com/mcp');
    await store.save('remote', record);
    await own.stop();

    const failure = await store.load('remote', record.server_url, null).then(
      () => null,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(DatabaseUnavailableError);
    const message = (failure as Error).message;
    expect(message).toContain(`the database at 127.0.0.1:${own.port} is unavailable`);
    expect(message).not.toContain(password);
    const locked = store.lockForRefresh('remote', record.server_url, null, async () => ({ record: null, result: null }));
    await expect(locked).rejects.toBeInstanceOf(DatabaseUnavailableError);
    await expect(locked).rejects.not.toThrow(password);
    await expect(createOAuthProvider({ credentials: store, name: 'remote', config: oauthConfig(record.server_url) })).rejects.toBeInstanceOf(
      DatabaseUnavailableError,
    );
  });
});
