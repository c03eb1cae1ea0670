// A real OpenID Connect provider (oidc-provider) that issues JWT access tokens
// for a resource (RFC 8707), with groups as an extra claim. Two ways to a
// token: a pre-registered client per user through the client credentials grant
// (its `sub` is its client id; `brief` gets tokens that expire after one
// second), or what an MCP client does: dynamic registration, then the
// authorization code flow with PKCE where a user (an account of USERS) signs in
// on the provider's development pages.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/** Client id (the token's `sub`) → groups. */
const USERS: Record<string, string[]> = { alice: ['eng'], bob: ['sales'], brief: ['eng'] };
const SECRET = 'gateway-idp-client-secret';

export interface Idp {
  issuer: string;
  /** A JWT access token for `user`, for `resource` (its audience). */
  token(user: string, resource: string): Promise<string>;
  close(): Promise<void>;
}

export async function startIdp(): Promise<Idp> {
  const http = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: Object.keys(USERS).map((id) => ({ client_id: id, client_secret: SECRET, grant_types: ['client_credentials'], redirect_uris: [], response_types: [] })),
    scopes: ['mcp'],
    cookies: { keys: ['gateway-idp-cookie-key'] },
    findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
    pkce: { required: () => true },
    features: {
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => undefined as unknown as string,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx: { oidc: { client?: { clientId: string } } }, resource: string) => ({
          scope: 'mcp',
          audience: resource,
          accessTokenTTL: ctx.oidc.client?.clientId === 'brief' ? 1 : 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    // A signed-in user's groups, else the client's (client credentials).
    extraTokenClaims: async (_ctx: unknown, token: { accountId?: string; clientId?: string }) => ({ groups: USERS[token.accountId ?? token.clientId ?? ''] ?? [] }),
  });
  http.on('request', provider.callback());
  return {
    issuer,
    async token(user, resource) {
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${user}:${SECRET}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: 'mcp' }),
      });
      const answer = (await response.json()) as { access_token?: string };
      if (!response.ok || answer.access_token === undefined) throw new Error(`token for ${user}: HTTP ${response.status} ${JSON.stringify(answer)}`);
      return answer.access_token;
    },
    close() {
      http.closeAllConnections();
      return new Promise((resolve) => http.close(() => resolve()));
    },
  };
}
