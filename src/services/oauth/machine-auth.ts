/**
 * `auth.kind: "client_credentials"`: OAuth with no user. The SDK's providers
 * discover the server's authorization server, run the `client_credentials`
 * grant (authenticated by the client secret, or by a JWT assertion signed
 * with the private key), attach the token, and fetch a new one on a 401.
 * Tokens live in memory only: a new one costs one request, and no refresh
 * token exists to keep.
 */
import { ClientCredentialsProvider, PrivateKeyJwtProvider, type OAuthClientProvider } from '@modelcontextprotocol/client';
import type { AuthConfig } from '../config/schema.js';

type ClientCredentials = Extract<AuthConfig, { kind: 'client_credentials' }>;

/** The SDK provider for a `client_credentials` server. */
export function machineAuthProvider(auth: ClientCredentials, clientName: string): OAuthClientProvider {
  const common = {
    clientId: auth.client_id,
    clientName,
    ...(auth.scopes.length > 0 ? { scope: auth.scopes.join(' ') } : {}),
    ...(auth.issuer === null ? {} : { expectedIssuer: auth.issuer }),
  };
  if (auth.private_key !== null) {
    return new PrivateKeyJwtProvider({ ...common, privateKey: auth.private_key, algorithm: auth.algorithm });
  }
  return new ClientCredentialsProvider({ ...common, clientSecret: auth.client_secret ?? '' });
}
