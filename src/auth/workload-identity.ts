/**
 * Workload identity federation (SEP-1933, an MCP authorization extension): a
 * workload proves who it is with a JWT its platform issued (a Kubernetes
 * service-account token, a cloud instance identity) and trades it for an
 * access token with the RFC 7523 `jwt-bearer` grant. No user, no redirect,
 * no client secret: the assertion is the credential. It is read anew for
 * every token request, so a platform that rotates it is followed.
 */
import type { OAuthClientMetadata, OAuthClientProvider, OAuthTokens } from '@modelcontextprotocol/client';
import { FleetError } from '../errors.js';

/** The RFC 7523 grant type. */
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

export interface WorkloadIdentityOptions {
  /** The client id the authorization server knows the workload by. */
  clientId: string;
  /** The platform's JWT (a secret), read for each token request. */
  assertion: () => string | Promise<string>;
  /** How the client names itself in its metadata. */
  clientName: string;
}

/** The SDK provider for the `jwt-bearer` grant: tokens in memory, a new one on each 401. */
export class WorkloadIdentityProvider implements OAuthClientProvider {
  readonly #options: WorkloadIdentityOptions;
  #tokens: OAuthTokens | undefined;

  constructor(options: WorkloadIdentityOptions) {
    this.#options = options;
  }

  /** None: a non-interactive grant, which tells the SDK never to start an authorization request. */
  get redirectUrl(): undefined {
    return undefined;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.#options.clientName,
      redirect_uris: [],
      grant_types: [JWT_BEARER_GRANT],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation(): { client_id: string } {
    return { client_id: this.#options.clientId };
  }

  tokens(): OAuthTokens | undefined {
    return this.#tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.#tokens = tokens;
  }

  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'tokens') this.#tokens = undefined;
  }

  /** The token request: the grant and the platform's assertion (RFC 7523, section 2.1). */
  async prepareTokenRequest(scope?: string): Promise<URLSearchParams> {
    const params = new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion: await this.#options.assertion() });
    if (scope !== undefined && scope !== '') params.set('scope', scope);
    return params;
  }

  redirectToAuthorization(): never {
    throw new FleetError('auth', 'the jwt-bearer grant has no authorization step');
  }

  saveCodeVerifier(): void {}

  codeVerifier(): never {
    throw new FleetError('auth', 'the jwt-bearer grant has no authorization step');
  }
}
