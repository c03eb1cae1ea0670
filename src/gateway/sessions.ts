/**
 * The 2025-era sessions of the gateway on this worker: each is one
 * `Mcp-Session-Id`, its transport and its server, bound to the principal that
 * opened it. Bounded: ended after `idleMs` without a request (an open stream
 * counts as one), at most `maxSessions` on the worker and `maxPerPrincipal`
 * per principal, and a `DELETE` ends it. A session id this worker does not
 * hold (another worker's, an ended one, another principal's) is answered 404,
 * which tells a client to start a new session.
 */
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { isInitializeRequest, type Server } from '@modelcontextprotocol/server';
import { ADMIN_PRINCIPAL, type Principal } from '../users/index.js';

export interface GatewaySessionLimits {
  /** A session with no request for this long ends. Default 30 minutes. */
  idleMs?: number;
  /** Sessions open on this worker at once. Default 1000. */
  maxSessions?: number;
  /** Sessions one principal may hold open on this worker at once. Default 20. */
  maxPerPrincipal?: number;
}

export const DEFAULT_SESSION_LIMITS = { idleMs: 30 * 60_000, maxSessions: 1000, maxPerPrincipal: 20 } as const;

interface Session {
  id: string | undefined;
  owner: string;
  principal: Principal | undefined;
  server: Server;
  transport: NodeStreamableHTTPServerTransport;
  /** Requests (and streams) still open on it. */
  active: number;
  idle: NodeJS.Timeout | undefined;
  ended: boolean;
}

export interface GatewaySessions {
  /** Serves a 2025-era request (`body` parsed) for `principal`. */
  handle(req: Request, res: Response, principal: Principal | undefined, body: unknown): Promise<void>;
  /** Each open session's server, principal and id (for notifications). */
  each(visit: (server: Server, principal: Principal | undefined, id: string) => void): void;
  /** Open sessions: all, or one principal's. */
  count(principal?: string): number;
  /** Ends every session. */
  close(): Promise<void>;
}

function jsonRpcError(res: Response, status: number, code: number, message: string): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

export function createGatewaySessions(makeServer: (who: () => Principal | undefined) => Server, limits: GatewaySessionLimits = {}): GatewaySessions {
  const idleMs = limits.idleMs ?? DEFAULT_SESSION_LIMITS.idleMs;
  const maxSessions = limits.maxSessions ?? DEFAULT_SESSION_LIMITS.maxSessions;
  const maxPerPrincipal = limits.maxPerPrincipal ?? DEFAULT_SESSION_LIMITS.maxPerPrincipal;
  /** Every session, those still initializing too (they count against the limits). */
  const open = new Set<Session>();
  const byId = new Map<string, Session>();

  function end(session: Session): void {
    if (session.ended) return;
    session.ended = true;
    clearTimeout(session.idle);
    open.delete(session);
    if (session.id !== undefined) byId.delete(session.id);
    void session.transport.close().catch(() => {});
    void session.server.close().catch(() => {});
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
      if (session.id === undefined) return end(session);
      session.idle = setTimeout(() => end(session), idleMs);
      session.idle.unref();
    });
  }

  async function open_(req: Request, res: Response, principal: Principal | undefined, body: unknown): Promise<void> {
    const owner = principal?.id ?? ADMIN_PRINCIPAL;
    if (open.size >= maxSessions) return jsonRpcError(res, 503, -32000, `this worker holds its limit of ${maxSessions} sessions; try again later`);
    if (count(owner) >= maxPerPrincipal) return jsonRpcError(res, 429, -32000, `${owner} holds the limit of ${maxPerPrincipal} sessions on this worker; end one (DELETE) first`);
    const session: Session = {
      id: undefined,
      owner,
      principal,
      server: makeServer(() => session.principal),
      transport: new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized(id) {
          session.id = id;
          byId.set(id, session);
        },
        onsessionclosed: () => end(session),
      }),
      active: 0,
      idle: undefined,
      ended: false,
    };
    session.transport.onclose = () => end(session);
    open.add(session);
    try {
      await session.server.connect(session.transport);
    } catch (error) {
      end(session);
      throw error;
    }
    enter(session, res);
    await session.transport.handleRequest(req, res, body);
  }

  function count(principal?: string): number {
    if (principal === undefined) return open.size;
    let n = 0;
    for (const session of open) if (session.owner === principal) n += 1;
    return n;
  }

  return {
    async handle(req, res, principal, body) {
      const header = req.headers['mcp-session-id'];
      const id = Array.isArray(header) ? header[0] : header;
      if (id === undefined) {
        if (req.method === 'POST' && isInitializeRequest(body)) return open_(req, res, principal, body);
        return jsonRpcError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
      }
      const session = byId.get(id);
      // Another principal's session is as unknown as a missing one: its id tells them nothing.
      if (session === undefined || session.owner !== (principal?.id ?? ADMIN_PRINCIPAL)) return jsonRpcError(res, 404, -32001, 'Session not found');
      // The same user's later requests carry their current groups.
      session.principal = principal;
      enter(session, res);
      await session.transport.handleRequest(req, res, body);
    },

    each(visit) {
      for (const [id, session] of byId) visit(session.server, session.principal, id);
    },

    count,

    async close() {
      for (const session of [...open]) end(session);
    },
  };
}
