// A real OpenID Connect provider (oidc-provider) that issues JWT access tokens
// for a resource (RFC 8707): each client stands for one user through the
// client credentials grant (its `sub` is its client id), with groups as an
// extra claim. `brief` gets tokens that expire after one second.
import { createServer, type Server } from 'node:http';
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
    features: {
      clientCredentials: { enabled: true },
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
    extraTokenClaims: async (_ctx: unknown, token: { clientId?: string }) => ({ groups: USERS[token.clientId ?? ''] ?? [] }),
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
