/**
 * Who sent a request, as the guard decided it (the admin token, a user key,
 * or the page's session cookie of either), and what a user is shown: only
 * what the access policy lets them see, never the policy itself (it names
 * other users and groups), and of a server's config only what a user of it
 * needs (configForUser).
 */
import type { RequestHandler, Response } from 'express';
import type { JournalEvent } from '../journal/index.js';
import { basename } from 'node:path';
import type { ServerView } from '../journal/index.js';
import { MASK, type ServerConfigResponse } from '../config/index.js';
import type { CatalogEntry, McpHost } from '../host.js';
import { ADMIN_PRINCIPAL, maySeeServer, maySeeTool, withoutPolicy, type Me, type Principal, type Users } from '../users/index.js';
import { HttpError } from './errors.js';
import { namespaceToolName } from '../catalog/index.js';

/** The caller of a request: `undefined` principal is the admin. */
export interface Caller {
  /** The user, or undefined for the admin token. */
  user: Principal | undefined;
}

const ADMIN: Caller = { user: undefined };

/** Records who the request acts for (the guard does, once it let it in). */
export function setCaller(res: Response, user: Principal | undefined): void {
  res.locals.caller = user === undefined ? ADMIN : { user };
}

/** The user a request acts for; undefined for the admin. */
export function userOf(res: Response): Principal | undefined {
  return (res.locals.caller as Caller | undefined)?.user;
}

/**
 * Records which key of a user the request came with (its hash; a page session
 * carries the key it was made with): what they open belongs to that sign-in,
 * not to whoever holds the name later.
 */
export function setUserKey(res: Response, hash: string): void {
  res.locals.userKey = hash;
}

/** The hash of the user key a request came with; undefined for the admin and for an OIDC session. */
export function userKeyOf(res: Response): string | undefined {
  return res.locals.userKey as string | undefined;
}

/** Records how a long request asks again whether its user's key (or page session) still holds. */
export function setStillSignedIn(res: Response, check: () => Promise<boolean>): void {
  res.locals.stillSignedIn = check;
}

/**
 * Ends a long request of a user (an event stream) once their key was rotated
 * or they were removed: at once when it happened through `users` here, else
 * at the next `recheck()` (another worker's change). The admin token, and an
 * OIDC session (its own MAC and expiry), are not asked. Returns the unsubscribe.
 */
export function endWhenSignedOut(res: Response, users: Users | undefined, end: () => void): { recheck(): void; stop(): void } {
  const user = userOf(res);
  const still = res.locals.stillSignedIn as (() => Promise<boolean>) | undefined;
  if (user === undefined || still === undefined) return { recheck: () => {}, stop: () => {} };
  const recheck = () => {
    still().then(
      (holds) => {
        if (!holds) end();
      },
      () => {},
    );
  };
  const stop = users?.onSignedOut((name) => name === user.id && recheck()) ?? (() => {});
  return { recheck, stop };
}

/** `GET /api/mcp/me`. */
export function meOf(res: Response): Me {
  const user = userOf(res);
  return user === undefined ? { principal: ADMIN_PRINCIPAL, groups: [], admin: true } : { principal: user.id, groups: [...user.groups], admin: false };
}

/** Lets only the admin through; a user gets 403 `forbidden`. */
export const adminOnly: RequestHandler = function adminOnly(_req, res, next) {
  if (userOf(res) === undefined) {
    next();
    return;
  }
  next(new HttpError(403, 'forbidden', 'only the admin may do this'));
};

/** The view as `user` is shown it: undefined when they may not see the server (a 404, never a 403). */
export function viewFor(view: ServerView | undefined, user: Principal | undefined): ServerView | undefined {
  if (view === undefined || user === undefined) return view;
  if (!maySeeServer(view.config, user)) return undefined;
  return { ...view, config: configForUser(view.config) };
}

/**
 * A server's config as a user is shown it. What runs the server on the worker is the
 * admin's business: of a local server, the program's name without its directory,
 * arguments, working directory or environment; of a remote one, its URL and how it
 * authenticates, without its headers or any mask of a stored secret. Masks of the
 * `${user.…}` templates go too: what a user sets is `user_inputs`, which stays.
 */
export function configForUser(config: ServerConfigResponse): ServerConfigResponse {
  const shown = withoutPolicy(config);
  if (shown.type === 'local') {
    return { ...shown, command: [basename(shown.command[0] ?? '')], cwd: null, env: {}, inherit_env: [] };
  }
  // Every mask of every kind (`token_masked`, `client_secret_masked`, `idp_client_secret_masked`…): the `has_…` flags stay.
  const auth = Object.fromEntries(Object.entries(shown.auth).map(([key, value]) => [key, key.endsWith('_masked') ? null : value])) as typeof shown.auth;
  // A credential in the URL's query shows as a bare mask, without the last characters an admin sees.
  return { ...shown, url: shown.url.replace(/••••[^&#]*/g, MASK), headers: {}, auth };
}

/**
 * The views `user` may see, as they are shown them, each `tool_count` the
 * tools of it they may see: how many a policy hides from them is not theirs
 * to learn.
 */
export function viewsFor(host: McpHost, views: ReadonlyArray<ServerView | undefined>, user: Principal): ServerView[] {
  let tools: Map<string, CatalogEntry['tools']> | undefined;
  return views.flatMap((view) => {
    const shown = viewFor(view, user);
    if (view === undefined || shown === undefined) return [];
    // The catalog only once a view is shown: it holds the tools, as the user's session listed them for a per_user server.
    tools ??= new Map(host.catalog({ principal: user }).map((entry) => [entry.name, entry.tools]));
    // The policy is read off the config as stored: the shown one has it taken out.
    return [{ ...shown, tool_count: (tools.get(view.name) ?? []).filter((tool) => maySeeTool(view.config, tool.original, user)).length }];
  });
}

/** The events that record what one principal did: a user sees only their own. */
const OWNED: ReadonlySet<JournalEvent['type']> = new Set([
  'tool.called',
  'approval.requested',
  'approval.decided',
  'consent.begun',
  'consent.completed',
  'consent.failed',
  'inputs.changed',
  'session.changed',
] as const);

/**
 * Whether `user` may see a journal event: their own calls, approvals,
 * consents, input changes and sessions; of a server they may see, its other events;
 * `worker.started` (no names).
 */
export function eventVisibleTo(host: McpHost, event: JournalEvent, user: Principal | undefined): boolean {
  if (user === undefined) return true;
  if (event.type === 'worker.started') return true;
  // An owned event without a principal (a journal older than principals) was the admin's.
  if (OWNED.has(event.type) && (!('principal' in event) || event.principal !== user.id)) return false;
  // A shadowing names the other server too: both must be theirs to see, and the tool on each.
  if (event.type === 'tool.shadowed') {
    if (!serverVisible(host, event.shadowed_server, user)) return false;
    if (hiddenTools(host, event.server, user).has(event.tool) || hiddenTools(host, event.shadowed_server, user).has(event.tool)) return false;
  }
  if (!serverVisible(host, event.server, user)) return false;
  // A change of tools they may not see is no change to them: not even that one happened.
  if (event.type === 'catalog.changed' && event.kind === 'tools') {
    const shown = eventFor(host, event, user) as typeof event;
    return shown.added.length + shown.removed.length + shown.changed.length > 0 || event.added.length + event.removed.length + event.changed.length === 0;
  }
  return true;
}

/**
 * The agent names (`{server}__{tool}`) of the tools of `server` that `user` may
 * not see: those its `tools.access` names and does not allow them. A tool of
 * another name that maps to the same agent name is hidden with it.
 */
function hiddenTools(host: McpHost, server: string, user: Principal): ReadonlySet<string> {
  const config = host.server(server)?.config;
  const rules = config?.tools.access;
  if (config === undefined || rules === undefined || rules === null) return NONE;
  const hidden = Object.keys(rules).filter((original) => !maySeeTool(config, original, user));
  return hidden.length === 0 ? NONE : new Set(hidden.map((original) => namespaceToolName(server, original)));
}
const NONE: ReadonlySet<string> = new Set();

function serverVisible(host: McpHost, name: string, user: Principal): boolean {
  const view = host.server(name);
  return view !== undefined && maySeeServer(view.config, user);
}

/**
 * The event as `user` is shown it: a config without its policy; of the tools
 * registered, unregistered or changed, only those they may see.
 */
export function eventFor(host: McpHost, event: JournalEvent, user: Principal | undefined): JournalEvent {
  if (user === undefined) return event;
  if (event.type === 'server.configured') return { ...event, config: configForUser(event.config) };
  if (event.type === 'tools.registered') {
    const config = host.server(event.server)?.config;
    if (config === undefined) return event;
    return { ...event, tools: event.tools.filter((tool) => maySeeTool(config, tool.original, user)) };
  }
  if (event.type === 'tools.unregistered') {
    const hidden = hiddenTools(host, event.server, user);
    return hidden.size === 0 ? event : { ...event, tools: event.tools.filter((name) => !hidden.has(name)) };
  }
  if (event.type === 'catalog.changed' && event.kind === 'tools') {
    const config = host.server(event.server)?.config;
    if (config === undefined) return event;
    // Their names here are the server's own, as `tools.access` keys them.
    const visible = (name: string) => maySeeTool(config, name, user);
    return { ...event, added: event.added.filter(visible), removed: event.removed.filter(visible), changed: event.changed.filter(visible) };
  }
  return event;
}

/** Throws 403 `forbidden` unless the request is the admin's (inside a handler, where a middleware would lose its route's types). */
export function requireAdmin(res: Response): void {
  if (userOf(res) !== undefined) throw new HttpError(403, 'forbidden', 'only the admin may do this');
}
