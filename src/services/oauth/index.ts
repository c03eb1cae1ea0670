/**
 * OAuth 2.1 for remote MCP servers (SPEC §2 `auth.kind: oauth`, §4
 * `authenticating` / `needs_reauth`). The public surface:
 *
 * - `createOAuthProvider({ stateDir, name, config })` → `FleetOAuthProvider`,
 *   the SDK's `OAuthClientProvider` persisted in `<stateDir>/oauth/<name>.json`
 *   (0600): tokens with an absolute expiry, the dynamic registrations (one
 *   per authorization server) and their loopback port, the discovered
 *   metadata, the PKCE verifier. Pass it as the transport's `authProvider`
 *   (`connect(..., { authProvider })`). It refreshes before expiry
 *   (single-flight) and throws `ConsentRequiredError` instead of ever opening
 *   a consent by itself. A token the server refuses sends the next
 *   authorization back to discovery (the server may have moved, SEP-2352).
 * - `beginConsent(provider, config)` → `ConsentSession` (`authorizationUrl`,
 *   `completed`, `cancel()`): a consent with a loopback callback on the
 *   registered port; `exchangeCode` checks the answer's issuer (RFC 9207)
 *   and stores the tokens.
 */
export { beginConsent, type ConsentSession } from './consent.js';
export { ConsentRequiredError } from './errors.js';
export {
  createOAuthProvider,
  FleetOAuthProvider,
  isOAuthConfig,
  type OAuthProviderOptions,
  type OAuthServerConfig,
} from './provider.js';
