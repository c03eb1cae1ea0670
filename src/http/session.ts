import { createHmac } from 'node:crypto';
import type { Request } from 'express';
import { tokensEqual } from './api-token.js';

/**
 * The management page's sign-in: the API token is posted once and answered
 * with an HttpOnly, SameSite=Strict cookie, so page scripts never hold it.
 *
 * The cookie carries a value derived from the token (HMAC), not the token
 * itself: browsers send a `127.0.0.1` cookie to every port of that host, and
 * the bearer token the CLI uses should not travel that far. The value is
 * stable across worker restarts and changes whenever the token does.
 */

/** Cookie name; the port is part of it because cookies are shared by every port of a host. */
export function sessionCookieName(port: number): string {
  return `mcp_fleet_session_${port}`;
}

/** The cookie value that stands for `token`. */
export function sessionValue(token: string): string {
  return createHmac('sha256', token).update('mcp-fleet management page session v1').digest('base64url');
}

/** The session cookie sent with `req`, if any. */
export function readSessionCookie(req: Request): string | undefined {
  const name = sessionCookieName(req.socket.localPort ?? 0);
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** True when `req` carries the session cookie of `token` (constant-time comparison). */
export function hasValidSession(req: Request, token: string): boolean {
  const presented = readSessionCookie(req);
  return presented !== undefined && tokensEqual(sessionValue(token), presented);
}

/** `Set-Cookie` for a signed-in page: not readable by scripts, never sent by another site. */
export function sessionCookie(port: number, value: string): string {
  return `${sessionCookieName(port)}=${value}; HttpOnly; SameSite=Strict; Path=/`;
}

/** `Set-Cookie` that signs the page out. */
export function clearedSessionCookie(port: number): string {
  return `${sessionCookieName(port)}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`;
}

/**
 * A user's page session: `u.<name>.<mac>`, the MAC keyed by the API token
 * over the user's name and the hash of their current key. Nothing is kept on
 * the worker, any worker of a fleet (same token) accepts it, and rotating the
 * key, removing the user or changing the API token ends it.
 */
export function userSessionValue(token: string, name: string, keyHash: string): string {
  const mac = createHmac('sha256', token).update(`mcp-fleet user session v1\0${name}\0${keyHash}`).digest('base64url');
  return `u.${name}.${mac}`;
}

/** The user name a session cookie value claims (unchecked); undefined when it is not a user's. */
export function claimedUser(value: string): string | undefined {
  const match = /^u\.([A-Za-z0-9_-]{1,64})\.[A-Za-z0-9_-]+$/.exec(value);
  return match?.[1];
}
