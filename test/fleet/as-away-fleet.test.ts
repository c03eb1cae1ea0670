// The authorization server away, on the shared database: a worker waiting
// for it (error, unreachable, a long backoff) goes on at once when another
// worker stores fresh tokens for that server, since that worker reached the
// authorization server. Real PostgreSQL, a real oidc-provider stopped and
// started on its port, a real protected MCP server.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { generateSecretKeyText, openSharedStores } from '../../src/fleet.js';
import { createMcpHost } from '../../src/index.js';
import { ServerConfig } from '../../src/config/schema.js';
import { createOAuthProvider, isOAuthConfig } from '../../src/auth/index.js';
import { newDatabase, startPostgres, type PgCluster } from '../support/postgres.js';
import { consentAsUser, startAuthorizationServer, startMcpResourceServer } from '../oauth/servers.js';

let cluster: PgCluster;
beforeAll(async () => {
  cluster = await startPostgres();
});
afterAll(async () => {
  await cluster?.destroy();
});

const quiet = { info: () => {}, warn: () => {} };

it('a worker waiting for the authorization server retries at once when another worker stores tokens, not after its backoff', { timeout: 90_000 }, async () => {
  const url = await newDatabase(cluster);
  const env = { MCP_FLEET_SECRET_KEY: generateSecretKeyText() };
  const as = await startAuthorizationServer({ accessTokenTtl: 600 });
  const mcp = await startMcpResourceServer(as.issuer);
  const open = (workerId: string) => openSharedStores({ url, workerId, stateDir: mkdtempSync(join(tmpdir(), 'mcp-fleet-away-')), env, logger: quiet });
  const w1 = open('w1');
  const w2 = open('w2');
  await w1.reach();
  await w2.reach();
  const host = createMcpHost({
    stateDir: mkdtempSync(join(tmpdir(), 'mcp-fleet-away-')),
    workerId: 'w1',
    configStore: w1.config,
    eventStore: w1.events,
    credentialsStore: w1.credentials,
    logger: quiet,
  });
  try {
    await host.start();
    // A backoff far longer than the test waits: only the other worker's tokens can move it on.
    const config = {
      type: 'remote',
      url: mcp.url,
      transport: 'streamable_http',
      timeout_seconds: 15,
      auth: { kind: 'oauth' },
      reconnect: { max_attempts: 1, initial_delay_seconds: 60, max_delay_seconds: 120 },
    } as const;
    expect(await host.addServer('remote', config)).toMatchObject({ state: 'needs_reauth' });
    const { authorization_url: authorizationUrl } = await host.beginAuth('remote');
    expect((await consentAsUser(authorizationUrl)).status).toBe(200);
    await expect.poll(() => host.server('remote')?.state, { timeout: 20_000, interval: 25 }).toBe('ready');

    // The stored access token runs out while the authorization server is stopped: w1 waits for it.
    await as.pause();
    await w2.credentials.lockForRefresh('remote', mcp.url, null, async (current) => {
      const record = { ...current, tokens: { ...current.tokens!, expires_at: Date.now() - 1000, obtained_at: Date.now() - 601_000 } };
      return { record, result: null };
    });
    expect(await host.restartServer('remote')).toMatchObject({ state: 'error', error_kind: 'unreachable' });

    // Back; w2 refreshes (as its own connect would) and stores the tokens: w1 connects with them at once.
    await as.resume();
    const stored = host.server('remote')!;
    expect(stored.error).toContain(`could not reach the authorization server ${as.issuer} (of `);
    const parsed = ServerConfig.parse(config);
    if (!isOAuthConfig(parsed)) throw new Error('not an OAuth config');
    const provider = await createOAuthProvider({ credentials: w2.credentials, name: 'remote', config: parsed });
    await provider.refresh();
    await expect.poll(() => host.server('remote')?.state, { timeout: 10_000, interval: 25 }).toBe('ready');
    expect(as.grants).toEqual(['authorization_code', 'refresh_token']);
    expect((await host.callTool('remote__echo', { text: 'hi' })).details.is_error).toBe(false);
  } finally {
    await host.shutdown();
    await w1.close();
    await w2.close();
    await mcp.close();
    await as.close();
  }
});
