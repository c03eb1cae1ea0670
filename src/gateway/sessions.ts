/**
 * The 2025-era MCP sessions of a worker, `/mcp`'s and `/mcp/servers/:name`'s
 * alike: each is one `Mcp-Session-Id`, its transport and its server, bound to
 * the principal that opened it and to the endpoint it was opened on (its
 * scope). Bounded, both endpoints together: ended after `idleMs` without a
 * request (an open stream counts as one), at most `maxSessions` on the worker
 * and `maxPerPrincipal` per principal, and a `DELETE` ends it. A session id
 * this worker does not hold (another worker's, an ended one, another
 * principal's or another endpoint's) is answered 404, which tells a client to
 * start a new session.
 */
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import { DEFAULT_MAX_REQUEST_BODY_SIZE, isInitializeRequest, isJSONRPCRequest, WebStandardStreamableHTTPServerTransport, type Server } from '@modelcontextprotocol/server';
import { ADMIN_PRINCIPAL, type Principal } from '../users/index.js';
import { SHUTTING_DOWN, webExchange, type WebExchange } from './web-exchange.js';

export interface GatewaySessionLimits {
  /** A session with no request for this long ends. Default 30 minutes. */
  idleMs?: number;
  /** Sessions open on this worker at once, on both endpoints. Default 1000. */
  maxSessions?: number;
  /** Sessions one principal may hold open on this worker at once, on both endpoints. Default 20. */
  maxPerPrincipal?: number;
}

export const DEFAULT_SESSION_LIMITS = { idleMs: 30 * 60_000, maxSessions: 1000, maxPerPrincipal: 20 } as const;

/** What a new session serves with: its server, and what to do once it has its id and once it ended. */
export interface SessionServer {
  server: Server;
  initialized?(id: string): void;
  ended?(): void;
}

/** One request to an endpoint of the pool: whose, on which endpoint, and how a new session's server is made. */
export interface SessionRequest {
  /** The endpoint (`/mcp`, `/mcp/servers/{name}`): a session answers only on its own. */
  scope: string;
  principal: Principal | undefined;
  body: unknown;
  /** The request as a web Request already, when the endpoint made one (else the pool makes it). */
  exchange?: WebExchange;
  /** Whether nothing but its result can come of a session's request (then answered whole, as JSON): the endpoint's to say. */
  whole?(body: unknown, server: Server): boolean;
  /**
   * The server of a new session, for the principal `who()` names on each request (the
   * latest request's). Called once the limits allow the session; may throw (an HTTP error).
   */
  open(who: () => Principal | undefined): SessionServer | Promise<SessionServer>;
}

interface Session {
  id: string | undefined;
  scope: string;
  owner: string;
  principal: Principal | undefined;
  made: SessionServer | undefined;
  transport: WebStandardStreamableHTTPServerTransport | undefined;
  /** Requests (and streams) still open on it. */
  active: number;
  /** The ids of its requests not answered yet: a pool that closes answers them. */
  pending: Set<string | number>;
  idle: NodeJS.Timeout | undefined;
  ended: boolean;
}

export interface SessionPool {
  /** Serves a 2025-era request (body parsed): on the session it names, or a new one for an `initialize`. */
  handle(req: Request, res: Response, request: SessionRequest): Promise<void>;
  /** Each open session of `scope`: its server, principal and id (for notifications). */
  each(scope: string, visit: (server: Server, principal: Principal | undefined, id: string) => void): void;
  /** Open sessions on the worker, or one principal's; of one endpoint with `scope`. */
  count(principal?: string, scope?: string): number;
  /** Ends every session of `scope`, or every session; resolves once their transports closed. */
  close(scope?: string): Promise<void>;
}

/** The sessions of one endpoint of a pool. */
export interface GatewaySessions {
  /** Serves a 2025-era request (`body` parsed) for `principal`. */
  handle(req: Request, res: Response, principal: Principal | undefined, body: unknown, exchange?: WebExchange): Promise<void>;
  /** Each open session's server, principal and id (for notifications). */
  each(visit: (server: Server, principal: Principal | undefined, id: string) => void): void;
  /** Open sessions of this endpoint: all, or one principal's. */
  count(principal?: string): number;
  /** Ends every session of this endpoint. */
  close(): Promise<void>;
}

function jsonRpcError(res: Response, status: number, code: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

export function createSessionPool(limits: GatewaySessionLimits = {}): SessionPool {
  const idleMs = limits.idleMs ?? DEFAULT_SESSION_LIMITS.idleMs;
  const maxSessions = limits.maxSessions ?? DEFAULT_SESSION_LIMITS.maxSessions;
  const maxPerPrincipal = limits.maxPerPrincipal ?? DEFAULT_SESSION_LIMITS.maxPerPrincipal;
  /** Every session, those still initializing too (they count against the limits). */
  const open = new Set<Session>();
  const byId = new Map<string, Session>();

  /**
   * Ends a session; resolves once its transport and server closed. With `reason` (the pool
   * closes), its requests still under way are answered with it first: closing the transport
   * alone ends their streams with no answer, and a client waits for one until its own timeout.
   */
  async function end(session: Session, reason?: string): Promise<void> {
    if (session.ended) return;
    session.ended = true;
    clearTimeout(session.idle);
    open.delete(session);
    if (session.id !== undefined) byId.delete(session.id);
    session.made?.ended?.();
    if (reason !== undefined && session.transport !== undefined) {
      const transport = session.transport;
      // One answered meanwhile has no stream left to send on: the send fails, and that is fine.
      await Promise.all([...session.pending].map((id) => transport.send({ jsonrpc: '2.0', id, error: { code: -32000, message: reason } }).catch(() => {})));
    }
    await Promise.all([session.transport?.close().catch(() => {}), session.made?.server.close().catch(() => {})]);
  }

  /** Counts one open request; the idle clock runs only while none is. */
  function enter(session: Session, res: Response): void {
    session.active += 1;
    clearTimeout(session.idle);
    session.idle = undefined;
    res.on('close', () => {
      session.active -= 1;
      if (session.active > 0 || session.ended) return;
      // A session that never got its id (a refused initialize) is over with its only request.
      if (session.id === undefined) return void end(session);
      session.idle = setTimeout(() => void end(session), idleMs);
      session.idle.unref();
    });
  }

  async function start(req: Request, res: Response, request: SessionRequest): Promise<void> {
    const owner = request.principal?.id ?? ADMIN_PRINCIPAL;
    if (open.size >= maxSessions) return jsonRpcError(res, 503, -32000, `this worker holds its limit of ${maxSessions} sessions; try again later`);
    if (count(owner) >= maxPerPrincipal) return jsonRpcError(res, 429, -32000, `${owner} holds the limit of ${maxPerPrincipal} sessions on this worker; end one (DELETE) first`);
    const session: Session = {
      id: undefined,
      scope: request.scope,
      owner,
      principal: request.principal,
      made: undefined,
      transport: undefined,
      active: 0,
      pending: new Set(),
      idle: undefined,
      ended: false,
    };
    // Counted from here on: a slow server to make must not let a burst past the limits.
    open.add(session);
    let transport: WebStandardStreamableHTTPServerTransport;
    try {
      const made = await request.open(() => session.principal);
      if (session.ended) {
        // The pool closed while the server was made: nothing else will close it.
        made.ended?.();
        await made.server.close().catch(() => {});
        return jsonRpcError(res, 503, -32000, SHUTTING_DOWN);
      }
      session.made = made;
      transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized(id) {
          session.id = id;
          byId.set(id, session);
          session.made?.initialized?.(id);
        },
        onsessionclosed: () => void end(session),
      });
      session.transport = transport;
      transport.onclose = () => void end(session);
      await made.server.connect(transport);
    } catch (error) {
      await end(session);
      throw error;
    }
    enter(session, res);
    await serve(session, transport, req, res, request);
  }

  /** One request on a session's transport, its answer written in as few writes as it allows (web-exchange.ts). */
  async function serve(session: Session, transport: WebStandardStreamableHTTPServerTransport, req: Request, res: Response, request: SessionRequest, server?: Server): Promise<void> {
    const exchange = request.exchange ?? (await webExchange(req, res, request.body, DEFAULT_MAX_REQUEST_BODY_SIZE));
    const whole = server !== undefined && req.method === 'POST' && request.whole?.(request.body, server) === true;
    const ids = (Array.isArray(request.body) ? request.body : [request.body]).filter(isJSONRPCRequest).map((message) => message.id);
    for (const id of ids) session.pending.add(id);
    try {
      await exchange.respond(await transport.handleRequest(exchange.request, request.body === undefined ? {} : { parsedBody: request.body }), { whole });
    } finally {
      for (const id of ids) session.pending.delete(id);
    }
  }

  function count(principal?: string, scope?: string): number {
    let n = 0;
    for (const session of open) if ((principal === undefined || session.owner === principal) && (scope === undefined || session.scope === scope)) n += 1;
    return n;
  }

  return {
    async handle(req, res, request) {
      const header = req.headers['mcp-session-id'];
      const id = Array.isArray(header) ? header[0] : header;
      if (id === undefined) {
        if (req.method === 'POST' && isInitializeRequest(request.body)) return start(req, res, request);
        return jsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      }
      const session = byId.get(id);
      // Another principal's session, or another endpoint's, is as unknown as a missing one: its id tells them nothing.
      if (session?.transport === undefined || session.owner !== (request.principal?.id ?? ADMIN_PRINCIPAL) || session.scope !== request.scope) {
        return jsonRpcError(res, 404, -32001, 'Session not found');
      }
      // The same user's later requests carry their current groups.
      session.principal = request.principal;
      enter(session, res);
      await serve(session, session.transport, req, res, request, session.made?.server);
    },

    each(scope, visit) {
      for (const [id, session] of byId) if (session.scope === scope && session.made !== undefined) visit(session.made.server, session.principal, id);
    },

    count,

    async close(scope) {
      await Promise.all([...open].filter((session) => scope === undefined || session.scope === scope).map((session) => end(session, SHUTTING_DOWN)));
    },
  };
}

/**
 * Whether nothing but its result can come of a session's request: one request
 * that asks for no progress, from a client that declared none of sampling,
 * elicitation and roots (so no request of a backend is forwarded to it during
 * the call), and whose logs go to the session's `GET` stream (`/mcp`'s do;
 * a server endpoint's go with the call, so it streams). Its answer is then
 * one JSON body rather than a stream.
 */
function nothingStreams(body: unknown, server: Server): boolean {
  if (!isJSONRPCRequest(body) || body.params?._meta?.progressToken !== undefined) return false;
  const declared = server.getClientCapabilities();
  return declared?.sampling === undefined && declared?.elicitation === undefined && declared?.roots === undefined;
}

/** The sessions of one endpoint (`scope`) of `pool`, each served by the server `makeServer` makes. */
export function createGatewaySessions(pool: SessionPool, scope: string, makeServer: (who: () => Principal | undefined) => Server): GatewaySessions {
  return {
    handle: (req, res, principal, body, exchange) =>
      pool.handle(req, res, { scope, principal, body, ...(exchange && { exchange }), whole: nothingStreams, open: (who) => ({ server: makeServer(who) }) }),
    each: (visit) => pool.each(scope, visit),
    count: (principal) => pool.count(principal, scope),
    close: () => pool.close(scope),
  };
}
