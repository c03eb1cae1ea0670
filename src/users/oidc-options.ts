/**
 * What the OIDC sign-in is configured with (oidc.ts does the sign-in): apart,
 * so the CLI names them without loading the sign-in's JWT library.
 */

/** `MCP_FLEET_OIDC_CLIENT_SECRET`: the client secret, never a flag (it would show in `ps`). */
export const OIDC_CLIENT_SECRET_ENV = 'MCP_FLEET_OIDC_CLIENT_SECRET';

export interface OidcOptions {
  /** The provider's issuer URL, exactly as its discovery document names it. */
  issuer: string;
  clientId: string;
  /** Without one the client is public (`token_endpoint_auth_method: none`): PKCE alone binds the code. */
  clientSecret?: string | undefined;
  /** The claim holding the user's groups (an array of strings, or one string); default `groups`. */
  groupsClaim?: string | undefined;
  /** The claim that names the user (their principal id); default `sub`, unique and stable per issuer. */
  userClaim?: string | undefined;
}
