/**
 * `/mcp/servers/:name`: one server of the fleet as a Streamable HTTP MCP
 * endpoint a client cannot tell from the server itself but by its URL and
 * auth. Its serverInfo, instructions and capabilities are the server's own;
 * its tools keep their own names. Both eras: 2025-11-25 with a session per
 * client (`Mcp-Session-Id`; bounded with `/mcp`'s, in one pool: sessions.ts),
 * 2026-07-28 stateless (one instance per request).
 *
 * Each request is the principal's: a server they may not see is a 404, a
 * tool they may not see is not listed and cannot be called, and a call goes
 * through the host's path (approvals, quota, `tool.called`). The worker holds
 * the server's credentials; only what the server answers leaves it.
 */
import type { Request, RequestHandler, Response, Router } from 'express';
import {
  createMcpHandler,
  DEFAULT_MAX_REQUEST_BODY_SIZE,
  InMemoryServerEventBus,
  type McpHttpHandler,
  isLegacyRequest,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type LoggingLevel,
  type ServerCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Client } from '@modelcontextprotocol/client';
import { notificationsOf } from '../connection/index.js';
import type { McpHost, ServerLink } from '../host.js';
import type { JournalEvent } from '../journal/index.js';
import type { Principal } from '../users/index.js';
import { userOf } from '../http/caller.js';
import { HttpError } from '../http/errors.js';
import { loadExpress } from '../http/express.js';
import { MissingInputsError } from '../host/sessions.js';
import { GatewayServer, refuseCursor } from './aggregate.js';
import { asCaller, forwardCall, requestingClient } from './forward.js';
import type { ProgressRoute } from './progress.js';
import { createRounds, type Rounds } from './rounds.js';
import type { Logger } from '../telemetry/index.js';
import { createSessionPool, type SessionPool } from './sessions.js';
import { answerModern, refuseShuttingDown, webExchange, type WebExchange } from './web-exchange.js';
import { holdSubscription, releaseSubscription } from '../connection/index.js';

export interface ServerEndpointOptions {
  /**
   * Decides who calls: lets the request on with its caller recorded
   * (`setCaller`), or answers it (401) itself. One middleware, so another
   * kind of auth is a one-line change.
   */
  auth: RequestHandler;
  /** Where failures of the endpoint itself (not the server's errors) are logged. */
  logger?: Pick<Logger, 'warn'>;
  /**
   * The worker's 2025-era sessions, shared with `/mcp` (one idle timeout, one cap per
   * principal and per worker for both); else a pool of its own with the default limits.
   */
  pool?: SessionPool;
  /** Where 2026-era calls are held across their input_required rounds, shared with `/mcp` (one set of bounds); else its own. */
  rounds?: Rounds;
}

/**
 * The endpoint and what it holds open: `close()` answers the 2026-era requests under way
 * "this worker is shutting down" (ending `subscriptions/listen` streams with the result that
 * says the end is meant), ends every 2025-era session (its requests under way answered alike),
 * and the 2026-era calls it holds across rounds, unless shared.
 */
export interface ServerEndpoint {
  router: Router;
  close(): Promise<void>;
}

/** Log levels in order of severity, as `logging/setLevel` compares them. */
const LEVELS: readonly LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/** A server instance forwarding to one server's client, and what it must be told as the fleet changes. */
interface Proxy {
  server: Server;
  /** A journal event about its server: list changes and logs go on to its client. */
  told(event: JournalEvent): void;
  /** Its client is gone: what it subscribed to is given up. */
  close(): void;
}

/** Answered already (a body that is no JSON): nothing more to do. */
const NO_BODY = Symbol('answered');

/**
 * The JSON body of a POST: as an auth that parses bodies left it (the API guard
 * does), else read here once, since both the era check and the transport need it.
 */
async function bodyOf(req: Request, res: Response): Promise<unknown> {
  if (req.method !== 'POST') return undefined;
  if (req.body !== undefined) return req.body;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > DEFAULT_MAX_REQUEST_BODY_SIZE) {
      res.status(413).json({ jsonrpc: '2.0', error: { code: -32600, message: 'Request body too large' }, id: null });
      return NO_BODY;
    }
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    res.status(400).json({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is not JSON' }, id: null });
    return NO_BODY;
  }
}

export function serverEndpoint(host: McpHost, options: ServerEndpointOptions): ServerEndpoint {
  const router = loadExpress().Router({ mergeParams: true });
  const pool = options.pool ?? createSessionPool();
  const rounds = options.rounds ?? createRounds();
  /** A server's sessions are a scope of the pool of their own: one server's session id is no other's. */
  const scopeOf = (server: string) => `/mcp/servers/${server}`;
  /** The scopes this endpoint opened sessions in, for `close()`. */
  const scopes = new Set<string>();
  /** Every instance serving a client now (a 2025-era session's, a 2026-era request's), by server: the journal's news goes to them. */
  const live = new Set<{ server: string; proxy: Proxy }>();
  /** Per server, the `subscriptions/listen` streams of 2026-era clients. */
  const buses = new Map<string, InMemoryServerEventBus>();
  const busOf = (server: string) => {
    let bus = buses.get(server);
    if (bus === undefined) buses.set(server, (bus = new InMemoryServerEventBus()));
    return bus;
  };
  const warn = (message: string) => options.logger?.warn(message);
  /** The 2026-era requests under way, each its own handler: closing the endpoint closes them. */
  const handlers = new Set<McpHttpHandler>();
  let closing = false;

  /** The journal is followed from the first client on: until then the endpoint costs the host nothing. */
  let unsubscribe: (() => void) | undefined;
  const follow = () =>
    (unsubscribe ??= host.subscribe((event) => {
      if (!('server' in event)) return;
      for (const each of live) if (each.server === event.server) each.proxy.told(event);
      const bus = buses.get(event.server);
      if (bus === undefined || event.type !== 'catalog.changed') return;
      bus.publish({ kind: `${event.kind}_list_changed` });
    }));

  async function handle(req: Request, res: Response): Promise<void> {
    const name = String(req.params.name);
    const principal = userOf(res);
    const link = host.serverLink(name, principal === undefined ? {} : { principal });
    // A server they may not see is as missing as one that does not exist.
    if (link === undefined) throw new HttpError(404, 'not_found', `no server named "${name}"`);
    const parsed = await bodyOf(req, res);
    if (parsed === NO_BODY) return;
    // One web Request for the era check and the server that answers.
    const exchange = await webExchange(req, res, parsed, DEFAULT_MAX_REQUEST_BODY_SIZE);
    // The worker stops: neither a 2026 handler (which close() already ran past) nor a session is made, nor the journal followed again.
    if (closing) return refuseShuttingDown(exchange, parsed);
    follow();
    if (!(await isLegacyRequest(exchange.request, parsed))) {
      await serveModern(link, principal, res, parsed, exchange);
      return;
    }
    const scope = scopeOf(name);
    scopes.add(scope);
    await pool.handle(req, res, {
      scope,
      principal,
      body: parsed,
      exchange,
      // A new session: the server's own client is reached first, so its capabilities are known.
      async open() {
        const proxy = createProxy(link, await reach(link), 'legacy', principal);
        const entry = { server: name, proxy };
        return {
            server: proxy.server,
            initialized: () => live.add(entry),
            ended: () => {
              live.delete(entry);
              proxy.close();
            },
          };
      },
    });
  }

  /** The server's client; a per_user server whose caller has not set their inputs is a 409 that names them. */
  async function reach(link: ServerLink): Promise<Client> {
    try {
      return await link.client();
    } catch (error) {
      if (error instanceof MissingInputsError) throw new HttpError(409, 'inputs_missing', error.message);
      throw error;
    }
  }

  /** One 2026-era request: a fresh instance answers it (the era is stateless), list changes through the server's bus. */
  async function serveModern(link: ServerLink, principal: Principal | undefined, res: Response, parsed: unknown, exchange: WebExchange): Promise<void> {
    const client = await reach(link);
    const made: Array<{ server: string; proxy: Proxy }> = [];
    const handler = createMcpHandler(
      () => {
        const entry = { server: link.server, proxy: createProxy(link, client, 'modern', principal) };
        made.push(entry);
        live.add(entry);
        return entry.proxy.server;
      },
      { legacy: 'reject', bus: busOf(link.server), onerror: (error) => warn(`/mcp/servers/${link.server}: ${error.message}`) },
    );
    handlers.add(handler);
    res.on('close', () => {
      handlers.delete(handler);
      for (const entry of made) {
        live.delete(entry);
        entry.proxy.close();
      }
      void handler.close();
    });
    await answerModern(handler, exchange, parsed, { closing: () => closing, onerror: (error) => warn(`/mcp/servers/${link.server}: ${error.message}`) });
  }

  /**
   * A server instance answering as `link`'s server does (what `client` said it is and offers),
   * each request forwarded to the server's client of the moment or the host's call path.
   */
  function createProxy(link: ServerLink, client: Client, era: 'legacy' | 'modern', principal: Principal | undefined): Proxy {
    const offered = client.getServerCapabilities() ?? {};
    const capabilities: ServerCapabilities = {
      ...(offered.tools && { tools: offered.tools }),
      ...(offered.resources && { resources: offered.resources }),
      ...(offered.prompts && { prompts: offered.prompts }),
      ...(offered.completions && { completions: offered.completions }),
      ...(offered.logging && { logging: offered.logging }),
    };
    const instructions = client.getInstructions();
    const info = client.getServerVersion() ?? { name: link.server, version: '0.0.0' };
    const server = new GatewayServer({ ...info }, { capabilities, ...(instructions !== undefined && { instructions }) });
    const request = (ctx: ServerContext) => ({ signal: ctx.mcpReq.signal });
    // The client of the moment: a server that reconnected serves an open session on its new connection.
    const now = (ctx: ServerContext) => link.client(ctx.mcpReq.signal);
    /** Runs a request so the server's requests to its client during it come to this request's client. */
    const forwarding = <T>(ctx: ServerContext, run: () => Promise<T>) => asCaller(host, link.server, requestingClient(server, ctx, era), run);
    /** The same for a call, whose server's requests reach a 2026-era client as input_required rounds. */
    const calling = <T>(ctx: ServerContext, run: (signal: AbortSignal, progress: ProgressRoute) => Promise<T>) => forwardCall({ host, server, era, rounds, principal }, link.server, ctx, run);
    /** The resources this client subscribed to, on the server's client it subscribed through. */
    const watching = new Map<string, { live: Client; stop: () => void }>();
    const unwatch = async (uri: string, options: { signal?: AbortSignal } = {}) => {
      const watched = watching.get(uri);
      if (watched === undefined) return;
      watching.delete(uri);
      watched.stop();
      await releaseSubscription(watched.live, uri, server, options);
    };
    /** The least severe level this client wants; it asked for none yet: every message. */
    let level: LoggingLevel = 'debug';
    /** Requests under way that may carry the server's logs (its tool calls), to their own stream. */
    const inFlight = new Set<ServerContext>();
    const notifyLog = (event: Extract<JournalEvent, { type: 'server.log' }>) => {
      if (LEVELS.indexOf(event.level) < LEVELS.indexOf(level)) return;
      const params = { level: event.level, data: event.message, ...(event.logger !== null && { logger: event.logger }) };
      if (inFlight.size > 0) {
        for (const ctx of inFlight) void ctx.mcpReq.notify({ method: 'notifications/message', params }).catch(() => {});
      } else if (era === 'legacy') {
        void server.sendLoggingMessage(params).catch(() => {});
      }
    };

    if (offered.tools) {
      // The server's tools as the worker listed them, every page: one page here, and a cursor one never issued.
      server.setRequestHandler('tools/list', async (list, ctx) => {
        refuseCursor(list.params);
        return { tools: await link.tools(ctx.mcpReq.signal) };
      });
      server.setRequestHandler('tools/call', async (call, ctx) => {
        const { name, arguments: args = {} } = call.params;
        // A tool the server does not list, its filter hides or the principal may not see: unknown, as the server's SDK says it.
        const listed = await link.tools(ctx.mcpReq.signal);
        if (!listed.some((tool) => tool.name === name)) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${name} not found`);
        const asked = call.params._meta?.progressToken !== undefined;
        inFlight.add(ctx);
        try {
          return await calling(ctx, (signal, progress) => link.callTool(name, args, { signal, ...(asked && { onProgress: progress.send }) }));
        } finally {
          inFlight.delete(ctx);
        }
      });
    }
    if (offered.resources) {
      server.setRequestHandler('resources/list', (list, ctx) => now(ctx).then((live) => live.listResources(list.params, request(ctx))));
      server.setRequestHandler('resources/templates/list', (list, ctx) => now(ctx).then((live) => live.listResourceTemplates(list.params, request(ctx))));
      server.setRequestHandler('resources/read', (read, ctx) => calling(ctx, (signal) => now(ctx).then((live) => live.readResource(read.params, { signal }))));
      if (offered.resources.subscribe) {
        server.setRequestHandler('resources/subscribe', async (subscribe, ctx) => {
          const { uri } = subscribe.params;
          if (watching.has(uri)) return {};
          const live = await now(ctx);
          // The server's connection is shared (with `/mcp` too): it is subscribed once, for every client that asked.
          await holdSubscription(live, uri, server, request(ctx));
          if (watching.has(uri)) return {};
          const stop = notificationsOf(live).subscribe('notifications/resources/updated', (updated) => {
            if (updated.params.uri === uri) void server.sendResourceUpdated(updated.params).catch(() => {});
          });
          watching.set(uri, { live, stop });
          return {};
        });
        server.setRequestHandler('resources/unsubscribe', async (unsubscribe, ctx) => {
          await unwatch(unsubscribe.params.uri, request(ctx));
          return {};
        });
      }
    }
    if (offered.prompts) {
      server.setRequestHandler('prompts/list', (list, ctx) => now(ctx).then((live) => live.listPrompts(list.params, request(ctx))));
      server.setRequestHandler('prompts/get', (get, ctx) => calling(ctx, (signal) => now(ctx).then((live) => live.getPrompt(get.params, { signal }))));
    }
    if (offered.completions) {
      server.setRequestHandler('completion/complete', (complete, ctx) => forwarding(ctx, () => now(ctx).then((live) => live.complete(complete.params, request(ctx)))));
    }
    if (offered.logging) {
      // Each client's own level: the server's connection is shared, so its level is not changed for one client.
      server.setRequestHandler('logging/setLevel', async (set) => {
        level = set.params.level;
        return {};
      });
    }

    return {
      server,
      close() {
        // A connection that closed meanwhile has forgotten the subscription anyway.
        for (const uri of [...watching.keys()]) void unwatch(uri).catch(() => {});
      },
      told(event) {
        if (event.type === 'server.log' && offered.logging) notifyLog(event);
        if (event.type !== 'catalog.changed' || era !== 'legacy') return;
        const changed = offered[event.kind]?.listChanged === true;
        if (!changed) return;
        const send = { tools: () => server.sendToolListChanged(), resources: () => server.sendResourceListChanged(), prompts: () => server.sendPromptListChanged() };
        void send[event.kind]().catch(() => {});
      },
    };
  }

  router.all('/:name', options.auth, function serveServer(req, res, next) {
    handle(req, res).catch(next);
  });

  return {
    router,
    async close() {
      closing = true;
      unsubscribe?.();
      unsubscribe = undefined;
      // A request under way is cut off by its handler's close, and answered that the worker is shutting down (web-exchange.ts).
      await Promise.all([...handlers].map((handler) => handler.close()));
      handlers.clear();
      await Promise.all([...scopes].map((scope) => pool.close(scope)));
      // Shared ones are their owner's (the gateway's) to cancel.
      if (options.rounds === undefined) rounds.close();
      live.clear();
    },
  };
}
