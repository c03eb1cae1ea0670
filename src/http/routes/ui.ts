import { fileURLToPath } from 'node:url';
import { loadExpress } from '../express.js';
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { tokensEqual } from '../api-token.js';
import { HttpError } from '../errors.js';
import { originCheck, requireJson } from '../security.js';
import { claimedUser, clearedSessionCookie, hasValidSession, oidcSessionPrincipal, readSessionCookie, sessionCookie, sessionValue, userSessionValue } from '../session.js';
import { keyHash, type Users } from '../../users/index.js';

/** The page's static files: plain ES modules and CSS, served as they are (no build step). */
const UI_DIR = fileURLToPath(new URL('../ui/', import.meta.url));
/** The generated state diagrams; the page inlines `server.svg` to highlight a server's state. */
const DIAGRAMS_DIR = fileURLToPath(new URL('../../../diagrams/', import.meta.url));
const DIAGRAM_FILE = /^[a-z]+\.svg$/;

/**
 * Nothing from elsewhere: no inline script, no CDN, no framing (clickjacking),
 * and no `Referer`, so a `?token=` in the page's URL cannot leak through one.
 */
function setPageHeaders(res: Response, frameSrc = "'none'"): void {
  res.setHeader(
    'Content-Security-Policy',
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
      `frame-src ${frameSrc}; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`,
  );
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'no-referrer');
  // Revalidate every time: after an upgrade the page must not run stale modules.
  res.setHeader('Cache-Control', 'no-cache');
}

export interface PageRoutesOptions {
  /** The sandbox origin apps are framed from, for a page reached at `pageHost`; undefined: the page frames nothing. */
  appsOrigin?: (pageHost: string) => string | undefined;
}

/** The one origin the page may frame: the sandbox origin, for the name the page was reached at (its `Host`, already checked). */
function appsFrameSource(req: Request, origin: PageRoutesOptions['appsOrigin']): string {
  if (origin === undefined || req.headers.host === undefined) return "'none'";
  return origin(req.headers.host) ?? "'none'";
}

/** The management page at `/`, its assets under `/ui/`, and the diagrams under `/ui/diagrams/`. */
export function pageRoutes(options: PageRoutesOptions = {}): Router {
  const router = loadExpress().Router();
  const statics = { index: false, dotfiles: 'ignore', setHeaders: setPageHeaders } as const;

  router.get('/', function page(req, res) {
    setPageHeaders(res, appsFrameSource(req, options.appsOrigin));
    res.sendFile('index.html', { root: UI_DIR });
  });

  router.get('/ui/diagrams/:file', function diagram(req, res, next) {
    if (!DIAGRAM_FILE.test(req.params.file)) return next();
    setPageHeaders(res);
    res.sendFile(req.params.file, { root: DIAGRAMS_DIR }, (err) => err && next());
  });

  router.use('/ui', loadExpress().static(UI_DIR, statics));
  return router;
}

const SignIn = z.strictObject({ token: z.string().min(1).max(4096) });

export interface SessionRoutesOptions {
  /** The API token a sign-in must present (or a user's key, with `users`). */
  token: string;
  users?: Users;
  bindHost: string;
  allowedHosts: readonly string[];
  /** Whether the page may offer the OIDC sign-in (`/ui/oidc/login`). */
  oidc?: boolean;
}

/**
 * `GET /ui/session` → `{signed_in, oidc}` (`oidc`: the sign-in through the provider is offered); `POST /ui/session` `{token}` → 204 and
 * the session cookie, or 401; `DELETE /ui/session` → 204 and the cookie
 * cleared. The mutations are Origin-checked exactly as on the API.
 */
export function sessionRoutes(options: SessionRoutesOptions): Router {
  const router = loadExpress().Router();
  const value = sessionValue(options.token);
  router.use(originCheck(options.bindHost, options.allowedHosts));
  router.use(requireJson);
  router.use(loadExpress().json({ limit: 8 * 1024 }));

  // Lets the page choose between its sign-in form and the servers without provoking a 401.
  router.get('/', async function session(req, res) {
    res.setHeader('Cache-Control', 'no-store');
    const signedIn =
      hasValidSession(req, options.token) || oidcSessionPrincipal(options.token, readSessionCookie(req) ?? '') !== undefined || (await userSignedIn(req));
    res.json({ signed_in: signedIn, oidc: options.oidc === true });
  });

  /** Whether the cookie is a user's session made with their current key. */
  async function userSignedIn(req: Request): Promise<boolean> {
    const presented = readSessionCookie(req) ?? '';
    const name = claimedUser(presented);
    if (name === undefined || options.users === undefined) return false;
    const stored = await options.users.get(name);
    return stored !== undefined && tokensEqual(userSessionValue(options.token, stored.name, stored.key_hash), presented);
  }

  // The API token signs the admin in; a user's key signs that user in.
  router.post('/', async function signIn(req, res) {
    const body = SignIn.safeParse(req.body ?? {});
    if (!body.success) throw new HttpError(400, 'invalid_request', 'token: a non-empty string is required', 'token');
    let cookie: string;
    if (tokensEqual(options.token, body.data.token)) {
      cookie = value;
    } else {
      const user = await options.users?.authenticate(body.data.token);
      if (user === undefined) {
        throw new HttpError(401, 'unauthorized', 'that is neither the API token of this worker nor a user key', 'token');
      }
      cookie = userSessionValue(options.token, user.id, keyHash(body.data.token));
    }
    res.setHeader('Set-Cookie', sessionCookie(req.socket.localPort ?? 0, cookie));
    res.setHeader('Cache-Control', 'no-store');
    res.status(204).end();
  });

  router.delete('/', function signOut(req, res) {
    res.setHeader('Set-Cookie', clearedSessionCookie(req.socket.localPort ?? 0));
    res.status(204).end();
  });

  return router;
}
