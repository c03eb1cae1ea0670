/**
 * OAuth with no user at the keyboard, from the server's config: the SDK's
 * providers discover the server's authorization server, get a token by the
 * configured grant, attach it, and get a new one on a 401. Tokens live in
 * memory only (a new one costs one request; no refresh token exists to keep).
 * - `client_credentials`: the client secret, or a JWT assertion signed with
 *   the private key (`private_key_jwt`);
 * - `workload_identity`: the platform's JWT, read from its file for every
 *   token request (the `jwt-bearer` grant);
 * - `enterprise`: the user's ID token from the enterprise IdP, read from its
 *   file and exchanged for an identity assertion grant (SEP-990).
 */
import { readFile } from 'node:fs/promises';
import { ClientCredentialsProvider, PrivateKeyJwtProvider, type OAuthClientProvider } from '@modelcontextprotocol/client';
import type { AuthConfig } from '../config/index.js';
import { FleetError } from '../errors.js';
import { enterpriseAuthProvider } from './enterprise-auth.js';
import { WorkloadIdentityProvider } from './workload-identity.js';

/** The auth kinds a machine completes on its own. */
export type MachineAuth = Extract<AuthConfig, { kind: 'client_credentials' | 'workload_identity' | 'enterprise' }>;

export function isMachineAuth(auth: AuthConfig): auth is MachineAuth {
  return auth.kind === 'client_credentials' || auth.kind === 'workload_identity' || auth.kind === 'enterprise';
}

/** The SDK provider for a server whose auth needs no user. */
export function machineAuthProvider(auth: MachineAuth, clientName: string): OAuthClientProvider {
  const scope = auth.scopes.length > 0 ? { scope: auth.scopes.join(' ') } : {};
  switch (auth.kind) {
    case 'client_credentials': {
      const common = {
        clientId: auth.client_id,
        clientName,
        ...scope,
        ...(auth.issuer === null ? {} : { expectedIssuer: auth.issuer }),
      };
      if (auth.private_key !== null) {
        return new PrivateKeyJwtProvider({ ...common, privateKey: auth.private_key, algorithm: auth.algorithm });
      }
      return new ClientCredentialsProvider({ ...common, clientSecret: auth.client_secret ?? '' });
    }
    case 'workload_identity':
      return new WorkloadIdentityProvider({
        clientId: auth.client_id,
        clientName,
        assertion: () => readCredentialFile(auth.assertion_file, 'assertion_file'),
      });
    case 'enterprise':
      return enterpriseAuthProvider({
        clientId: auth.client_id,
        clientSecret: auth.client_secret,
        clientName,
        ...(auth.issuer === null ? {} : { expectedIssuer: auth.issuer }),
        identityProvider: {
          tokenEndpoint: auth.idp_token_endpoint,
          clientId: auth.idp_client_id,
          ...(auth.idp_client_secret === null ? {} : { clientSecret: auth.idp_client_secret }),
          idToken: () => readCredentialFile(auth.id_token_file, 'id_token_file'),
        },
      });
  }
}

/** A token kept in a file (whitespace around it dropped); an error names the field and path, never the content. */
async function readCredentialFile(path: string, field: string): Promise<string> {
  try {
    const token = (await readFile(path, 'utf8')).trim();
    if (token === '') throw new FleetError('auth', `auth.${field} ${path} is empty`);
    return token;
  } catch (err) {
    if (err instanceof FleetError) throw err;
    throw new FleetError('auth', `cannot read auth.${field} ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}
