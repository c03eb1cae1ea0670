/**
 * `/mcp` on the worker: the fleet as one Streamable HTTP MCP server, in both
 * protocol eras. A 2026-07-28 request is stateless (any worker serves it); a
 * 2025-11-25 client gets a session bound to this worker (sessions.ts). Every
 * request is authenticated first (auth.ts), and what it may see and call is its
 * principal's (aggregate.ts). List changes of any server (or of the policy)
 * reach open sessions and `subscriptions/listen` streams, resource updates
 * the sessions (aggregate.ts) and streams (listen.ts) that subscribed; servers'
 * log messages reach the sessions of principals who may see the server, at the
 * level each client set.
 */
import type { RequestHandler, Router } from 'express';
import { createMcpHandler, isLegacyRequest, type AuthInfo } from '@modelcontextprotocol/server';
import type { McpHost } from '../host.js';
import type { Logger } from '../telemetry/index.js';
import { loadExpress } from '../http/express.js';
import { allowedHostValues } from '../http/security.js';
import type { Principal, Users } from '../users/index.js';
import { createGatewayServer, seesServer } from './aggregate.js';
import { gatewayAuth, gatewayCallerOf, protectedResourceMetadata, WELL_KNOWN_PREFIX, type GatewayAuthOptions } from './auth.js';
import { createGatewaySessions, createSessionPool, type GatewaySessionLimits, type GatewaySessions, type SessionPool } from './sessions.js';
import { createRounds, type RoundLimits, type Rounds } from './rounds.js';
import { listenSubscriptions, type ListenSubscriptions, type ListKind } from './listen.js';
import { createOutputSchemas } from './output-schemas.js';
import { answerModern, refuseShuttingDown, webExchange } from './web-exchange.js';

export { gatewayAuth, gatewayCallerOf, protectedResourceMetadata, resourceOf, metadataUrlOf, WELL_KNOWN_PREFIX, type GatewayAuthOptions, type GatewayCaller } from './auth.js';
export { createGatewayServer, CLASH_SCHEME } from './aggregate.js';
export { DEFAULT_ROUND_LIMITS, createRounds, type RoundLimits, type Rounds } from './rounds.js';
export { DEFAULT_SESSION_LIMITS, createSessionPool, type GatewaySessionLimits, type GatewaySessions, type SessionPool } from './sessions.js';

export interface GatewayOptions extends Omit<GatewayAuthOptions, 'users'> {
  users: Users;
  /** The address the worker is bound to and the extra `Host` values it accepts: an `Origin` must be one of them (or the public URL's). */
  bindHost: string;
  allowedHosts: readonly string[];
  /** Largest request body in bytes. */
  bodyLimit: number;
  /** The worker's 2025-era sessions, shared with `/mcp/servers/:name` (one set of limits); else a pool of its own with these limits. */
  pool?: SessionPool;
  sessions?: GatewaySessionLimits;
  /** Bounds of the 2026-era calls held across their input_required rounds (shared with `/mcp/servers/:name` through `rounds`). */
  rounds?: RoundLimits;
  logger?: Logger;
}

export interface Gateway {
  /** `/mcp`: mount at that path. */
  router: Router;
  /** The protected resource metadata's route, at `WELL_KNOWN_PREFIX + '/mcp'` on the app. */
  metadata: RequestHandler;
  /** The Origin check and bearer auth of `/mcp`, for the endpoints mounted below it. */
  auth: RequestHandler;
  sessions: GatewaySessions;
  /** The worker's 2026-era calls held across their rounds: pass them to `/mcp/servers/:name` too. */
  rounds: Rounds;
  close(): Promise<void>;
}

/** The principal a stateless request's `authInfo` carries. */
const PRINCIPAL = 'mcp-fleet/principal';

export function createGateway(host: McpHost, options: GatewayOptions): Gateway {
  const express = loadExpress();
  const router = express.Router();
  // This gateway's own: which output schemas a client can compile, each checked once.
  const outputSchemaOf = createOutputSchemas();
  const sessions = createGatewaySessions(options.pool ?? createSessionPool(options.sessions), '/mcp', (who) =>
    createGatewayServer(host, who, 'legacy', outputSchemaOf),
  );
  const onerror = (error: Error) => options.logger?.warn(`mcp gateway: ${error.message}`);
  const rounds = createRounds(options.rounds);
  const listen = listenSubscriptions(host);
  const modern = createMcpHandler(
    ({ authInfo }) => {
      const principal = authInfo?.extra?.[PRINCIPAL] as Principal | undefined;
      return createGatewayServer(host, () => principal, 'modern', outputSchemaOf, rounds);
    },
    { legacy: 'reject', onerror, maxRequestBodySize: options.bodyLimit, bus: listen.bus },
  );
  const parseJson = express.json({ limit: options.bodyLimit });
  // Subscribed on the first request, not before: creating the app must not touch the host.
  let unsubscribe: (() => void) | undefined;
  let closing = false;

  // On `/mcp` itself only: the per-server endpoints below it bring their own steps (and read their own bodies).
  const parseBody: RequestHandler = function parseBody(req, res, next) {
    if (req.method !== 'POST') return next();
    parseJson(req, res, (error?: unknown) => {
      // A body that is no JSON is a JSON-RPC parse error, as an MCP client reads one; a body too large stays the API's 413.
      if (error instanceof SyntaxError) {
        res.status(400).json({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the request body is not valid JSON' }, id: null });
        return;
      }
      next(error);
    });
  };
  const checkOrigin = originCheck(options);
  const authenticate = gatewayAuth(options);
  router.all('/', checkOrigin, authenticate, parseBody, async function serveMcp(req, res) {
    unsubscribe ??= forwardChanges(host, sessions, listen);
    const caller = gatewayCallerOf(res);
    const body: unknown = req.body;
    // One web Request for the era check and the server that answers; a session id is 2025's alone (2026 has none): such a request skips the era check.
    const exchange = await webExchange(req, res, body, options.bodyLimit);
    // The worker stops: the 2026 handler is closed (a request would fail as an internal error) and the sessions end.
    if (closing) return refuseShuttingDown(exchange, body);
    if (req.headers['mcp-session-id'] !== undefined || (await isLegacyRequest(exchange.request, body))) {
      await sessions.handle(req, res, caller.principal, body, exchange);
      return;
    }
    const authInfo: AuthInfo = {
      token: '',
      clientId: caller.principal?.id ?? 'admin',
      scopes: [],
      ...(caller.expiresAt !== undefined && { expiresAt: caller.expiresAt }),
      extra: { [PRINCIPAL]: caller.principal },
    };
    // A `subscriptions/listen` stream's resource subscriptions are held for its caller around the request.
    await listen.serve(caller.principal, body, res, () => answerModern(modern, exchange, body, { authInfo, closing: () => closing, onerror }));
  });

  return {
    router,
    metadata(req, res) {
      res.set('Access-Control-Allow-Origin', '*').json(protectedResourceMetadata(req, options));
    },
    auth(req, res, next) {
      checkOrigin(req, res, (error?: unknown) => (error === undefined ? authenticate(req, res, next) : next(error)));
    },
    sessions,
    rounds,
    async close() {
      closing = true;
      unsubscribe?.();
      rounds.close();
      // Listen streams first, each ended with the empty result that tells its client the end is meant
      // ('graceful'), not cut; then their subscriptions are let go, and the 2025 sessions end.
      await modern.close();
      listen.close();
      await sessions.close();
    },
  };
}

/**
 * An `Origin` (a browser's request) must be this worker's own or the public URL's: a page
 * elsewhere must not drive the gateway with a token it got hold of (DNS rebinding is the
 * app's `Host` check). Requests without `Origin` (MCP clients outside browsers) pass.
 */
function originCheck(options: GatewayOptions): RequestHandler {
  const publicOrigin = options.publicUrl === undefined ? undefined : new URL(options.publicUrl).origin;
  return function checkGatewayOrigin(req, res, next) {
    const origin = req.headers.origin;
    if (origin === undefined || origin === publicOrigin) return next();
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    const port = req.socket.localPort ?? 0;
    if (url !== undefined && url.protocol === 'http:' && allowedHostValues(options.bindHost, port, options.allowedHosts).has(url.host)) return next();
    res.status(403).json({ jsonrpc: '2.0', error: { code: -32000, message: 'Forbidden: the Origin is not this server' }, id: null });
  };
}

/**
 * List changes of any server, a changed access policy, and servers' log messages,
 * to the gateway's clients: sessions get them on their stream, `subscriptions/listen`
 * streams (2026) the list changes. Coalesced per kind to one notification a tick,
 * told only to callers who may see a server whose list changed: a change of a
 * server a user cannot see says nothing to them. A changed or removed config
 * may change who sees what, so it is told to everyone.
 */
function forwardChanges(host: McpHost, sessions: GatewaySessions, listen: ListenSubscriptions): () => void {
  /** Per kind due, the servers whose list changed, or `everyone`. */
  const due = new Map<ListKind, Set<string> | 'everyone'>();
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const changes = [...due];
    due.clear();
    for (const [kind, changed] of changes) {
      // A server gone meanwhile is told of by its removal, to everyone.
      const mayKnow = (principal: Principal | undefined) =>
        changed === 'everyone' || [...changed].some((name) => seesServer(host, principal, name));
      listen.listChanged(kind, mayKnow);
      sessions.each((server, principal) => {
        if (!mayKnow(principal)) return;
        const sent = kind === 'tools' ? server.sendToolListChanged() : kind === 'resources' ? server.sendResourceListChanged() : server.sendPromptListChanged();
        sent.catch(() => {});
      });
    }
  };
  const mark = (kind: ListKind, server: string | null) => {
    const changed = due.get(kind);
    if (server === null) due.set(kind, 'everyone');
    else if (changed === undefined) due.set(kind, new Set([server]));
    else if (changed !== 'everyone') changed.add(server);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  return host.subscribe((event) => {
    switch (event.type) {
      case 'tools.registered':
      case 'tools.unregistered':
        return mark('tools', event.server);
      case 'resources.listed':
        return mark('resources', event.server);
      case 'prompts.listed':
        return mark('prompts', event.server);
      // A changed config can change who sees what; a removed server takes its offer along.
      case 'server.configured':
      case 'server.removed':
        mark('tools', null);
        mark('resources', null);
        return mark('prompts', null);
      case 'server.log': {
        sessions.each((server, principal, id) => {
          if (!seesServer(host, principal, event.server)) return;
          // The session id picks the level its client set (`logging/setLevel`).
          server.sendLoggingMessage({ level: event.level, logger: event.logger ?? event.server, data: event.message }, id).catch(() => {});
        });
        return;
      }
      default:
        return;
    }
  });
}

export const GATEWAY_METADATA_PATH = `${WELL_KNOWN_PREFIX}/mcp`;
