/**
 * What the MCP server's auth challenges tell the provider, seen on the
 * transport's fetch (the SDK reads the same responses for its own retries,
 * with the same parser):
 *
 * - Scope step-up (MCP authorization, "Scope Challenge Handling"): a `403`
 *   with `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`
 *   wants a token with more scope. The SDK transport re-authorizes with that
 *   scope and retries the request once; the provider remembers the scope for
 *   the next consent, and a second refusal makes the server need consent
 *   instead of failing silently.
 * - A `401` from the MCP endpoint: its `resource_metadata` is where discovery
 *   looks, and a refused token sends the next authorization back to
 *   discovery (the authorization server may have moved, SEP-2352). A refused
 *   bearer token is replaced by the provider (the one another request or
 *   worker got already, else one refresh) and the request sent once more
 *   with it; only a replacement refused too reaches the SDK's own auth().
 *
 * The transport also sends discovery, registration and token requests through
 * this fetch: only answers of the MCP endpoint itself count as its challenges.
 * Its refresh-token requests (the SDK refreshing by itself, after a 401 or for
 * a step-up) never leave: the provider's locked refresh answers them
 * (sdk-refresh.ts), so no refresh bypasses the credentials lock.
 */
import { extractWWWAuthenticateParams, isDpopNonceChallenge, type FetchLike, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { FleetOAuthProvider } from './provider.js';
import { answeringSdkRefresh } from './sdk-refresh.js';

/**
 * A fetch reporting the MCP server's auth challenges to `provider` and
 * handing it the SDK's refreshes; undefined (the default fetch) for any other provider.
 */
export function scopeChallengeFetch(provider: OAuthClientProvider | undefined): FetchLike | undefined {
  if (!(provider instanceof FleetOAuthProvider)) return undefined;
  const endpoint = new URL(provider.serverUrl);
  return answeringSdkRefresh(provider, async function fetchWatchingChallenges(url, init) {
    const response = await fetch(url, init);
    if (!sameEndpoint(new URL(url), endpoint)) return response;
    if (response.status === 401) {
      const headers = new Headers(init?.headers);
      const presented = /^Bearer (.+)$/i.exec(headers.get('authorization') ?? '')?.[1];
      await provider.noteUnauthorized(response, headers.has('authorization'));
      // A refused bearer token is replaced here, once per token however many requests it refused, and the request
      // sent again: handed to the SDK, each 401 would start an auth() that refreshes whatever token is held by then.
      if (presented !== undefined && !isDpopNonceChallenge(response)) {
        const replacement = await provider.replaceRefused(presented).catch(() => undefined);
        if (replacement !== undefined && replacement !== presented) {
          await response.body?.cancel();
          headers.set('authorization', `Bearer ${replacement}`);
          const retried = await fetch(url, { ...init, headers });
          if (retried.status === 401) await provider.noteUnauthorized(retried, true);
          return retried;
        }
      }
    }
    if (response.status === 403) {
      const challenge = extractWWWAuthenticateParams(response);
      if (challenge.error === 'insufficient_scope') await provider.noteScopeChallenge(challenge.scope);
    }
    return response;
  });
}

/** Whether `url` is the MCP endpoint (its query aside). */
function sameEndpoint(url: URL, endpoint: URL): boolean {
  return url.origin === endpoint.origin && url.pathname === endpoint.pathname;
}
