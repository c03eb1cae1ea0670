import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { z } from 'zod';
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

/** How long an OIDC page session lasts: a working day; then the page signs in again through the provider. */
export const OIDC_SESSION_TTL_SECONDS = 12 * 60 * 60;

const OidcSession = z.object({ id: z.string().min(1), groups: z.array(z.string()), exp: z.number() });

const mac = (token: string, label: string, body: string): Buffer => createHmac('sha256', token).update(`${label}\0${body}`).digest();

/** Whether `presented` (base64url) is the MAC of `body`, compared in constant time. */
function macHolds(token: string, label: string, body: string, presented: string): boolean {
  const expected = mac(token, label, body);
  const given = Buffer.from(presented, 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The JSON of a base64url body; undefined when it is not JSON. */
function decoded(body: string): unknown {
  try {
    return JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * An OIDC user's page session: `o.<claims>.<mac>`, the claims (`id`, `groups`,
 * `exp` in epoch seconds) in base64url JSON, the MAC keyed by the API token.
 * Nothing is kept on the worker and every worker with the same token takes
 * it; it ends at `exp`, or when the token changes.
 */
export function oidcSessionValue(token: string, principal: { id: string; groups: string[] }, nowMs = Date.now()): string {
  const body = Buffer.from(
    JSON.stringify({ id: principal.id, groups: principal.groups, exp: Math.floor(nowMs / 1000) + OIDC_SESSION_TTL_SECONDS }),
  ).toString('base64url');
  return `o.${body}.${mac(token, 'mcp-fleet oidc session v1', body).toString('base64url')}`;
}

/** The principal of an OIDC session value made with `token` and not expired; undefined otherwise. */
export function oidcSessionPrincipal(token: string, value: string, nowMs = Date.now()): { id: string; groups: string[] } | undefined {
  const match = /^o\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(value);
  if (match === null || !macHolds(token, 'mcp-fleet oidc session v1', match[1]!, match[2]!)) return undefined;
  const parsed = OidcSession.safeParse(decoded(match[1]!));
  if (!parsed.success || parsed.data.exp * 1000 <= nowMs) return undefined;
  return { id: parsed.data.id, groups: parsed.data.groups };
}

/**
 * `Set-Cookie` for an OIDC session: SameSite=Lax, since it is set at the end
 * of a redirect from the provider (a Strict cookie would not be sent on the
 * way back to the page); `Secure` when the page is served over https.
 * Mutations stay safe: a cookie-authenticated mutation must carry this
 * server's Origin (security.ts).
 */
export function oidcSessionCookie(port: number, value: string, secure: boolean): string {
  return `${sessionCookieName(port)}=${value}; HttpOnly; SameSite=Lax; Path=/; Max-Age=${OIDC_SESSION_TTL_SECONDS}${secure ? '; Secure' : ''}`;
}

/** The cookie holding a begun OIDC sign-in until its callback. */
export function pendingSignInCookieName(port: number): string {
  return `mcp_fleet_oidc_${port}`;
}

/** A pending sign-in as a cookie value: base64url JSON and its MAC (the browser cannot change what it will be checked against). */
export function pendingSignInValue(token: string, pending: object): string {
  const body = Buffer.from(JSON.stringify(pending)).toString('base64url');
  return `${body}.${mac(token, 'mcp-fleet oidc pending v1', body).toString('base64url')}`;
}

/** The pending sign-in of a cookie value, if its MAC holds. */
export function pendingSignInOf(token: string, value: string): unknown {
  const match = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(value);
  if (match === null || !macHolds(token, 'mcp-fleet oidc pending v1', match[1]!, match[2]!)) return undefined;
  return decoded(match[1]!);
}

/** A cookie of `req` by name. */
export function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
