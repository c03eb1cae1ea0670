/**
 * The one way an authorization code becomes tokens, for the worker's consent
 * (consent.ts) and the headless one of `mcp-fleet connect` alike: the SDK's
 * `auth()` given the code, which the transports' `finishAuth` also wraps.
 * The provider that started the authorization holds what the exchange needs
 * (client, PKCE verifier, discovered endpoints) and stores the tokens.
 */
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { FleetError } from '../support/errors.js';

/**
 * Exchanges `code` at the token endpoint of `serverUrl`'s authorization
 * server; resolves once `provider` has saved the tokens. No header of the
 * server's config is sent: the authorization server may be another party.
 * The SDK's OAuth errors pass through (see `describeAuthFailure`).
 */
export async function exchangeCode(provider: OAuthClientProvider, serverUrl: string, code: string): Promise<void> {
  const result = await auth(provider, { serverUrl, authorizationCode: code });
  if (result !== 'AUTHORIZED') {
    throw new FleetError('auth', `the authorization server of ${new URL(serverUrl).origin} did not issue a token`);
  }
}
