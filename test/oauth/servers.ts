// A real OAuth 2.1 authorization server (oidc-provider: dynamic client
// registration, PKCE, refresh-token rotation, short JWT access tokens bound to
// the resource) and SDK-built Streamable HTTP MCP servers in front of it that
// accept only tokens it issued for them (JWT checked against its JWKS, with
// issuer and audience) and publish their protected-resource metadata.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createHash } from 'node:crypto';
import { calculateJwkThumbprint, createRemoteJWKSet, EmbeddedJWK, jwtVerify, type JWTPayload } from 'jose';
import Provider from 'oidc-provider';
import { z } from 'zod';

export interface AuthorizationServer {
  issuer: string;
  provider: Provider;
  /** `grant_type` of every successful token request, in order. */
  grants: string[];
  /** `grant_type` of every request the token endpoint received, refused ones included, in order. */
  tokenRequests: string[];
  /** Dynamic client registrations so far. */
  registrations(): number;
  /** With `clientIdMetadataDocuments`: the URL of every client ID metadata document it fetched, in order. */
  documentFetches: string[];
  /**
   * Holds every token request from now on until `release()`: `arrived`
   * resolves when the first one is waiting (a refresh holding its lock, say).
   */
  holdTokenRequests(): { arrived: Promise<void>; release(): void };
  /** Withdraws the grant a refresh token belongs to (as a user or an admin would): every later refresh is refused. */
  revokeGrantOf(refreshToken: string): Promise<void>;
  /** Stops listening (connections refused), keeping every grant it issued, until `resume`. */
  pause(): Promise<void>;
  /** Listens again on the same port, as the same server (its grants and keys intact). */
  resume(): Promise<void>;
  /** Answers the requests whose path ends with `pathSuffix` with `status` (a failing proxy in front); null: answers normally again. */
  failWith(failure: { status: number; pathSuffix: string } | null): void;
  close(): Promise<void>;
}

export interface AuthorizationServerOptions {
  /** Access-token lifetime in seconds. */
  accessTokenTtl: number;
  /** Pre-registered clients (oidc-provider client metadata). */
  clients?: Array<Record<string, unknown>>;
  /**
   * Take URL client ids (Client ID Metadata Documents, SEP-991): the document
   * is fetched over HTTPS trusting `ca` (PEM), the test's own certificate
   * authority, since the client lives on 127.0.0.1 behind a TLS proxy.
   */
  clientIdMetadataDocuments?: { ca: string };
}

export const SCOPE = 'mcp:tools';
/** Needed by the `admin` tool only: asked for with `403 insufficient_scope` (step-up). */
export const ADMIN_SCOPE = 'mcp:admin';

export async function startAuthorizationServer(options: AuthorizationServerOptions): Promise<AuthorizationServer> {
  const http = createServer();
  const port = await listen(http);
  const issuer = `http://127.0.0.1:${port}`;
  const documentFetches: string[] = [];
  const cimd = options.clientIdMetadataDocuments;
  const provider = new Provider(issuer, {
    clients: options.clients ?? [],
    ...(cimd && {
      // oidc-provider's own fetch refuses loopback addresses (SSRF protection); this one trusts the test's CA instead.
      fetch: (url: URL | string, init: RequestInit) => {
        documentFetches.push(String(url));
        return fetchTrusting(cimd.ca, url, init);
      },
    }),
    cookies: { keys: ['oauth-test-cookie-key'] },
    scopes: ['openid', 'offline_access', SCOPE, ADMIN_SCOPE],
    findAccount: async (_ctx: unknown, sub: string) => ({ accountId: sub, claims: async () => ({ sub }) }),
    features: {
      registration: { enabled: true },
      ...(cimd && { clientIdMetadataDocument: { enabled: true, ack: 'draft-02' } }),
      revocation: { enabled: true },
      clientCredentials: { enabled: true },
      // Binds tokens to a key only for a client that sends a DPoP proof (RFC 9449).
      dPoP: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => undefined as unknown as string,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, resource: string) => ({
          scope: `${SCOPE} ${ADMIN_SCOPE}`,
          audience: resource,
          accessTokenTTL: options.accessTokenTtl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    pkce: { required: () => true },
    rotateRefreshToken: true,
    // Every client that may use refresh tokens gets one, offline_access or not.
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) => client.grantTypeAllowed('refresh_token'),
    ttl: {
      RefreshToken: 3600,
      AccessToken: options.accessTokenTtl,
      Grant: 3600,
      Interaction: 600,
      Session: 3600,
    },
  });
  const grants: string[] = [];
  provider.on('grant.success', (ctx) => grants.push(String(ctx.oidc.params?.grant_type)));
  const tokenRequests: string[] = [];
  let hold: { arrived: () => void; released: Promise<void> } | undefined;
  provider.use(async (ctx, next) => {
    const request = ctx as unknown as { method: string; path: string };
    if (hold !== undefined && request.method === 'POST' && request.path === '/token') {
      hold.arrived();
      await hold.released;
    }
    await next();
    if (ctx.oidc?.route === 'token') tokenRequests.push(String(ctx.oidc.params?.grant_type));
  });
  let registrations = 0;
  provider.on('registration_create.success', () => registrations++);
  const answer = provider.callback();
  let failure: { status: number; pathSuffix: string } | null = null;
  http.on('request', (req: IncomingMessage, res) => {
    if (failure !== null && (req.url ?? '/').split('?')[0]!.endsWith(failure.pathSuffix)) {
      res.writeHead(failure.status, { 'content-type': 'text/html' }).end('<html>upstream unavailable</html>');
      return;
    }
    void answer(req, res);
  });
  return {
    issuer,
    provider,
    grants,
    tokenRequests,
    registrations: () => registrations,
    documentFetches,
    holdTokenRequests() {
      let arrived!: () => void;
      let release!: () => void;
      const arrival = new Promise<void>((resolve) => (arrived = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      hold = { arrived, released };
      return {
        arrived: arrival,
        release() {
          hold = undefined;
          release();
        },
      };
    },
    async revokeGrantOf(refreshToken) {
      const found = await provider.RefreshToken.find(refreshToken);
      if (!found?.grantId) throw new Error('no such refresh token');
      await (await provider.Grant.find(found.grantId))?.destroy();
      await found.destroy();
    },
    pause: () => close(http),
    resume: () => new Promise((resolve) => http.listen(port, '127.0.0.1', () => resolve())),
    failWith: (next) => (failure = next),
    close: () => (http.listening ? close(http) : Promise.resolve()),
  };
}

export interface McpResourceServer {
  /** The MCP endpoint (`<origin>/<path>/mcp`). */
  url: string;
  /** Every bearer token presented to the MCP endpoint, before any check (refused ones included), in order. */
  presentedTokens: string[];
  /** With `dpop`: the key thumbprint (`jkt`) of every proof it accepted, in order. */
  dpopKeys: string[];
  /** Revokes at this resource server every access token presented so far: each is answered 401 from now on, valid JWT or not. */
  refuseTokensSoFar(): void;
  close(): Promise<void>;
}

/**
 * An SDK MCP server at `/<prefix>/mcp` with one `echo` tool, accepting only
 * JWT access tokens of `issuer` whose audience is its own URL. `issuer` may
 * be a function: the server then names (and accepts tokens of) whichever
 * authorization server it returns at the time — a server that moves to
 * another one (SEP-2352).
 */
export async function startMcpResourceServer(
  issuerOf: string | (() => string),
  prefix = 'a',
  options: { dpop?: boolean } = {},
): Promise<McpResourceServer> {
  const http = createServer();
  const port = await listen(http);
  const origin = `http://127.0.0.1:${port}`;
  const url = `${origin}/${prefix}/mcp`;
  const metadataPath = `/.well-known/oauth-protected-resource/${prefix}/mcp`;
  const currentIssuer = typeof issuerOf === 'string' ? () => issuerOf : issuerOf;
  const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();
  const jwksOf = (issuer: string) => {
    let keys = keySets.get(issuer);
    if (keys === undefined) keySets.set(issuer, (keys = createRemoteJWKSet(new URL(`${issuer}/jwks`))));
    return keys;
  };
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const presentedTokens: string[] = [];
  const dpopKeys: string[] = [];
  const refused = new Set<string>();

  http.on('request', async (req, res) => {
    const issuer = currentIssuer();
    const path = new URL(req.url ?? '/', origin).pathname;
    if (path === metadataPath) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ resource: url, authorization_servers: [issuer], scopes_supported: [SCOPE] }));
      return;
    }
    if (path !== `/${prefix}/mcp`) {
      res.writeHead(404).end();
      return;
    }
    const scheme = options.dpop ? 'DPoP' : 'Bearer';
    const token = new RegExp(`^${scheme} (.+)$`).exec(req.headers.authorization ?? '')?.[1];
    if (token !== undefined) presentedTokens.push(token);
    let scopes: string[];
    let subject: string | undefined;
    try {
      if (token === undefined) throw new Error('no token');
      if (refused.has(token)) throw new Error('revoked');
      const { payload } = await jwtVerify(token, jwksOf(issuer), { issuer, audience: url });
      if (options.dpop) dpopKeys.push(await checkDpopProof(req, token, payload, url));
      scopes = String(payload.scope ?? '').split(' ');
      subject = payload.sub;
    } catch {
      res.writeHead(401, { 'www-authenticate': `${scheme} resource_metadata="${origin}${metadataPath}"` });
      res.end();
      return;
    }
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    const call = body as { method?: string; params?: { name?: string } } | undefined;
    if (call?.method === 'tools/call' && call.params?.name === 'admin' && !scopes.includes(ADMIN_SCOPE)) {
      res.writeHead(403, {
        'www-authenticate': `Bearer error="insufficient_scope", scope="${SCOPE} ${ADMIN_SCOPE}", resource_metadata="${origin}${metadataPath}"`,
      });
      res.end();
      return;
    }
    const id = req.headers['mcp-session-id'];
    let transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (transport === undefined) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, created);
        },
      });
      const server = new McpServer({ name: `oauth-fixture-${prefix}`, version: '1.0.0' });
      server.registerTool('admin', { description: `Needs ${ADMIN_SCOPE}` }, async () => ({
        content: [{ type: 'text', text: 'admin done' }],
      }));
      server.registerTool('echo', { description: 'Returns its text', inputSchema: { text: z.string() } }, async ({ text }) => ({
        content: [{ type: 'text', text }],
      }));
      // Who the request's token was issued to, and the token's hash: each call says whose grant it carried.
      server.registerTool('whoami', { description: 'Answers the subject of the token it was called with' }, async (extra) => ({
        content: [{ type: 'text', text: JSON.stringify(extra.authInfo?.extra ?? null) }],
      }));
      await server.connect(created);
      transport = created;
    }
    // The token's subject reaches the tools (`extra.authInfo`) of whichever request it came with.
    (req as IncomingMessage & { auth?: unknown }).auth = {
      token: token!,
      clientId: '',
      scopes,
      extra: { sub: subject ?? null, token: createHash('sha256').update(token!).digest('base64url').slice(0, 16) },
    };
    await transport.handleRequest(req, res, body);
  });
  return {
    url,
    presentedTokens,
    dpopKeys,
    refuseTokensSoFar() {
      for (const token of presentedTokens) refused.add(token);
    },
    async close() {
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
      await close(http);
    },
  };
}

/**
 * RFC 9449 §4.3 and §7.1, as a resource server checks them: a proof signed
 * by the key in its own header, for this request's method and URL and this
 * token (`ath`), whose key the token is bound to (`cnf.jkt`). Returns the
 * key's thumbprint; throws when any check fails.
 */
async function checkDpopProof(req: IncomingMessage, token: string, payload: JWTPayload, url: string): Promise<string> {
  const proof = req.headers.dpop;
  if (typeof proof !== 'string') throw new Error('no DPoP proof');
  const { payload: claims, protectedHeader } = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt', maxTokenAge: 300 });
  const jkt = await calculateJwkThumbprint(protectedHeader.jwk!, 'sha256');
  const bound = (payload.cnf as { jkt?: string } | undefined)?.jkt;
  const ath = createHash('sha256').update(token).digest('base64url');
  if (bound !== jkt || claims.htm !== req.method || claims.htu !== url || claims.ath !== ath) {
    throw new Error('the DPoP proof does not fit the token or the request');
  }
  return jkt;
}

/**
 * Plays the user in a browser: opens the authorization URL, signs in and
 * consents on oidc-provider's pages (plain fetch, cookies by hand), and
 * follows the final redirect to the loopback callback. Resolves with the
 * callback's answer.
 */
export async function consentAsUser(
  authorizationUrl: string,
  account = 'alice',
  /** How the browser reaches the callback (default: plain fetch); e.g. over HTTPS trusting the test's CA. */
  reachCallback: (url: string) => Promise<Response> = (url) => fetch(url),
): Promise<{ status: number; text: string }> {
  const cookies = new Map<string, string>();
  const send = async (url: string, init: RequestInit = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    if (cookies.size > 0) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const response = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    return response;
  };
  let response = await send(authorizationUrl);
  for (let step = 0; step < 20; step++) {
    const location = response.headers.get('location');
    if (location !== null) {
      await response.body?.cancel();
      const next = new URL(location, response.url || authorizationUrl).href;
      if (new URL(next).pathname === '/oauth/callback') {
        const callback = await reachCallback(next);
        return { status: callback.status, text: await callback.text() };
      }
      response = await send(next);
      continue;
    }
    const html = await response.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    if (action === undefined || prompt === undefined) throw new Error(`unexpected page (HTTP ${response.status}): ${html.slice(0, 300)}`);
    const form = new URLSearchParams({ prompt });
    if (prompt === 'login') {
      form.set('login', account);
      form.set('password', 'any');
    }
    const target = new URL(action.replaceAll('&amp;', '&'), authorizationUrl).href;
    response = await send(target, { method: 'POST', body: form, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  }
  throw new Error('consent did not reach the callback');
}

/** A GET over HTTPS that trusts `ca` only, answered as a fetch Response (redirects are not followed). */
export function fetchTrusting(ca: string, url: URL | string, init: RequestInit = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const req = httpsRequest(url, { method: init.method ?? 'GET', headers, ca, signal: init.signal ?? undefined }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const answer = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) answer.set(name, Array.isArray(value) ? value.join(', ') : value);
        }
        const status = res.statusCode ?? 502;
        resolve(new Response([204, 205, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers: answer }));
      });
    });
    req.on('error', reject);
    req.end();
  });
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
