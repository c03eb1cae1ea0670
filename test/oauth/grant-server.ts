// A small real authorization server for the grants oidc-provider does not
// speak: RFC 7523 `jwt-bearer` (workload identity, and the second step of
// enterprise-managed authorization) and RFC 8693 token exchange of an ID
// token for an identity assertion grant (the IdP's step, SEP-990). It
// publishes RFC 8414 metadata and a JWKS, and issues RS256 JWT access tokens
// for the requested resource, which startMcpResourceServer accepts.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { SCOPE } from './servers.js';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

export interface GrantServer {
  issuer: string;
  /** Every token request, as `grant_type` plus what it presented. */
  requests: Array<{ grant_type: string; assertion?: string; subject_token?: string; client_id?: string }>;
  close(): Promise<void>;
}

export interface GrantServerOptions {
  /** The assertion a `jwt-bearer` request must present (the workload's JWT), or the ID-JAG this server issued. */
  workloadJwt: string;
  /** The ID token the token exchange accepts. */
  idToken: string;
  /** `client_id:client_secret` pairs accepted with Basic or body credentials. */
  clients: Record<string, string>;
  /** A refused token exchange quotes the subject token it got in `error_description`, as a careless IdP does. */
  quoteRefusedToken?: boolean;
}

export async function startGrantServer(options: GrantServerOptions): Promise<GrantServer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'grant-key', alg: 'RS256', use: 'sig' };
  const requests: GrantServer['requests'] = [];
  const issued = new Set<string>();
  const server = createServer(async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const json = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (path === '/.well-known/oauth-authorization-server') {
      return json(200, {
        issuer,
        // Required by RFC 8414 metadata parsers, though no grant here uses it.
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        grant_types_supported: [JWT_BEARER, TOKEN_EXCHANGE],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
        response_types_supported: ['code'],
      });
    }
    if (path === '/jwks') return json(200, { keys: [jwk] });
    if (path !== '/token' || req.method !== 'POST') return json(404, { error: 'not_found' });
    const form = new URLSearchParams(await readBody(req));
    const client = clientOf(req, form);
    requests.push({
      grant_type: form.get('grant_type') ?? '',
      ...(form.get('assertion') ? { assertion: form.get('assertion')! } : {}),
      ...(form.get('subject_token') ? { subject_token: form.get('subject_token')! } : {}),
      ...(client.id ? { client_id: client.id } : {}),
    });
    if (client.id !== undefined && client.secret !== undefined && options.clients[client.id] !== client.secret) {
      return json(401, { error: 'invalid_client' });
    }
    if (form.get('grant_type') === TOKEN_EXCHANGE) {
      if (form.get('subject_token') !== options.idToken) {
        const quoted = options.quoteRefusedToken === true ? { error_description: `rejected subject=${form.get('subject_token')}` } : {};
        return json(400, { error: 'invalid_grant', ...quoted });
      }
      const grant = `id-jag-${issued.size + 1}`;
      issued.add(grant);
      return json(200, { access_token: grant, issued_token_type: 'urn:ietf:params:oauth:token-type:id-jag', token_type: 'N_A', expires_in: 300 });
    }
    if (form.get('grant_type') !== JWT_BEARER) return json(400, { error: 'unsupported_grant_type' });
    const assertion = form.get('assertion') ?? '';
    if (assertion !== options.workloadJwt && !issued.has(assertion)) return json(400, { error: 'invalid_grant' });
    const resource = form.get('resource');
    if (resource === null) return json(400, { error: 'invalid_target' });
    const token = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', kid: 'grant-key' })
      .setIssuer(issuer)
      .setAudience(resource)
      .setSubject(client.id ?? 'workload')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(privateKey);
    return json(200, { access_token: token, token_type: 'Bearer', expires_in: 300, scope: SCOPE });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function clientOf(req: IncomingMessage, form: URLSearchParams): { id?: string; secret?: string } {
  const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (basic !== undefined) {
    const [id, secret] = Buffer.from(basic, 'base64').toString('utf8').split(':').map(decodeURIComponent);
    return { id, secret };
  }
  const id = form.get('client_id') ?? undefined;
  const secret = form.get('client_secret') ?? undefined;
  return { ...(id === undefined ? {} : { id }), ...(secret === undefined ? {} : { secret }) };
}

async function readBody(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body;
}
