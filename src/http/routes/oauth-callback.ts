import type { RequestHandler } from 'express';
import type { McpHost } from '../../host.js';
import { CallbackRefusedError } from '../../auth/server-auth.js';
import { openBindingCookie, readBindingCookie } from '../../auth/consent-binding.js';

/**
 * `GET /oauth/callback`: where the authorization server sends the browser
 * back when the worker has a public URL. A plain-text page for the user;
 * what happened to the server shows in its status. A user's own consent is
 * answered only in the browser that began it (its binding cookie), and not
 * while another principal is signed in there (`res.locals.signedIn`, set by
 * `identifyCaller` in front of this route).
 */
export function consentCallback(host: McpHost): RequestHandler {
  return async function oauthCallback(req, res) {
    const query = new URL(req.originalUrl, 'http://callback.invalid').searchParams;
    res.set({ 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
    try {
      const cookie = readBindingCookie(req.headers.cookie);
      const binding = cookie === undefined ? null : openBindingCookie(await host.consentBindingKey().catch(() => Buffer.alloc(32)), cookie);
      const signedIn = typeof res.locals.signedIn === 'string' ? res.locals.signedIn : null;
      const server = await host.answerConsentCallback(query, { binding, signedIn });
      res.send(`Authorized ${server}. You can close this window.\n`);
    } catch (error) {
      if (error instanceof CallbackRefusedError) res.status(error.status).send(`${error.message}\n`);
      else throw error;
    }
  };
}
