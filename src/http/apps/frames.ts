/**
 * The apps a page has open, and the sandbox origin that serves their frames.
 *
 * An app's frame is served by a second port of the worker (`serve
 * --apps-port`): another origin than the page, so even a frame that escaped
 * its sandbox could not read the page's DOM, and its requests are
 * cross-origin to the API (whose mutations refuse a foreign Origin). Each
 * open app has an unguessable id: its frame document, and the place the
 * browser reports its CSP violations, are reachable only through that id.
 */
import { randomBytes } from 'node:crypto';
import type { Express, Response } from 'express';
import { buildAllowAttribute } from '@modelcontextprotocol/ext-apps/app-bridge';
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/client';
import type { McpHost } from '../../host.js';
import type { AppSession, ToolUi } from '../../apps/index.js';
import type { Principal } from '../../users/index.js';
import { loadExpress } from '../express.js';
import { hostCheck } from '../security.js';
import { HttpError, errorHandler, notFoundHandler } from '../errors.js';
import { FRAME_SANDBOX, frameCsp, type FrameCsp } from './csp.js';
import { RelayTransport } from './relay.js';

/** Apps open at once across all pages of a worker: each holds a bridge. */
export const MAX_OPEN_APPS = 32;
/** An app whose page never opened (or lost) its stream is closed after this long. */
const UNWATCHED_MS = 30_000;
const ID = /^[A-Za-z0-9_-]{32}$/;

/** What the page is told on its event stream, one SSE event each. */
export type AppEvent =
  | { event: 'message'; data: JSONRPCMessage }
  | { event: 'size'; data: { width?: number; height?: number } }
  | { event: 'problem'; data: { message: string } }
  | { event: 'open-link'; data: { url: string } }
  | { event: 'app-message'; data: { text: string } }
  | { event: 'model-context'; data: { text: string } }
  | { event: 'closed'; data: { reason: string } };

/** One open app. */
export interface OpenApp {
  id: string;
  /** Who opened it: a user's id, or null for the admin. Only they reach it, and a user only with the key they opened it with. */
  opener: string | null;
  /** The hash of the user key it was opened with; undefined for the admin and an OIDC session. */
  openerKey: string | undefined;
  ui: ToolUi;
  pageOrigin: string;
  csp: FrameCsp;
  transport: RelayTransport;
  session: AppSession;
  /** Sends an event to the page's stream, or keeps it until the page listens. */
  emit(event: AppEvent): void;
  /** The page's stream; replaces one already open. */
  watch(res: Response): void;
  /** Whether a page's stream is open: what the worker sends reaches the frame now. */
  watched(): boolean;
}

/** How the page is to embed an app: what `POST /api/mcp/apps` answers. */
export interface AppFrame {
  id: string;
  tool: string;
  server: string;
  frame_url: string;
  sandbox: string;
  allow: string;
  prefers_border: boolean | null;
  /** Declared CSP values that are not plain origins (or are the worker's own): ignored. */
  csp_dropped: string[];
}

export interface OpenAppRequest {
  tool: string;
  /** The `Host` the page was reached at (checked by the API's Host check): the frame is served under the same name. */
  pageHost: string;
  /** The user the app is opened for (their access, quota and journal); absent for the admin. */
  principal?: Principal | undefined;
  /** The hash of the user key they opened it with (`userKeyOf`): a rotated key, or a new user of the same name, does not reach it. */
  userKey?: string | undefined;
  input?: Record<string, unknown>;
  result?: CallToolResult;
}

export interface AppFrames {
  /** The sandbox origin's app: listen on it, then tell `listeningOn` the port. */
  app: Express;
  listeningOn(port: number): void;
  /** The sandbox origin's port, or undefined before it listens. */
  port(): number | undefined;
  /** The origin frames are served from for a page reached at `pageHost` (its Host header), or undefined before it listens. */
  origin(pageHost: string): string | undefined;
  open(host: McpHost, request: OpenAppRequest): Promise<AppFrame>;
  get(id: string): OpenApp | undefined;
  close(id: string, reason: string): Promise<void>;
  /** Closes every app user `name` opened: their key went (rotated, or the user removed), and with it their apps. */
  closeOpenedBy(name: string, reason: string): Promise<void>;
  closeAll(): Promise<void>;
}

export interface AppFramesOptions {
  bindHost: string;
  allowedHosts?: readonly string[];
  /**
   * The public origin of the sandbox port (`serve --apps-url`), as a browser
   * reaches it through a proxy (https). Absent: the name the page was reached
   * at, on the sandbox port, over http.
   */
  appsOrigin?: string;
  /** The page's public origin (`serve --public-url`): the frames' only ancestor. Absent: the name the page was reached at. */
  pageOrigin?: string;
}

/** The origin of `url` (scheme, host, port as given), lowercase. */
const originOf = (url: string) => new URL(url).origin.toLowerCase();

export function createAppFrames(options: AppFramesOptions): AppFrames {
  const apps = new Map<string, OpenApp>();
  let appsPort: number | undefined;
  const publicApps = options.appsOrigin === undefined ? undefined : originOf(options.appsOrigin);
  const publicPage = options.pageOrigin === undefined ? undefined : originOf(options.pageOrigin);
  const origin = (pageHost: string): string | undefined => {
    if (appsPort === undefined) return undefined;
    // The same name the page was reached at (an IPv6 hostname keeps its brackets), the sandbox port.
    return publicApps ?? `http://${new URL(`http://${pageHost.toLowerCase()}`).hostname}:${appsPort}`;
  };

  /** Closes in progress: a second close of the same app waits for the first. */
  const closing = new Map<string, Promise<void>>();
  const close = (id: string, reason: string): Promise<void> => {
    const app = apps.get(id);
    if (app === undefined) return Promise.resolve();
    const running = closing.get(id);
    if (running !== undefined) return running;
    const done = (async () => {
      // The app stays reachable while it tears down: the teardown goes out on the
      // page's stream and its answer comes back as a message. With no stream, nobody
      // could answer: the relay is closed first, so the teardown fails at once.
      if (!app.watched()) await app.transport.close();
      await app.session.close().catch(() => {});
      apps.delete(id);
      app.emit({ event: 'closed', data: { reason } });
      await app.transport.close();
    })().finally(() => closing.delete(id));
    closing.set(id, done);
    return done;
  };

  async function open(host: McpHost, request: OpenAppRequest): Promise<AppFrame> {
    if (appsPort === undefined) throw new HttpError(503, 'not_ready', 'the sandbox origin for apps is not listening');
    if (apps.size >= MAX_OPEN_APPS) throw new HttpError(429, 'too_many_apps', `at most ${MAX_OPEN_APPS} apps may be open at once`);
    const principal = request.principal;
    const ui = await host.toolUi(request.tool, principal === undefined ? {} : { principal });
    if (ui === null) throw new HttpError(404, 'not_found', `tool "${request.tool}" has no app`);
    const id = randomBytes(24).toString('base64url');
    const pageOrigin = publicPage ?? `http://${request.pageHost.toLowerCase()}`;
    const appsOrigin = origin(request.pageHost)!;
    const csp = frameCsp(ui.csp, { pageOrigin, ownOrigins: [pageOrigin, appsOrigin], reportUri: `/frames/${id}/csp` });

    const transport = new RelayTransport();
    const pending: AppEvent[] = [];
    let stream: Response | undefined;
    let unwatched: NodeJS.Timeout | undefined;
    const emit = (event: AppEvent) => {
      if (stream && !stream.writableEnded) stream.write(`event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`);
      else if (pending.length < 256) pending.push(event);
    };
    const unwatchedFor = () => {
      clearTimeout(unwatched);
      unwatched = setTimeout(() => void close(id, 'the page stopped listening'), UNWATCHED_MS);
      unwatched.unref();
    };
    transport.onerror = (error) => emit({ event: 'problem', data: { message: `bridge: ${error.message}` } });
    const session = await host.appBridge(request.tool, transport, {
      ...(principal !== undefined && { principal }),
      onSizeChange: (size) => emit({ event: 'size', data: size }),
      // Nothing here talks to a model: the page shows what the app asks, the user decides.
      onMessage: (message) => {
        const text = message.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n');
        emit({ event: 'app-message', data: { text } });
        return {};
      },
      // Each update replaces the last; the page shows what the app would have a model know.
      onUpdateModelContext: (context) => {
        const blocks = (context.content ?? []).map((block) => (block.type === 'text' ? block.text : `[${block.type}]`));
        const text = [...blocks, ...(context.structuredContent === undefined ? [] : [JSON.stringify(context.structuredContent)])].join('\n');
        emit({ event: 'model-context', data: { text: text.length > 2000 ? `${text.slice(0, 2000)}…` : text } });
      },
      onOpenLink: ({ url }) => {
        // Only web links are offered to the user, and only as a link they may follow.
        if (!/^https?:\/\//i.test(url)) return { isError: true };
        emit({ event: 'open-link', data: { url } });
        return {};
      },
    });
    const app: OpenApp = {
      id,
      opener: principal?.id ?? null,
      openerKey: request.userKey,
      ui,
      pageOrigin,
      csp,
      transport,
      session,
      emit,
      watch(res) {
        clearTimeout(unwatched);
        if (stream && !stream.writableEnded) stream.end();
        stream = res;
        for (const event of pending.splice(0)) emit(event);
        transport.attach((message) => emit({ event: 'message', data: message }));
        res.on('close', () => {
          if (stream !== res) return;
          stream = undefined;
          transport.detach();
          unwatchedFor();
        });
      },
      watched: () => stream !== undefined && !stream.writableEnded,
    };
    apps.set(id, app);
    unwatchedFor();
    // The app hears what it was called with once it said hello.
    session.initialized.then(async () => {
      if (request.input !== undefined) await session.sendToolInput(request.input);
      if (request.result !== undefined) await session.sendToolResult(request.result);
    }).catch((error: Error) => emit({ event: 'problem', data: { message: `could not hand the app its tool call: ${error.message}` } }));
    return {
      id,
      tool: ui.tool,
      server: ui.server,
      frame_url: `${appsOrigin}/frames/${id}`,
      sandbox: FRAME_SANDBOX,
      allow: buildAllowAttribute(ui.permissions),
      prefers_border: ui.prefersBorder,
      csp_dropped: csp.dropped,
    };
  }

  return {
    app: sandboxApp(apps, options, () => appsPort),
    listeningOn(port) {
      appsPort = port;
    },
    port: () => appsPort,
    origin,
    open,
    get: (id) => (ID.test(id) ? apps.get(id) : undefined),
    close,
    async closeOpenedBy(name, reason) {
      await Promise.all([...apps.values()].filter((app) => app.opener === name).map((app) => close(app.id, reason)));
    },
    async closeAll() {
      await Promise.all([...apps.keys()].map((id) => close(id, 'the worker is stopping')));
    },
  };
}

/**
 * The sandbox origin: `GET /frames/:id` (the app's document under its CSP)
 * and `POST /frames/:id/csp` (the browser's violation reports, shown on the
 * page). Nothing else: no API, no page, no cookie.
 */
function sandboxApp(apps: Map<string, OpenApp>, options: AppFramesOptions, port: () => number | undefined): Express {
  const express = loadExpress();
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // The names the page may be reached at (bound address, `--allowed-host`), on the sandbox port, and the public apps origin's.
  let checkHost: ReturnType<typeof hostCheck> | undefined;
  app.use(function sandboxHost(req, res, next) {
    checkHost ??= hostCheck(options.bindHost, [
      ...(options.allowedHosts ?? []).map((value) => `${new URL(`http://${value}`).hostname}:${port() ?? 0}`),
      ...(options.appsOrigin === undefined ? [] : [new URL(options.appsOrigin).host.toLowerCase()]),
    ]);
    checkHost(req, res, next);
  });

  app.get('/frames/:id', function frame(req, res) {
    const open = ID.test(req.params.id) ? apps.get(req.params.id) : undefined;
    if (open === undefined || port() === undefined) throw new HttpError(404, 'not_found', 'no such app');
    res.setHeader('Content-Security-Policy', open.csp.policy);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    res.type('text/html; charset=utf-8').send(open.ui.html);
  });

  // `report-uri` posts `application/csp-report` (a JSON body); small, and only for an open app.
  const reports = express.json({ type: ['application/csp-report', 'application/reports+json', 'application/json'], limit: 16 * 1024 });
  app.post('/frames/:id/csp', reports, function cspReport(req, res) {
    const open = ID.test(req.params.id) ? apps.get(req.params.id) : undefined;
    if (open !== undefined) {
      const report = (req.body?.['csp-report'] ?? {}) as Record<string, unknown>;
      const directive = String(report['effective-directive'] ?? report['violated-directive'] ?? 'a directive');
      const blocked = String(report['blocked-uri'] ?? 'something');
      open.emit({ event: 'problem', data: { message: `blocked by the app's content security policy (${directive}): ${blocked}` } });
    }
    res.status(204).end();
  });

  app.use(notFoundHandler);
  app.use(errorHandler());
  return app;
}
