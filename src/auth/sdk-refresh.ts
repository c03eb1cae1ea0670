/**
 * The SDK's own refresh, taken through the credentials lock. After a 401, and
 * for a scope step-up, the SDK transport runs `auth()`, which refreshes by
 * itself: it posts the refresh token it read from the provider to the token
 * endpoint, through the transport's fetch. Sent as it is, that request would
 * bypass the lock every other refresh holds: two workers could present one
 * refresh token, and an authorization server that rotates them takes the
 * second use for a stolen token and revokes the whole grant. So the request
 * is answered here by the provider's locked refresh (`refreshFor`), which
 * re-reads the stored tokens and refreshes only if nobody did; the SDK gets
 * its tokens as if the endpoint had answered.
 */
import type { FetchLike } from '@modelcontextprotocol/client';
import { isAuthorizationServerAway } from './away.js';
import { ConsentRequiredError } from './oauth-errors.js';
import type { FleetOAuthProvider } from './provider.js';

/** `next`, except that a refresh-token grant is answered by `provider`'s locked refresh. */
export function answeringSdkRefresh(provider: FleetOAuthProvider, next: FetchLike): FetchLike {
  return async function fetchRefreshingUnderLock(url, init) {
    const presented = refreshTokenOf(init);
    if (presented === undefined) return next(url, init);
    try {
      return tokenResponse(200, await provider.refreshFor(presented));
    } catch (err) {
      // Only a consent helps now (the server's listeners were told): the SDK hears it as the endpoint would say it.
      if (err instanceof ConsentRequiredError) {
        return tokenResponse(400, { error: 'invalid_grant', error_description: 'the refresh token was rejected' });
      }
      // No answer: said so, so that the SDK neither reads it as a broken answer nor falls back to a consent.
      if (isAuthorizationServerAway(err)) {
        return tokenResponse(503, { error: 'temporarily_unavailable', error_description: err.message });
      }
      throw err;
    }
  };
}

/** The refresh token of a token request with `grant_type=refresh_token` (RFC 6749, section 6); undefined for any other request. */
function refreshTokenOf(init: RequestInit | undefined): string | undefined {
  if (init?.method?.toUpperCase() !== 'POST') return undefined;
  const { body } = init;
  const form = body instanceof URLSearchParams ? body : typeof body === 'string' ? new URLSearchParams(body) : undefined;
  if (form?.get('grant_type') !== 'refresh_token') return undefined;
  return form.get('refresh_token') ?? undefined;
}

/** A token endpoint's answer (RFC 6749, section 5): JSON, never cached. */
function tokenResponse(status: number, body: unknown): Response {
  return Response.json(body, { status, headers: { 'Cache-Control': 'no-store', Pragma: 'no-cache' } });
}
