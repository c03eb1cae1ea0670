/**
 * Enterprise-managed authorization (SEP-990, the MCP "cross-app access"
 * extension): the user signed in once at the enterprise identity provider,
 * and the client trades that sign-in for access to an MCP server without a
 * consent screen — the ID token for an identity assertion grant (ID-JAG,
 * RFC 8693 token exchange at the IdP, for the MCP server's authorization
 * server and resource), and the grant for an access token (RFC 7523
 * `jwt-bearer` at the authorization server, authenticated by the client's
 * credentials there). Both steps are the SDK's; this only wires them.
 */
import { CrossAppAccessProvider, requestJwtAuthorizationGrant, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { redact } from '../config/masking.js';
import { FleetError } from '../errors.js';

export interface EnterpriseAuthOptions {
  /** The client at the MCP server's authorization server. */
  clientId: string;
  /** Its secret there (a secret). */
  clientSecret: string;
  /** How the client names itself in its metadata. */
  clientName: string;
  /** The authorization server the client credentials may be sent to; undefined trusts the MCP server's metadata. */
  expectedIssuer?: string;
  /** The enterprise identity provider. */
  identityProvider: {
    /** Its token endpoint, where the ID token is exchanged. */
    tokenEndpoint: string;
    /** The client id the IdP knows this client by. */
    clientId: string;
    /** Its secret at the IdP, if it is a confidential client there (a secret). */
    clientSecret?: string;
    /** The user's OpenID Connect ID token from the IdP (a secret), read when a grant is needed. */
    idToken: () => string | Promise<string>;
  };
}

/** The SDK provider for enterprise-managed authorization: tokens in memory, a new grant on each 401. */
export function enterpriseAuthProvider(options: EnterpriseAuthOptions): OAuthClientProvider {
  const idp = options.identityProvider;
  return new CrossAppAccessProvider({
    clientId: options.clientId,
    clientSecret: options.clientSecret,
    clientName: options.clientName,
    ...(options.expectedIssuer === undefined ? {} : { expectedIssuer: options.expectedIssuer }),
    assertion: async function identityAssertionGrant(target) {
      const idToken = await idp.idToken();
      try {
        const grant = await requestJwtAuthorizationGrant({
          tokenEndpoint: idp.tokenEndpoint,
          audience: target.authorizationServerUrl,
          resource: target.resourceUrl,
          idToken,
          clientId: idp.clientId,
          ...(idp.clientSecret === undefined ? {} : { clientSecret: idp.clientSecret }),
          ...(target.scope === undefined ? {} : { scope: target.scope }),
          fetchFn: target.fetchFn,
        });
        return grant.jwtAuthGrant;
      } catch (err) {
        // The IdP refused the exchange (its answer may quote what it was sent, the ID token too): an
        // `auth` failure, not the server's protocol, told without a credential.
        if (err instanceof FleetError || !(err instanceof Error) || !err.message.startsWith('Token exchange failed')) throw err;
        const secrets = [idToken, options.clientSecret, ...(idp.clientSecret === undefined ? [] : [idp.clientSecret])];
        throw new FleetError('auth', `the identity provider refused the token exchange: ${redact(err.message.replace(/^Token exchange failed:?\s*/, ''), secrets)}`);
      }
    },
  });
}
