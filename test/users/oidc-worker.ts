// A worker whose page signs users in through a real OpenID Connect provider
// (oidc-provider, its development login and consent pages): accounts with
// groups, one confidential client whose redirect URI is the worker's
// callback. Two fixture servers, one for the `eng` group, one for `sales`.
import { createServer, type Server } from 'node:http';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Provider from 'oidc-provider';
import { createManagementApp } from '../../src/http/app.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { healthy, tempDir } from '../http/fleet.js';
import { TOKEN } from '../http/helpers.js';
import { freePort } from '../support/ports.js';
import { until } from '../support/wait.js';

const CLIENT_ID = 'fleet-page';
const CLIENT_SECRET = 'oidc-client-secret-for-the-test';
/** The provider's accounts: a login of one of these names signs in as it, with its groups. */
const ACCOUNTS: Record<string, string[]> = { alice: ['eng', 'staff'], bob: ['sales'], admin: [] };

export interface OidcWorker {
  /** The provider: its issuer, and every account it signed in. */
  idp: { issuer: string; logins: string[] };
  host: McpHost;
  app: Listening;
  close(): Promise<void>;
}

async function startProvider(port: number, redirectUri: string): Promise<{ issuer: string; server: Server; logins: string[] }> {
  const issuer = `http://127.0.0.1:${port}`;
  const logins: string[] = [];
  const provider = new Provider(issuer, {
    clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }],
    cookies: { keys: ['oidc-test-cookie-key'] },
    scopes: ['openid', 'profile', 'groups'],
    claims: { openid: ['sub'], profile: ['preferred_username'], groups: ['groups'] },
    findAccount: async (_ctx: unknown, sub: string) => {
      logins.push(sub);
      return { accountId: sub, claims: async () => ({ sub, preferred_username: sub, groups: ACCOUNTS[sub] ?? [] }) };
    },
    pkce: { required: () => true },
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600 },
  });
  const server = createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return { issuer, server, logins };
}

/** The provider, then the worker's host and app with `--oidc-issuer` set to it; both servers ready. */
export async function startOidcWorker(): Promise<OidcWorker> {
  const dir = tempDir();
  writeFileSync(
    join(dir, 'mcp_servers.json'),
    JSON.stringify({ servers: { eng: healthy(dir, 'eng', { access: { groups: ['eng'] } }), sales: healthy(dir, 'sales', { access: { groups: ['sales'] } }) } }),
  );
  const host = createMcpHost({ stateDir: dir, persistJournal: false, logger: { info: () => {}, warn: () => {} } });
  // The provider's port first: the app names its issuer, the provider names the app's callback.
  const idpPort = await freePort();
  const app = await listen(
    createManagementApp(host, { token: TOKEN, oidc: { issuer: `http://127.0.0.1:${idpPort}`, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } }),
    { port: 0 },
  );
  const idp = await startProvider(idpPort, `http://127.0.0.1:${app.port}/ui/oidc/callback`);
  await host.start();
  await until(() => host.server('eng')?.state === 'ready' && host.server('sales')?.state === 'ready', 'both servers ready');
  return {
    idp: { issuer: idp.issuer, logins: idp.logins },
    host,
    app,
    async close() {
      await app.close();
      idp.server.closeAllConnections();
      await new Promise((resolve) => idp.server.close(resolve));
      await host.shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
