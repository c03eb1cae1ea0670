/**
 * OAuth 2.1 for remote MCP servers (`auth.kind: oauth`; the states
 * `authenticating` / `needs_reauth`, docs/contract.md). The public surface:
 *
 * - `createOAuthProvider({ credentials | stateDir, name, config })` →
 *   `FleetOAuthProvider`, the SDK's `OAuthClientProvider`, its credentials in
 *   a `CredentialsStore`: `createFileCredentialsStore(stateDir)` (what
 *   `stateDir` means: `<stateDir>/oauth/<name>.json`, 0600), or the fleet's
 *   database (`createPgCredentialsStore` in pg-credentials-store.ts, secrets
 *   sealed). A record holds the tokens with an absolute expiry, the dynamic
 *   registrations (one per authorization server) and their loopback port,
 *   the discovered metadata, the PKCE verifier, the DPoP key. Pass it as the
 *   transport's `authProvider` (`connect(..., { authProvider })`). It
 *   refreshes before expiry (single-flight, and fleet-wide under the store's
 *   lock: a worker takes the tokens another one just refreshed) and throws
 *   `ConsentRequiredError` instead of ever opening a consent by itself. A
 *   token the server refuses sends the next authorization back to discovery
 *   (the server may have moved, SEP-2352).
 * - `beginConsent(provider, config)` → `ConsentSession` (`authorizationUrl`,
 *   `completed`, `cancel()`): a consent with a loopback callback on the
 *   registered port; `exchangeCode` checks the answer's issuer (RFC 9207)
 *   and stores the tokens.
 */
export { beginConsent, type ConsentSession } from './consent.js';
export { createFileCredentialsStore, type CredentialsStore, type LockedChange } from './credentials-store.js';
export { ConsentRequiredError } from './errors.js';
export {
  createOAuthProvider,
  FleetOAuthProvider,
  isOAuthConfig,
  type CredentialsOption,
  type OAuthProviderOptions,
  type OAuthServerConfig,
} from './provider.js';
