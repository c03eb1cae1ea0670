/**
 * OAuth 2.1 for remote MCP servers (SPEC §2 `auth.kind: oauth`, §4
 * `authenticating` / `needs_reauth`). The public surface:
 *
 * - `createOAuthProvider({ stateDir, name, config })` → `FleetOAuthProvider`,
 *   the SDK's `OAuthClientProvider` persisted in `<stateDir>/oauth/<name>.json`
 *   (0600): tokens with an absolute expiry, the dynamic registration and its
 *   loopback port, the discovered metadata, the PKCE verifier. Pass it as the
 *   transport's `authProvider` (`connect(..., { authProvider })`). It refreshes
 *   before expiry (single-flight) and throws `ConsentRequiredError` instead of
 *   ever opening a consent by itself.
 * - `beginConsent(provider, config)` → `ConsentSession` (`authorizationUrl`,
 *   `completed`, `cancel()`): a consent with a loopback callback on the
 *   registered port; the transport's `finishAuth(code)` stores the tokens.
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
