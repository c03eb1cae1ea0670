/**
 * Scope step-up (MCP authorization, "Scope Challenge Handling"): a server
 * answering `403` with `WWW-Authenticate: Bearer error="insufficient_scope",
 * scope="…"` wants a token with more scope. The SDK transport re-authorizes
 * with that scope and retries the request once; this fetch lets the provider
 * see the challenge, so the scope is remembered for the next consent and a
 * second refusal makes the server need consent instead of failing silently.
 * The challenge is read with the SDK's own parser, as the transport reads it.
 */
import { extractWWWAuthenticateParams, type FetchLike, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { FleetOAuthProvider } from './provider.js';

/** A fetch reporting scope challenges to `provider`; undefined (the default fetch) for any other provider. */
export function scopeChallengeFetch(provider: OAuthClientProvider | undefined): FetchLike | undefined {
  if (!(provider instanceof FleetOAuthProvider)) return undefined;
  return async function fetchWatchingScope(url, init) {
    const response = await fetch(url, init);
    if (response.status === 403) {
      const challenge = extractWWWAuthenticateParams(response);
      if (challenge.error === 'insufficient_scope') await provider.noteScopeChallenge(challenge.scope);
    }
    return response;
  };
}
