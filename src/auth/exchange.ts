/**
 * The one way an authorization code becomes tokens, for the worker's consent
 * (consent.ts) and the headless one of `mcp-fleet connect` alike: the SDK's
 * `auth()` given the code, which the transports' `finishAuth` also wraps.
 * The provider that started the authorization holds what the exchange needs
 * (client, PKCE verifier, discovered endpoints) and stores the tokens.
 */
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { FleetError } from '../errors.js';

/**
 * Exchanges the code of `callback` (the query the authorization server
 * redirected back with) at the token endpoint of `serverUrl`'s authorization
 * server; resolves once `provider` has saved the tokens. The callback's `iss`
 * goes along: the SDK compares it with the issuer discovery recorded (RFC
 * 9207) before the code leaves, and refuses an answer from another server.
 * No header of the server's config is sent: the authorization server may be
 * another party. The SDK's OAuth errors pass through (see `describeAuthFailure`).
 */
export async function exchangeCode(provider: OAuthClientProvider, serverUrl: string, callback: URLSearchParams): Promise<void> {
  const code = callback.get('code');
  if (code === null || code === '') throw new FleetError('auth', 'the authorization response carried no code');
  const iss = callback.get('iss') ?? undefined;
  const result = await auth(provider, { serverUrl, authorizationCode: code, ...(iss === undefined ? {} : { iss }) });
  if (result !== 'AUTHORIZED') {
    throw new FleetError('auth', `the authorization server of ${new URL(serverUrl).origin} did not issue a token`);
  }
}
