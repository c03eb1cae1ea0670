/**
 * Authorization of remote servers: OAuth 2.1 (provider, discovery,
 * registrations, consent with a loopback callback, code exchange, step-up,
 * DPoP), machine-to-machine grants (client_credentials, workload identity,
 * enterprise), and the stores of credentials (file and PostgreSQL).
 *
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
// The public surface: what the rest of src/ uses of this domain.
export { isAuthorizationServerAway } from './away.js';
export { CLIENT_METADATA_PATH, clientMetadataDocument, type ClientMetadataDocument } from './client-metadata-document.js';
export { beginConsent, type ConsentSession } from './consent.js';
export { type CredentialsRecord } from './credentials-file.js';
export { createFileCredentialsStore, type CredentialsStore, type LockedChange } from './credentials-store.js';
export { enterpriseAuthProvider } from './enterprise-auth.js';
export { exchangeCode } from './exchange.js';
export { isMachineAuth, machineAuthProvider } from './machine-auth.js';
export { ConsentRequiredError, describeAuthFailure } from './oauth-errors.js';
export { memoryPendingConsents, pgPendingConsents, type PendingConsents } from './pending-consents.js';
export { createPgCredentialsStore } from './pg-credentials-store.js';
export { createOAuthProvider, FleetOAuthProvider, isOAuthConfig, type CredentialsOption, type OAuthProviderOptions, type OAuthServerConfig } from './provider.js';
export { AuthNotApplicableError, CallbackRefusedError, createServerAuth, type AuthBegun, type ServerAuth } from './server-auth.js';
export { scopeChallengeFetch } from './step-up.js';
export { WorkloadIdentityProvider } from './workload-identity.js';
