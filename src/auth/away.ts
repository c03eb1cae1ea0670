/**
 * The authorization server away: a request of a refresh, a discovery or a
 * consent that got no answer (refused, no such host, TLS, timed out) or a
 * 5xx. Nobody needs to consent again: the grant is intact and the stored
 * refresh token works once the server is back, so this is `unreachable`,
 * never `needs_reauth`, and the server machine retries by itself.
 */
import type { FetchLike } from '@modelcontextprotocol/client';
import { networkFailure } from '../connection/reachability.js';
import { FleetError } from '../errors.js';

/** The `unreachable` failure of an OAuth request; the refresh token it would have used is kept. */
export class AuthorizationServerAwayError extends FleetError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('unreachable', message, options);
  }
}

export function isAuthorizationServerAway(err: unknown): err is AuthorizationServerAwayError {
  return err instanceof AuthorizationServerAwayError;
}

/**
 * `inner` (default: the global fetch) for the OAuth requests of the MCP
 * server at `serverUrl`, except that a request that got no answer, or a
 * 5xx, rejects with an AuthorizationServerAwayError: "could not reach the
 * authorization server <its origin> (of <server>): connection refused
 * (ECONNREFUSED)". The SDK's OAuth helpers would read a 5xx as a broken
 * answer, and its discovery skips a metadata URL that did not answer:
 * neither is what happened.
 */
export function fetchNotingAway(serverUrl: string, inner: FetchLike = fetch): FetchLike {
  const server = new URL(serverUrl).origin;
  return async function fetchOrAway(url, init) {
    const origin = new URL(url).origin;
    // Discovery asks the MCP server itself first (its protected resource metadata). Otherwise the
    // host that did not answer is named, for that is where to look; an origin holds no path, query or userinfo.
    const whom = origin === server ? server : `the authorization server ${origin} (of ${server})`;
    let response: Response;
    try {
      response = await inner(url, init);
    } catch (err) {
      const failure = networkFailure(err);
      if (failure !== undefined) throw new AuthorizationServerAwayError(`could not reach ${whom}: ${failure.reason}`, { cause: err });
      // A bounded request that ran out of time: as good as no answer. A caller's own abort passes through.
      if (err instanceof Error && err.name === 'TimeoutError') {
        throw new AuthorizationServerAwayError(`could not reach ${whom}: no answer in time`, { cause: err });
      }
      throw err;
    }
    if (response.status >= 500) {
      await response.body?.cancel().catch(() => undefined);
      throw new AuthorizationServerAwayError(`${whom} answered HTTP ${response.status} (${new URL(url).pathname})`);
    }
    return response;
  };
}
