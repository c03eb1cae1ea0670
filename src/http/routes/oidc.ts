import type { Request, Router } from 'express';
import { loadExpress } from '../express.js';
import { HttpError } from '../errors.js';
import { OidcSignInError, PendingSignIn, type Oidc } from '../../users/oidc.js';
import {
  oidcSessionCookie,
  oidcSessionValue,
  pendingSignInCookieName,
  pendingSignInOf,
  pendingSignInValue,
  readCookie,
} from '../session.js';

/** Where the provider sends the browser back, under the page's origin. */
export const OIDC_CALLBACK_PATH = '/ui/oidc/callback';

export interface OidcRoutesOptions {
  oidc: Oidc;
  /** The API token: the key of the cookies' MACs. */
  token: string;
  /** Where browsers reach the worker (`serve --public-url`); else the request's own origin. */
  publicUrl?: string | undefined;
}

/**
 * The page's sign-in through OIDC: `GET /ui/oidc/login` sends the browser to
 * the provider, holding what the callback must match (state, nonce, PKCE
 * verifier) in a signed, HttpOnly cookie for ten minutes; `GET
 * /ui/oidc/callback` checks it, signs the user in (the page session cookie)
 * and sends them to the page. Nothing is kept on the worker, so the callback
 * works on any worker behind the same public URL and API token.
 */
export function oidcRoutes(options: OidcRoutesOptions): Router {
  const router = loadExpress().Router();
  const origin = (req: Request): string => (options.publicUrl ?? `${req.protocol}://${req.headers.host}`).replace(/\/$/, '');
  const secure = (req: Request): boolean => origin(req).startsWith('https:');
  const port = (req: Request): number => req.socket.localPort ?? 0;

  router.get('/login', async function beginSignIn(req, res) {
    const { url, pending } = await options.oidc.begin(`${origin(req)}${OIDC_CALLBACK_PATH}`);
    res.setHeader(
      'Set-Cookie',
      `${pendingSignInCookieName(port(req))}=${pendingSignInValue(options.token, pending)}; HttpOnly; SameSite=Lax; Path=/ui/oidc; Max-Age=600${secure(req) ? '; Secure' : ''}`,
    );
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(302, url);
  });

  router.get('/callback', async function finishSignIn(req, res) {
    res.setHeader('Cache-Control', 'no-store');
    const cleared = `${pendingSignInCookieName(port(req))}=; HttpOnly; SameSite=Lax; Path=/ui/oidc; Max-Age=0${secure(req) ? '; Secure' : ''}`;
    // A callback this browser did not begin (a link from someone else, a replay after it ended) has no pending cookie.
    const pending = PendingSignIn.safeParse(pendingSignInOf(options.token, readCookie(req, pendingSignInCookieName(port(req))) ?? ''));
    if (!pending.success) {
      res.setHeader('Set-Cookie', cleared);
      throw new HttpError(400, 'sign_in_refused', 'no sign-in was begun in this browser (or it ended): start again from the page');
    }
    const query = new URL(req.originalUrl, 'http://callback.invalid').searchParams;
    let principal;
    try {
      principal = await options.oidc.finish(query, pending.data);
    } catch (error) {
      res.setHeader('Set-Cookie', cleared);
      if (error instanceof OidcSignInError) throw new HttpError(400, 'sign_in_refused', error.message);
      throw error;
    }
    res.setHeader('Set-Cookie', [cleared, oidcSessionCookie(port(req), oidcSessionValue(options.token, principal), secure(req))]);
    res.redirect(302, '/');
  });

  return router;
}
