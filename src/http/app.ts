import type { Express, RequestHandler } from 'express';
import type { McpHost } from '../host.js';
import type { Logger } from '../telemetry/index.js';
import { errorHandler, notFoundHandler } from './errors.js';
import { catalogRoutes } from './routes/catalog.js';
import { eventRoutes } from './routes/events.js';
import { promptRoutes } from './routes/prompts.js';
import { serverList, serverRoutes } from './routes/servers.js';
import { toolRoutes } from './routes/tools.js';
import { requestsUnderWay, type RequestsUnderWay } from './under-way.js';
import { approvalRoutes } from './routes/approvals.js';
import { pageRoutes, sessionRoutes } from './routes/ui.js';
import { consentCallback } from './routes/oauth-callback.js';
import { clientMetadataRoute } from './routes/client-metadata.js';
import { CLIENT_METADATA_PATH } from '../auth/client-metadata-document.js';
import { fleetRoute } from './routes/fleet.js';
import { registryRoutes } from './routes/registry.js';
import { apiGuard, hostCheck, identifyCaller } from './security.js';
import { checkManagementAppOptions } from './app-options.js';
import { loadExpress } from './express.js';
import type { Presence } from '../fleet/index.js';
import { createFileUsersStore, createUsers, type OidcOptions, type UsersStore } from '../users/index.js';
import { userRoutes } from './routes/users.js';
import { createOidc } from '../users/oidc.js';
import { oidcRoutes } from './routes/oidc.js';
import { adminOnly, meOf, userOf } from './caller.js';
import { appRoutes } from './routes/apps.js';
import type { AppFrames } from './apps/frames.js';
import { serverEndpoint, type ServerEndpoint } from '../gateway/server-endpoint.js';
import { createGateway, createSessionPool, GATEWAY_METADATA_PATH, type Gateway, type GatewaySessionLimits, type RoundLimits, type SessionPool } from '../gateway/index.js';

/** 503 `not_ready` with the reason while `notReady` gives one. */
function untilReady(notReady: () => string | null): RequestHandler {
  return function untilReady(_req, res, next) {
    const reason = notReady();
    if (reason === null) return next();
    res.status(503).set('Retry-After', '1').json({ error: { code: 'not_ready', message: reason } });
  };
}

/** `/healthz`'s answer, as `res.json({ ok: true })` would send it, made once. */
const HEALTHY = Buffer.from(JSON.stringify({ ok: true }));

/** Default bound on a request body: 1 MiB. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** Default period of the SSE keep-alive comment. */
export const DEFAULT_HEARTBEAT_MS = 15_000;

export interface ManagementAppOptions {
  /** The bearer token every `/api` route requires. */
  token: string;
  /** The address the server is bound to; decides which `Host` headers are accepted. Default `127.0.0.1`. */
  bindHost?: string;
  /** Extra accepted `Host` values (`name:port`), e.g. behind a reverse proxy. */
  allowedHosts?: string[];
  /** Largest accepted request body in bytes; larger ones get 413. Default 1 MiB. */
  bodyLimit?: number;
  /** Period of the SSE heartbeat comment in ms. Default 15 000. */
  heartbeatMs?: number;
  /** Where failed requests (5xx) are logged. */
  logger?: Logger;
  /** Told the secret values of every accepted POST/PATCH body before the host sees them. */
  onSecrets?: (values: string[]) => void;
  /** Why the worker cannot serve yet (`/readyz` and every `/api` route answer 503 with it), or null once it can. Default: always ready. */
  notReady?: () => string | null;
  /** The workers sharing this one's database (`GET /api/mcp/fleet`); default: this worker alone. */
  fleet?: Presence;
  /** Base URL of the MCP Registry behind `/api/mcp/registry`; default `$MCP_FLEET_REGISTRY_URL`, else the official one. */
  registryUrl?: string;
  /** Where the users and their key hashes live; default `<state_dir>/users.json` (`createPgUsersStore` for a fleet). */
  users?: UsersStore;
  /**
   * Sign-in through an OpenID Connect provider (`serve --oidc-issuer`): the page offers it, and the
   * user comes back to `<publicUrl>/ui/oidc/callback` (register that redirect URI at the provider).
   */
  oidc?: OidcOptions;
  /** Where browsers reach the worker (`serve --public-url`); the OIDC redirect URI is under it (default: the request's origin). */
  publicUrl?: string;
  /** The sandbox origin app frames are served from (`createAppFrames`); without it the page shows no app. */
  apps?: AppFrames;
  /** Bounds on the 2025-era sessions of `/mcp` and `/mcp/servers/:name` together (docs/gateway.md). */
  gatewaySessions?: GatewaySessionLimits;
  /** Bounds of the 2026-era gateway calls held across their input_required rounds (a TTL, caps per principal and worker). */
  gatewayRounds?: RoundLimits;
}

/** The 2025-era MCP sessions of an app made by `createManagementApp`, both endpoints'. */
export function mcpSessionsOf(app: Express): SessionPool {
  return app.locals.mcpSessions as SessionPool;
}

/**
 * Ends what the MCP endpoints of an app hold open, as a worker does on its way
 * down before its port closes: the 2026 requests of both endpoints (their listen
 * streams each with the result that says the end is meant, the others answered
 * that the worker is shutting down), then the 2025 sessions of both endpoints.
 */
export async function closeMcpEndpoints(app: Express): Promise<void> {
  await (app.locals.gateway as Gateway).close();
  await (app.locals.serverEndpoint as ServerEndpoint).close();
  await mcpSessionsOf(app).close();
}

/**
 * Answers the management API's requests still under way (tool calls, prompt
 * renders), as a worker does on its way down before its port closes: each is
 * cancelled and answered that the worker is shutting down (a tool call with an
 * `is_error` result, a render `503 shutting_down`), rather than cut.
 */
export async function closeRequestsUnderWay(app: Express): Promise<void> {
  await (app.locals.underWay as RequestsUnderWay).close();
}

/**
 * Whether a change through the management API (adding a server, say) is
 * still unanswered: the worker's stop then stops the host first and waits
 * for the change's answer ({@link changesAnswered}) before its port closes.
 */
export function changesUnderWay(app: Express): boolean {
  return (app.locals.underWay as RequestsUnderWay).changing();
}

/** Resolves once each change under way is answered, waited for at most a server's kill grace. */
export async function changesAnswered(app: Express): Promise<void> {
  await (app.locals.underWay as RequestsUnderWay).changesAnswered();
}

/**
 * The management API (docs/http-and-cli.md) as an express app. Security runs in order:
 * Host (DNS rebinding) on every route including `/healthz`; then, for `/api`,
 * the bearer token (or the page's session cookie), the Origin of mutations,
 * the content type, the body limit. The management page is served at `/`.
 */
export function createManagementApp(host: McpHost, options: ManagementAppOptions): Express {
  checkManagementAppOptions(options);
  const bindHost = options.bindHost ?? '127.0.0.1';
  const extraHosts = options.allowedHosts ?? [];
  const app = loadExpress()();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.use(hostCheck(bindHost, extraHosts));
  // Never touches the host: it answers while every server is still connecting.
  app.get('/healthz', function healthz(_req, res) {
    res.set('Content-Type', 'application/json; charset=utf-8').send(HEALTHY);
  });
  // Alive is not ready: until the database is reached and the servers are published, a load balancer should send nothing here.
  app.get('/readyz', function readyz(_req, res) {
    const reason = options.notReady?.() ?? null;
    if (reason === null) res.json({ ready: true });
    else res.status(503).json({ ready: false, reason });
  });

  // The guard and each resource's router sit on the app itself: a nested `/api`
  // router would cost every request one more dispatch.
  const users = createUsers(options.users ?? createFileUsersStore(host.stateDir));
  const guard = apiGuard({ token: options.token, users, bindHost, allowedHosts: extraHosts, bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT });
  // The server list, the route polled most, is a route of the app itself with the same
  // guard in front of it: one route to match, no mount to enter on each request (a
  // mount cuts its prefix from the URL, which is parsed again, and puts it back).
  const list = serverList(host);
  // Until the worker can serve (the database reached, the servers published) the API says why rather
  // than answer with an empty or partial fleet.
  const ready = options.notReady ? [untilReady(options.notReady)] : [];
  // The fleet as one MCP server, mounted before the API: a call of a tool is its hottest path, and each
  // layer before it is one more match per request. Its own auth (bearer tokens, with the OAuth challenge), never the page's cookie.
  // One pool for both MCP endpoints: the caps bound what a worker (and a principal) holds open, whichever endpoint it is on.
  const pool = createSessionPool(options.gatewaySessions);
  app.locals.mcpSessions = pool;
  const gateway = createGateway(host, {
    pool,
    ...(options.gatewayRounds && { rounds: options.gatewayRounds }),
    token: options.token,
    users,
    oidc: options.oidc,
    publicUrl: options.publicUrl,
    bindHost,
    allowedHosts: extraHosts,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    ...(options.logger && { logger: options.logger }),
  });
  app.locals.gateway = gateway;
  // Fetched by clients before they hold a token: public by nature.
  app.get(GATEWAY_METADATA_PATH, gateway.metadata);
  // One server as an MCP endpoint of its own, behind the same auth as `/mcp` (mounted first: `/mcp`'s router takes only its root).
  const endpoint = serverEndpoint(host, { auth: gateway.auth, pool, rounds: gateway.rounds, ...(options.logger && { logger: options.logger }) });
  app.locals.serverEndpoint = endpoint;
  app.use('/mcp/servers', ...ready, endpoint.router);
  app.use('/mcp', ...ready, gateway.router);

  app.get('/api/mcp/servers', guard, ...ready, list);
  app.use('/api', guard, ...ready);
  // Requests whose work runs on after they came: the worker's stop answers those still under way.
  const underWay = requestsUnderWay();
  app.locals.underWay = underWay;
  app.use('/api', function trackChange(req, res, next) {
    if (req.method !== 'GET' && req.method !== 'HEAD') underWay.change(res);
    next();
  });
  app.use('/api/mcp/servers', serverRoutes(host, { onSecrets: options.onSecrets, list }));
  app.use('/api/mcp/catalog', catalogRoutes(host));
  app.use('/api/mcp/tools', toolRoutes(host, underWay));
  app.use('/api/mcp/prompts', promptRoutes(host, underWay));
  app.use('/api/mcp/approvals', approvalRoutes(host));
  app.use('/api/mcp/events', eventRoutes(host, { heartbeatMs: options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, users }));
  app.get('/api/mcp/fleet', adminOnly, fleetRoute(host, options.fleet));
  // A user's app bridge follows the access policy: only the apps of tools they may see, calling as them.
  app.use('/api/mcp/apps', appRoutes(host, options.apps, { heartbeatMs: options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS, users }));
  // A key rotated or a user removed here: the apps opened with it close (no key reaches them any more).
  users.onSignedOut((name) => void options.apps?.closeOpenedBy(name, 'the key it was opened with no longer signs in'));
  app.use('/api/mcp/registry', adminOnly, registryRoutes(host, { registryUrl: options.registryUrl, onSecrets: options.onSecrets }));
  app.get('/api/mcp/me', function me(_req, res) {
    res.json(meOf(res));
  });
  // A removed user's own OAuth grants go with them.
  app.use('/api/mcp/users', adminOnly, userRoutes(users, { onRemoved: (name) => host.forgetUser(name) }));
  // Sessions of per_user servers on this worker: the admin sees all, a user their own.
  app.get('/api/mcp/sessions', function listSessions(_req, res) {
    const user = userOf(res);
    res.json({ sessions: host.sessions(user === undefined ? {} : { principal: user }) });
  });

  // The browser's return from an OAuth consent (`serve --public-url`): no token, its `state` is the proof.
  app.get('/oauth/callback', identifyCaller(options.token, users), consentCallback(host));
  // Fetched by authorization servers, which hold no token: the document is public by nature.
  app.get(CLIENT_METADATA_PATH, clientMetadataRoute(host));

  // The management page and its sign-in; the page's files hold no secret, so they need no token.
  app.use(pageRoutes({ ...(options.apps && { appsOrigin: options.apps.origin }) }));
  app.use('/ui/session', sessionRoutes({ token: options.token, users, bindHost, allowedHosts: extraHosts, oidc: options.oidc !== undefined }));
  if (options.oidc !== undefined) {
    app.use('/ui/oidc', oidcRoutes({ oidc: createOidc(options.oidc), token: options.token, publicUrl: options.publicUrl }));
  }

  app.use(notFoundHandler);
  app.use(errorHandler(options.logger));
  return app;
}
