import { Router } from 'express';
import type { Request } from 'express';
import type { McpHost } from '../../host.js';
import { ServerCreate, ServerPatch } from '../../services/config/requests.js';
import type { ServerView } from '../../services/journal/server-view.js';
import { HttpError, secretValuesOf } from '../errors.js';

export interface ServerRoutesOptions {
  /** Told the secret values of every accepted body before the host sees them (so logs redact them at once). */
  onSecrets?: (values: string[]) => void;
}

/** SPEC §6 server routes. Thin: validate, call the host, shape the answer. */
export function serverRoutes(host: McpHost, options: ServerRoutesOptions = {}): Router {
  const router = Router();
  const noteSecrets = (body: unknown) => options.onSecrets?.(secretValuesOf(body));

  const listBody = serializedOnce();
  router.get('/', function listServers(_req, res) {
    res.set('Content-Type', 'application/json; charset=utf-8').send(listBody(host.status()));
  });

  router.post('/', async function addServer(req, res) {
    const { name, ...config } = ServerCreate.parse(bodyObject(req));
    noteSecrets(config);
    const view = await host.addServer(name, config);
    res.status(201).location(`/api/mcp/servers/${name}`).json(view);
  });

  router.get('/:name', function getServer(req, res) {
    res.json(requireServer(host, req.params.name));
  });

  router.patch('/:name', async function patchServer(req, res) {
    const body = bodyObject(req);
    const name = req.params.name;
    if ('name' in body) {
      if (body.name !== name) throw new HttpError(400, 'invalid_request', 'name: a server cannot be renamed', 'name');
      delete body.name;
    }
    ServerPatch.parse(body);
    requireServer(host, name);
    noteSecrets(body);
    // The body as sent, not zod's output: PATCH semantics depend on which keys are present.
    res.json(await host.updateServer(name, body));
  });

  router.delete('/:name', async function removeServer(req, res) {
    requireServer(host, req.params.name);
    await host.removeServer(req.params.name);
    res.status(204).end();
  });

  router.post('/:name/restart', async function restartServer(req, res) {
    requireServer(host, req.params.name);
    res.json(await host.restartServer(req.params.name));
  });

  // Starts consent (needs_reauth → authenticating); the answer is the URL to open.
  router.post('/:name/auth', async function beginAuth(req, res) {
    requireServer(host, req.params.name);
    res.json(await host.beginAuth(req.params.name));
  });

  return router;
}

/**
 * `{"servers": [...]}` as bytes, serialized again only when a view changed.
 * The views are shared objects until the next journal event replaces them
 * (see `serverViews`), so the same objects in the same order mean the same
 * bytes: an idle fleet's list is not re-serialized (84 KiB for 200 servers)
 * on every request.
 */
function serializedOnce(): (views: ServerView[]) => Buffer {
  let lastViews: ServerView[] = [];
  let lastBody: Buffer | null = null;
  return function serverListBody(views) {
    const same =
      lastBody !== null && views.length === lastViews.length && views.every((view, i) => view === lastViews[i]);
    if (!same) {
      lastBody = Buffer.from(JSON.stringify({ servers: views }));
      lastViews = views;
    }
    return lastBody!;
  };
}

function requireServer(host: McpHost, name: string) {
  const view = host.server(name);
  if (!view) throw new HttpError(404, 'not_found', `no server named "${name}"`);
  return view;
}

/** The parsed JSON body as an object; anything else (array, empty body) is a 400. */
function bodyObject(req: Request): Record<string, unknown> {
  const body: unknown = req.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError(400, 'invalid_request', 'request body must be a JSON object');
  }
  return { ...(body as Record<string, unknown>) };
}
