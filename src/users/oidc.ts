/**
 * Sign-in through an OpenID Connect provider (`serve --oidc-issuer`): the
 * authorization code flow with PKCE (S256), `state` and `nonce` checked, the
 * issuer checked (the discovery document's, the ID token's and the `iss` of
 * the response), the ID token verified against the provider's keys. The
 * result is a principal: the user claim (default `sub`) and the groups claim.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { createRemoteJWKSet, JWTPayload } from 'jose';
import { z } from 'zod';
import { ADMIN_PRINCIPAL, type Principal } from './principal.js';
import type { OidcOptions } from './oidc-options.js';

/** What the browser must bring back: kept in a signed cookie until the callback. */
export const PendingSignIn = z.object({
  state: z.string(),
  nonce: z.string(),
  verifier: z.string(),
  redirect_uri: z.string(),
  /** Epoch ms after which the callback is refused. */
  expires: z.number(),
});
export type PendingSignIn = z.infer<typeof PendingSignIn>;

/** A sign-in the callback refused; the message says why (no secret in it). */
export class OidcSignInError extends Error {
  override readonly name = 'OidcSignInError';
}

const Discovery = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string().url(),
  token_endpoint: z.string().url(),
  jwks_uri: z.string().url(),
  userinfo_endpoint: z.string().url().optional(),
  scopes_supported: z.array(z.string()).optional(),
  token_endpoint_auth_methods_supported: z.array(z.string()).optional(),
  authorization_response_iss_parameter_supported: z.boolean().optional(),
});
type Discovery = z.infer<typeof Discovery>;

const TokenAnswer = z.object({ id_token: z.string(), access_token: z.string().optional() });

/** How long a begun sign-in may take. */
export const SIGN_IN_TTL_MS = 10 * 60_000;

export interface Oidc {
  readonly issuer: string;
  /** The URL to send the browser to, and what its callback must match. */
  begin(redirectUri: string): Promise<{ url: string; pending: PendingSignIn }>;
  /** Checks the callback's query against `pending`, redeems the code, verifies the ID token; the signed-in principal. */
  finish(query: URLSearchParams, pending: PendingSignIn): Promise<Principal>;
}

const random = (): string => randomBytes(32).toString('base64url');

export function createOidc(options: OidcOptions): Oidc {
  const issuer = options.issuer;
  const groupsClaim = options.groupsClaim ?? 'groups';
  const userClaim = options.userClaim ?? 'sub';
  let discovered: Promise<{ metadata: Discovery; keys: ReturnType<typeof createRemoteJWKSet> }> | undefined;

  /** The provider's metadata, fetched once (again after a failure). */
  function discovery() {
    discovered ??= (async () => {
      const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
      const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
      if (!response.ok) throw new OidcSignInError(`the OIDC discovery document at ${url} answered HTTP ${response.status}`);
      const metadata = Discovery.parse(await response.json());
      // A document that names another issuer is not this provider's: a sign-in trusts only the issuer it was told (docs/users.md).
      if (metadata.issuer !== issuer) throw new OidcSignInError(`the OIDC discovery document names the issuer ${metadata.issuer}, not ${issuer}`);
      // jose loads with the first sign-in, not with the package (docs/library.md).
      const { createRemoteJWKSet } = await import('jose');
      return { metadata, keys: createRemoteJWKSet(new URL(metadata.jwks_uri)) };
    })().catch((error: unknown) => {
      discovered = undefined;
      throw error;
    });
    return discovered;
  }

  return {
    issuer,

    async begin(redirectUri) {
      const { metadata } = await discovery();
      const pending: PendingSignIn = { state: random(), nonce: random(), verifier: random(), redirect_uri: redirectUri, expires: Date.now() + SIGN_IN_TTL_MS };
      const scopes = ['openid', 'profile', ...(metadata.scopes_supported?.includes(groupsClaim) ? [groupsClaim] : [])];
      const url = new URL(metadata.authorization_endpoint);
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: options.clientId,
        redirect_uri: redirectUri,
        scope: scopes.join(' '),
        state: pending.state,
        nonce: pending.nonce,
        code_challenge: createHash('sha256').update(pending.verifier).digest('base64url'),
        code_challenge_method: 'S256',
      }).toString();
      return { url: url.href, pending };
    },

    async finish(query, pending) {
      const { metadata, keys } = await discovery();
      if (Date.now() > pending.expires) throw new OidcSignInError('the sign-in took too long; start again');
      if (query.get('state') !== pending.state) throw new OidcSignInError('the state does not match the sign-in this browser began');
      // RFC 9207: the response names its issuer, so a code from another provider is not taken for this one's.
      const iss = query.get('iss');
      if (iss !== null ? iss !== issuer : metadata.authorization_response_iss_parameter_supported === true) {
        throw new OidcSignInError('the response does not come from the configured issuer');
      }
      const error = query.get('error');
      if (error !== null) throw new OidcSignInError(`the provider refused the sign-in: ${error}${query.get('error_description') ? ` (${query.get('error_description')})` : ''}`);
      const code = query.get('code');
      if (code === null) throw new OidcSignInError('the callback carries no code');

      const tokens = await redeem(metadata, code, pending);
      const { jwtVerify } = await import('jose');
      const { payload } = await jwtVerify(tokens.id_token, keys, { issuer, audience: options.clientId }).catch((err: unknown) => {
        throw new OidcSignInError(`the ID token does not verify: ${(err as Error).message}`);
      });
      if (payload.nonce !== pending.nonce) throw new OidcSignInError('the ID token does not carry the nonce of this sign-in');
      if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== options.clientId) {
        throw new OidcSignInError('the ID token was issued to another client (azp)');
      }
      const claims = { ...(await userinfo(metadata, tokens.access_token, payload)), ...payload };
      return principalOfClaims(claims, { userClaim, groupsClaim }, (why) =>
        why === 'admin'
          ? new OidcSignInError(`"${ADMIN_PRINCIPAL}" is the admin token's principal; this account cannot sign in`)
          : new OidcSignInError(`the ID token has no usable "${userClaim}" claim`),
      );
    },
  };

  /** The code for tokens: PKCE's verifier, and the client secret when there is one. */
  async function redeem(metadata: Discovery, code: string, pending: PendingSignIn) {
    const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: pending.redirect_uri, code_verifier: pending.verifier });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    const methods = metadata.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
    if (options.clientSecret === undefined) {
      body.set('client_id', options.clientId);
    } else if (methods.includes('client_secret_basic') || !methods.includes('client_secret_post')) {
      const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
      headers.authorization = `Basic ${Buffer.from(`${encode(options.clientId)}:${encode(options.clientSecret)}`).toString('base64')}`;
    } else {
      body.set('client_id', options.clientId);
      body.set('client_secret', options.clientSecret);
    }
    const response = await fetch(metadata.token_endpoint, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
    const answer: unknown = await response.json().catch(() => ({}));
    if (!response.ok) {
      const reason = (answer as { error?: unknown }).error;
      throw new OidcSignInError(`the token endpoint refused the code (HTTP ${response.status}${typeof reason === 'string' ? `: ${reason}` : ''})`);
    }
    const parsed = TokenAnswer.safeParse(answer);
    if (!parsed.success) throw new OidcSignInError('the token endpoint answered without an ID token');
    return parsed.data;
  }

  /**
   * The userinfo claims, where a provider keeps its groups (and names) out of
   * the ID token; only when they are about the same subject.
   */
  async function userinfo(metadata: Discovery, accessToken: string | undefined, idToken: JWTPayload): Promise<Record<string, unknown>> {
    if (metadata.userinfo_endpoint === undefined || accessToken === undefined) return {};
    if (idToken[groupsClaim] !== undefined && idToken[userClaim] !== undefined) return {};
    const response = await fetch(metadata.userinfo_endpoint, {
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) return {};
    const claims = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    return claims.sub === idToken.sub ? claims : {};
  }
}

/**
 * The principal that verified claims name: the user claim, and the groups
 * claim (an array of strings, or one string). `refuse` makes the error for
 * claims that name no usable user (shared by the sign-in and the gateway's
 * access tokens).
 */
export function principalOfClaims(
  claims: Record<string, unknown>,
  names: { userClaim: string; groupsClaim: string },
  refuse: (why: 'no_user' | 'admin') => Error,
): Principal {
  const id = claims[names.userClaim];
  // `__proto__` cannot key a user's records (a JSON object drops it): no principal takes it.
  if (typeof id !== 'string' || id === '' || id === '__proto__' || /\p{Cc}/u.test(id)) throw refuse('no_user');
  // `admin` is the API token's principal: no provider account may take its name.
  if (id === ADMIN_PRINCIPAL) throw refuse('admin');
  const raw = claims[names.groupsClaim];
  const groups = (Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : []).filter(
    (group): group is string => typeof group === 'string' && group !== '' && !/\p{Cc}/u.test(group),
  );
  return { id, groups: [...new Set(groups)] };
}
