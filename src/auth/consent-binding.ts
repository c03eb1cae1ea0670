/**
 * The browser binding of a user's consent. Beginning one sets a cookie
 * holding a random binding and the principal, signed (HMAC-SHA256) with a key
 * every worker of the fleet derives alike (the store's `bindingKey`); the
 * pending consent keeps only a hash of the binding. The callback stores
 * tokens only when the browser presents a cookie whose signature holds, whose
 * principal began the consent and whose binding is the one recorded: a link
 * to the authorization server sent to someone else comes back in a browser
 * without it, and stores nothing.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** `__Host-`: only ever set Secure, by this origin, for the whole path (no subdomain or path can plant one). */
export const CONSENT_COOKIE = '__Host-mcp-fleet-consent';

/** A verified binding cookie: who began the consent, and the browser's random binding. */
export interface ConsentBinding {
  principal: string;
  nonce: string;
}

function mac(key: Buffer, principal: string, nonce: string): Buffer {
  return createHmac('sha256', key).update(`mcp-fleet consent binding\u0000${principal}\u0000${nonce}`).digest();
}

/** The cookie value for `binding`. */
export function bindingCookieValue(key: Buffer, binding: ConsentBinding): string {
  return `${Buffer.from(binding.principal).toString('base64url')}.${binding.nonce}.${mac(key, binding.principal, binding.nonce).toString('base64url')}`;
}

/** The binding a cookie value holds, if its signature holds; null otherwise. */
export function openBindingCookie(key: Buffer, value: string | undefined): ConsentBinding | null {
  const parts = value?.split('.');
  if (parts?.length !== 3) return null;
  const [who, nonce, signature] = parts as [string, string, string];
  const principal = Buffer.from(who, 'base64url').toString('utf8');
  if (principal === '' || !/^[A-Za-z0-9_-]{32,}$/.test(nonce)) return null;
  const presented = Buffer.from(signature, 'base64url');
  const expected = mac(key, principal, nonce);
  return presented.length === expected.length && timingSafeEqual(presented, expected) ? { principal, nonce } : null;
}

/** The binding for a new consent of `principal`: the browser's current one when its cookie is theirs (consents under way in other tabs keep theirs), else a new one. */
export function bindingFor(key: Buffer, principal: string, cookie: string | undefined): ConsentBinding {
  const held = openBindingCookie(key, cookie);
  return held !== null && held.principal === principal ? held : { principal, nonce: randomBytes(32).toString('base64url') };
}

/** What the pending consent keeps of a binding. */
export function bindingHash(nonce: string): string {
  return createHash('sha256').update(nonce).digest('base64url');
}

/**
 * `Set-Cookie` for the binding: HttpOnly, Secure, SameSite=Lax (sent on the
 * authorization server's top-level redirect back), Path=/, for as long as a
 * consent may wait.
 */
export function bindingSetCookie(value: string, maxAgeSeconds: number): string {
  return `${CONSENT_COOKIE}=${value}; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=${Math.max(1, Math.ceil(maxAgeSeconds))}`;
}

/** The binding cookie's value in a `Cookie` header, if any. */
export function readBindingCookie(header: string | undefined): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === CONSENT_COOKIE) return part.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * Whether a browser can hold the binding cookie at `publicUrl`: a Secure
 * cookie is set over HTTPS, or on a loopback host (browsers treat
 * `http://localhost` and `http://127.0.0.1` as secure). A plain-http public
 * URL of another host cannot bind the browser, so user consents are refused there.
 */
export function canBindBrowser(publicUrl: string): boolean {
  const url = new URL(publicUrl);
  if (url.protocol === 'https:') return true;
  return url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]' || url.hostname.endsWith('.localhost');
}
