import type { RequestHandler } from 'express';
import type { McpHost } from '../../host.js';
import { CallbackRefusedError } from '../../auth/server-auth.js';

/**
 * `GET /oauth/callback`: where the authorization server sends the browser
 * back when the worker has a public URL. A plain-text page for the user;
 * what happened to the server shows in its status.
 */
export function consentCallback(host: McpHost): RequestHandler {
  return async function oauthCallback(req, res) {
    const query = new URL(req.originalUrl, 'http://callback.invalid').searchParams;
    res.set({ 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' });
    try {
      const server = await host.answerConsentCallback(query);
      res.send(`Authorized ${server}. You can close this window.\n`);
    } catch (error) {
      if (error instanceof CallbackRefusedError) res.status(error.status).send(`${error.message}\n`);
      else throw error;
    }
  };
}
