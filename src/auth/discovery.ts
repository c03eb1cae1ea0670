/**
 * Finding a server's authorization server, as the SDK's `auth()` would (RFC
 * 9728 protected resource metadata, then RFC 8414 / OIDC metadata), with one
 * difference of policy: the RFC 8414 (section 3.3) check that the metadata's `issuer`
 * names the URL it was discovered from is relaxed when — and only when — the
 * server publishes no protected resource metadata naming its authorization
 * server. The authorization server's URL is then a guess from the MCP origin
 * (the 2025-03-26 fallback), and servers of that era publish their real
 * issuer there (`<origin>/oauth` at the origin's well-known URL). The issuer
 * the metadata names stays what tokens are stamped with and what RFC 9207's
 * `iss` is compared against. A server whose metadata names its authorization
 * server is always held to the check.
 */
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  IssuerMismatchError,
  type FetchLike,
  type OAuthDiscoveryState,
  type OAuthProtectedResourceMetadata,
} from '@modelcontextprotocol/client';
import { isAuthorizationServerAway } from './away.js';

export interface DiscoveryOptions {
  /** The `resource_metadata` URL of the server's last `WWW-Authenticate` challenge, if it named one. */
  resourceMetadataUrl?: URL;
  /** The MCP server's config headers: sent with discovery requests to its own origin (a gateway in front of it may want them), to no other. */
  serverHeaders?: Record<string, string>;
  /** The fetch every discovery request goes through (default: the global one). */
  fetch?: FetchLike;
}

/** Discovers the authorization server of the MCP server at `serverUrl`. */
export async function discoverAuthorization(serverUrl: string, options: DiscoveryOptions = {}): Promise<OAuthDiscoveryState> {
  const { resourceMetadataUrl } = options;
  const fetchFn = withServerHeaders(new URL(serverUrl).origin, options.serverHeaders ?? {}, options.fetch ?? fetch);
  const resourceMetadata = await protectedResourceMetadata(serverUrl, resourceMetadataUrl, fetchFn);
  const named = resourceMetadata?.authorization_servers?.[0];
  const authorizationServerUrl = named ?? new URL('/', serverUrl).href;
  let authorizationServerMetadata;
  try {
    authorizationServerMetadata = await discoverAuthorizationServerMetadata(authorizationServerUrl, { fetchFn });
  } catch (err) {
    if (!(err instanceof IssuerMismatchError) || named !== undefined) throw err;
    // No metadata names the authorization server: its URL was only our guess, and its metadata says who it is.
    authorizationServerMetadata = await discoverAuthorizationServerMetadata(authorizationServerUrl, { fetchFn, skipIssuerValidation: true });
  }
  return {
    authorizationServerUrl,
    ...(resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl: resourceMetadataUrl.href }),
    ...(resourceMetadata === undefined ? {} : { resourceMetadata }),
    ...(authorizationServerMetadata === undefined ? {} : { authorizationServerMetadata }),
  };
}

/** A fetch adding `headers` to requests for `origin` (never overriding one the request sets). */
function withServerHeaders(origin: string, headers: Record<string, string>, send: FetchLike): FetchLike {
  return function fetchDiscovery(url, init) {
    if (new URL(url).origin !== origin || Object.keys(headers).length === 0) return send(url, init);
    const sent = new Headers(init?.headers);
    for (const [name, value] of Object.entries(headers)) if (!sent.has(name)) sent.set(name, value);
    return send(url, { ...init, headers: sent });
  };
}

/**
 * The server's protected resource metadata, or undefined when it publishes
 * none (any answer but metadata). A network failure (or, through a fetch
 * noting it, a 5xx) is thrown: the server is unreachable, not unprotected.
 */
async function protectedResourceMetadata(
  serverUrl: string,
  resourceMetadataUrl: URL | undefined,
  fetchFn: FetchLike | undefined,
): Promise<OAuthProtectedResourceMetadata | undefined> {
  try {
    return await discoverOAuthProtectedResourceMetadata(serverUrl, resourceMetadataUrl === undefined ? {} : { resourceMetadataUrl }, fetchFn);
  } catch (err) {
    if (err instanceof TypeError || isAuthorizationServerAway(err)) throw err;
    return undefined;
  }
}
