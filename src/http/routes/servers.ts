import { loadExpress } from '../express.js';
import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Router } from 'express';
import type { McpHost } from '../../host.js';
import { ServerCreate, ServerPatch } from '../../config/requests.js';
import type { ServerView } from '../../journal/index.js';
import { HttpError } from '../errors.js';
import { secretValuesOf } from '../../config/masking.js';
import { requireAdmin, userOf, viewFor, viewsFor } from '../caller.js';
import { bindingCookieValue, bindingFor, bindingHash, bindingSetCookie, readBindingCookie } from '../../auth/consent-binding.js';
import { ADMIN_PRINCIPAL } from '../../users/index.js';
import { z } from 'zod';

/** `PUT /api/mcp/servers/:name/inputs`: a value sets an input, `null` deletes it. */
const InputsBody = z.record(z.string(), z.string().nullable());

export interface ServerRoutesOptions {
  /** Told the secret values of every accepted body before the host sees them (so logs redact them at once). */
  onSecrets?: (values: string[]) => void;
  /** The `GET /` handler, when the app also mounts it on a route of its own (one cache for both); default: a new {@link serverList}. */
  list?: RequestHandler;
}

/** The server routes. Thin: validate, call the host, shape the answer. */
export function serverRoutes(host: McpHost, options: ServerRoutesOptions = {}): Router {
  const router = loadExpress().Router();
  const noteSecrets = (body: unknown) => options.onSecrets?.(secretValuesOf(body));

  router.get('/', options.list ?? serverList(host));

  router.post('/', async function addServer(req, res) {
    requireAdmin(res);
    const { name, ...config } = ServerCreate.parse(bodyObject(req));
    noteSecrets(config);
    const view = await host.addServer(name, config);
    if (view.version !== null) res.setHeader('ETag', `"${view.version}"`);
    res.status(201).location(`/api/mcp/servers/${name}`).json(view);
  });

  router.get('/:name', function getServer(req, res) {
    // A server the user may not see is as missing as one never configured.
    const user = userOf(res);
    const view = user === undefined ? host.server(req.params.name) : viewsFor(host, [host.server(req.params.name)], user)[0];
    if (!view) throw new HttpError(404, 'not_found', `no server named "${req.params.name}"`);
    if (view.version !== null) res.setHeader('ETag', `"${view.version}"`);
    res.json(view);
  });

  router.patch('/:name', async function patchServer(req, res) {
    requireAdmin(res);
    const body = bodyObject(req);
    const name = req.params.name;
    if ('name' in body) {
      if (body.name !== name) throw new HttpError(400, 'invalid_request', 'name: a server cannot be renamed', 'name');
      delete body.name;
    }
    ServerPatch.parse(body);
    // Not looked up here: the host answers 404 for an unknown name, and 409 for an entry in the file that does not validate.
    noteSecrets(body);
    const ifMatch = versionOf(req.get('if-match'));
    // The body as sent, not zod's output: PATCH semantics depend on which keys are present.
    const view = await host.updateServer(name, body, ifMatch === undefined ? {} : { ifMatch });
    if (view.version !== null) res.setHeader('ETag', `"${view.version}"`);
    res.json(view);
  });

  router.delete('/:name', async function removeServer(req, res) {
    requireAdmin(res);
    // The host removes an entry in the file that does not validate too (it has no view), and answers 404 for an unknown name.
    const ifMatch = versionOf(req.get('if-match'));
    await host.removeServer(req.params.name, ifMatch === undefined ? {} : { ifMatch });
    res.status(204).end();
  });

  router.post('/:name/restart', async function restartServer(req, res) {
    requireAdmin(res);
    requireServer(host, req.params.name);
    res.json(await host.restartServer(req.params.name));
  });

  // Re-lists tools, resources and prompts now (a server that never announces its changes); answers the counts.
  // A per_user server's through the caller's own session: a user may, for one they may see.
  router.post('/:name/refresh', async function refreshCatalog(req, res) {
    const user = userOf(res);
    const view = viewFor(requireServer(host, req.params.name), user);
    if (view === undefined) throw new HttpError(404, 'not_found', `no server named "${req.params.name}"`);
    if (view.config.scope !== 'per_user') requireAdmin(res);
    res.json(await host.refreshCatalog(req.params.name, user === undefined ? {} : { principal: user }));
  });

  // The caller's own inputs of a per_user server: which are set (never a value), and setting them (null deletes).
  router.get('/:name/inputs', async function getInputs(req, res) {
    const user = userOf(res);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await host.inputs(req.params.name, user === undefined ? {} : { principal: user }));
  });

  router.put('/:name/inputs', async function putInputs(req, res) {
    const parsed = InputsBody.safeParse(req.body);
    if (!parsed.success) throw new HttpError(400, 'invalid_request', 'the body must be {"NAME": "value" or null, ...}');
    // Every name as sent: zod's record leaves `__proto__` out, which would be accepted unseen rather than refused as undeclared.
    const values = Object.fromEntries(Object.entries(req.body as Record<string, string | null>));
    options.onSecrets?.(Object.values(values).filter((value): value is string => typeof value === 'string' && value !== ''));
    const user = userOf(res);
    res.setHeader('Cache-Control', 'no-store');
    res.json(await host.setInputs(req.params.name, values, user === undefined ? {} : { principal: user }));
  });

  // Starts consent (needs_reauth → authenticating); the answer is the URL to open. On a per_user
  // server each caller begins their own, bound to their browser by a signed cookie the callback checks.
  router.post('/:name/auth', async function beginAuth(req, res) {
    const name = req.params.name;
    const user = userOf(res);
    const view = viewFor(host.server(name), user);
    const ownGrant = view?.config.scope === 'per_user' && view.config.type === 'remote' && view.config.auth.kind === 'oauth';
    if (!ownGrant) {
      requireAdmin(res);
      requireServer(host, name);
      res.json(await host.beginAuth(name, user === undefined ? {} : { principal: user }));
      return;
    }
    const principal = user?.id ?? ADMIN_PRINCIPAL;
    const key = await host.consentBindingKey();
    const binding = bindingFor(key, principal, readBindingCookie(req.headers.cookie));
    const begun = await host.beginAuth(name, { ...(user && { principal: user }), browserBinding: bindingHash(binding.nonce) });
    res.setHeader('Set-Cookie', bindingSetCookie(bindingCookieValue(key, binding), host.consentTtlMs() / 1000));
    res.setHeader('Cache-Control', 'no-store');
    res.json(begun);
  });

  return router;
}

/**
 * `GET /api/mcp/servers`: `{"servers": [...]}` from a cache, with a strong
 * `ETag`; a request whose `If-None-Match` names it gets 304 and no body.
 * What `res.send` would answer (Express's own freshness check, `req.fresh`;
 * HEAD without the body), written directly: the route is polled, and the
 * cached bytes need none of `send`'s work on its argument.
 */
export function serverList(host: McpHost): RequestHandler {
  const listBody = serializedOnce();
  return function listServers(req, res) {
    const user = userOf(res);
    // A user's list is theirs alone: made for the request, never the shared cache.
    if (user !== undefined) {
      res.json({ servers: viewsFor(host, host.status(), user) });
      return;
    }
    const { body, etag } = listBody(host.status());
    res.setHeader('ETag', etag);
    if (req.fresh) {
      res.statusCode = 304;
      res.end();
      return;
    }
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', body.length);
    if (req.method === 'HEAD') res.end();
    else res.end(body);
  };
}

/** The bytes of a server list and their entity tag. */
interface ListBody {
  body: Buffer;
  /** A strong validator: a hash of the bytes, so the same bytes have the same tag, in any worker. */
  etag: string;
}

/**
 * `{"servers": [...]}` as bytes, made again only when a view changed. The
 * views are shared objects until an event about their server replaces them
 * (the host's selectors keep them), so the same objects in the same order mean the same
 * bytes: an idle fleet's list is not serialized again (113 KiB for 200
 * servers) on any request, and after a change only the changed server's view
 * is (each view's JSON is kept while the view is).
 */
function serializedOnce(): (views: ServerView[]) => ListBody {
  let lastViews: ServerView[] = [];
  let last: ListBody | null = null;
  const jsonOf = new WeakMap<ServerView, string>();
  const viewJson = (view: ServerView) => {
    let json = jsonOf.get(view);
    if (json === undefined) {
      json = JSON.stringify(view);
      jsonOf.set(view, json);
    }
    return json;
  };
  return function serverListBody(views) {
    if (last === null || views.length !== lastViews.length || views.some((view, i) => view !== lastViews[i])) {
      // Byte for byte what JSON.stringify({ servers: views }) gives.
      const body = Buffer.from(`{"servers":[${views.map(viewJson).join(',')}]}`);
      last = { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
      lastViews = views;
    }
    return last;
  };
}

/** The version an `If-Match` header names (`"12"`, `W/"12"` or `12`); undefined without one or for `*`. */
function versionOf(header: string | undefined): number | undefined {
  if (header === undefined || header.trim() === '*') return undefined;
  const match = /^\s*(?:W\/)?"?(\d{1,16})"?\s*$/.exec(header);
  if (!match) throw new HttpError(400, 'invalid_request', 'If-Match: expected the version of a server view, e.g. "12"');
  return Number(match[1]);
}

function requireServer(host: McpHost, name: string) {
  const view = host.server(name);
  if (!view) throw new HttpError(404, 'not_found', `no server named "${name}"`);
  return view;
}

/** The parsed JSON body as an object; anything else (array, empty body) is a 400. */
function bodyObject(req: Request): Record<string, unknown> {
  const body: unknown = req.body;
  // No body at all (JSON that is not an object never gets here: the parser and the API's guard refuse it).
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError(400, 'invalid_request', 'a JSON object body is required');
  }
  return { ...(body as Record<string, unknown>) };
}
