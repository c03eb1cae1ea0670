import { loadExpress } from './express.js';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { tokensEqual } from './api-token.js';
import { HttpError } from './errors.js';
import { claimedUser, hasValidSession, oidcSessionPrincipal, readSessionCookie, userSessionValue } from './session.js';
import { setCaller, setStillSignedIn, setUserKey } from './caller.js';
import { ADMIN_PRINCIPAL, keyHash, principalOfUser, type Principal, type Users } from '../users/index.js';

const MUTATIONS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** True for a host name or address that only this machine can reach. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare);
}

/**
 * The `Host` values accepted on `port`: when bound to loopback, any loopback
 * spelling a client may use; otherwise exactly the bound host. Port 80 may be
 * omitted by clients, so the bare name is accepted there too.
 */
export function allowedHostValues(bindHost: string, port: number, extra: readonly string[] = []): Set<string> {
  const bracket = (h: string) => (h.includes(':') && !h.startsWith('[') ? `[${h}]` : h);
  const names = isLoopback(bindHost) ? ['127.0.0.1', 'localhost', '[::1]', bracket(bindHost)] : [bracket(bindHost)];
  const values = new Set<string>(extra.map((h) => h.toLowerCase()));
  for (const name of names) {
    values.add(`${name.toLowerCase()}:${port}`);
    if (port === 80) values.add(name.toLowerCase());
  }
  return values;
}

/**
 * Refuses a request whose `Host` is not this server (DNS rebinding: a page on
 * evil.example resolved to 127.0.0.1 still sends `Host: evil.example`). The
 * port is read from the socket, so the check is right even after `listen(0)`.
 */
export function hostCheck(bindHost: string, extra: readonly string[] = []): RequestHandler {
  // One set per local port (normally one), built once instead of on every request.
  const byPort = new Map<number, Set<string>>();
  return function checkHost(req, _res, next) {
    const host = req.headers.host?.toLowerCase();
    const port = req.socket.localPort ?? 0;
    let allowed = byPort.get(port);
    if (allowed === undefined) {
      allowed = allowedHostValues(bindHost, port, extra);
      byPort.set(port, allowed);
    }
    if (host === undefined || !allowed.has(host)) {
      next(new HttpError(403, 'forbidden_host', 'Host header does not name this server'));
      return;
    }
    next();
  };
}

/**
 * Requires `Authorization: Bearer <token>` (the API token, or a user's key)
 * or, when no such header is sent, the management page's session cookie of
 * either; compared in constant time. A request let in by the cookie is
 * marked, so `originCheck` can hold it to the stricter rule browsers make
 * possible. Who it acts for is recorded (caller.ts).
 */
function bearerAuth(token: string, users: Users | undefined): RequestHandler {
  const refuse = (res: Response, next: NextFunction) => {
    res.setHeader('WWW-Authenticate', 'Bearer');
    next(new HttpError(401, 'unauthorized', 'missing or wrong bearer token'));
  };
  return function checkToken(req, res, next) {
    const header = req.headers.authorization;
    if (header === undefined) {
      if (hasValidSession(req, token)) {
        res.locals.viaSessionCookie = true;
        setCaller(res, undefined);
        next();
        return;
      }
      // An OIDC user's session stands on its own MAC and expiry: no store to ask.
      const signedIn = oidcSessionPrincipal(token, readSessionCookie(req) ?? '');
      if (signedIn !== undefined) {
        res.locals.viaSessionCookie = true;
        setCaller(res, signedIn);
        next();
        return;
      }
      const user = users === undefined ? undefined : claimedUser(readSessionCookie(req) ?? '');
      if (user === undefined || users === undefined) return refuse(res, next);
      // The cookie names a user: it holds only while their key is the one it was made with.
      return users.get(user).then((stored) => {
        if (stored === undefined || !tokensEqual(userSessionValue(token, stored.name, stored.key_hash), readSessionCookie(req) ?? '')) {
          return refuse(res, next);
        }
        res.locals.viaSessionCookie = true;
        setCaller(res, principalOfUser(stored));
        setUserKey(res, stored.key_hash);
        // A long request (an event stream) asks again whether the cookie still holds.
        const cookie = readSessionCookie(req) ?? '';
        setStillSignedIn(res, async () => {
          const now = await users.get(user);
          return now !== undefined && tokensEqual(userSessionValue(token, now.name, now.key_hash), cookie);
        });
        next();
      });
    }
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    const presented = match?.[1];
    if (!presented) return refuse(res, next);
    if (tokensEqual(token, presented)) {
      setCaller(res, undefined);
      next();
      return;
    }
    if (users === undefined) return refuse(res, next);
    return users.authenticate(presented).then((user: Principal | undefined) => {
      if (user === undefined) return refuse(res, next);
      setCaller(res, user);
      setUserKey(res, keyHash(presented));
      setStillSignedIn(res, async () => (await users.authenticate(presented))?.id === user.id);
      next();
    });
  };
}

/**
 * A mutation carrying an `Origin` must come from this server's own origin:
 * a browser page elsewhere cannot drive the API (CSRF). Requests without
 * `Origin` (the CLI, curl) pass; `Origin: null` does not. A mutation
 * authenticated by the page's cookie must carry its `Origin`: browsers always
 * send one on POST/PATCH/DELETE, so a request without it did not come from
 * the page.
 */
export function originCheck(bindHost: string, extra: readonly string[] = []): RequestHandler {
  return function checkOrigin(req, res, next) {
    const origin = req.headers.origin;
    if (!MUTATIONS.has(req.method)) {
      next();
      return;
    }
    if (origin === undefined) {
      if (res.locals.viaSessionCookie === true) {
        next(new HttpError(403, 'forbidden_origin', 'a cookie-authenticated mutation must send its Origin'));
      } else {
        next();
      }
      return;
    }
    if (!isOwnOrigin(origin, req, bindHost, extra)) {
      next(new HttpError(403, 'forbidden_origin', 'cross-origin mutations are refused'));
      return;
    }
    next();
  };
}

function isOwnOrigin(origin: string, req: Request, bindHost: string, extra: readonly string[]): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' || url.origin !== origin.toLowerCase()) return false;
  const port = req.socket.localPort ?? 0;
  const host = url.port === '' && port === 80 ? `${url.hostname}:80` : url.host;
  return allowedHostValues(bindHost, port, extra).has(host);
}

/** A mutation that carries a body must declare it as JSON. */
export const requireJson: RequestHandler = function checkContentType(req, _res, next) {
  if (MUTATIONS.has(req.method) && hasBody(req) && !req.is('application/json')) {
    next(new HttpError(415, 'unsupported_media_type', 'request body must be application/json'));
    return;
  }
  next();
};

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

export interface ApiGuardOptions {
  token: string;
  /** The users whose keys are let in too; without it only the API token is. */
  users?: Users;
  bindHost: string;
  allowedHosts: readonly string[];
  bodyLimit: number;
}

/**
 * Who a request that needs no credentials is signed in as, if anyone: sets
 * `res.locals.signedIn` to the principal id (`admin` for the API token) its
 * bearer or page session names, or null. Never refuses: the OAuth callback
 * uses it only to refuse a user's consent answered under someone else.
 */
export function identifyCaller(token: string, users: Users | undefined): RequestHandler {
  const check = bearerAuth(token, users);
  return function identify(req, res, next) {
    const presented = req.headers.authorization !== undefined || readSessionCookie(req) !== undefined;
    if (!presented) {
      res.locals.signedIn = null;
      next();
      return;
    }
    const outcome: unknown = check(req, res, (error?: unknown) => {
      res.removeHeader('WWW-Authenticate');
      const caller = res.locals.caller as { user: Principal | undefined } | undefined;
      res.locals.signedIn = error == null && caller !== undefined ? (caller.user?.id ?? ADMIN_PRINCIPAL) : null;
      delete res.locals.caller;
      delete res.locals.viaSessionCookie;
      next();
    });
    if (outcome instanceof Promise) outcome.catch(next);
  };
}

/**
 * What every `/api` request passes, in order: the bearer token (or the page's
 * cookie), the Origin of mutations, the content type, the body parser (for
 * methods that may carry a body: a GET skips its checks). One middleware, not
 * four: each router layer costs every request a match and a `next`.
 */
export function apiGuard(options: ApiGuardOptions): RequestHandler {
  const parseJson = loadExpress().json({ limit: options.bodyLimit });
  const checks: RequestHandler[] = [
    bearerAuth(options.token, options.users),
    originCheck(options.bindHost, options.allowedHosts),
    requireJson,
    function parseBody(req, res, next) {
      if (!MUTATIONS.has(req.method)) {
        next();
        return;
      }
      // Every body is an object: an array is JSON, just not a body, on every route alike.
      parseJson(req, res, (error?: unknown) =>
        next(error ?? (Array.isArray(req.body) ? new HttpError(400, 'invalid_json', 'request body must be a JSON object') : undefined)),
      );
    },
  ];
  // Each step's callback is an anonymous argument: under tsx a named function made per
  // request pays a defineProperty of its name (esbuild's keepNames).
  // As Express's own `next`: a missing or null error goes on; a check's rejected promise is an error.
  const run = (at: number, req: Request, res: Response, next: NextFunction): void => {
    const check = checks[at];
    if (check === undefined) {
      next();
      return;
    }
    const outcome: unknown = check(req, res, (error?: unknown) => (error == null ? run(at + 1, req, res, next) : next(error)));
    if (outcome instanceof Promise) outcome.catch(next);
  };
  return function guardApi(req, res, next) {
    run(0, req, res, next);
  };
}
