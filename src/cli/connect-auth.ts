/**
 * Authorization for the one-shot `mcp-fleet connect`: no browser, no human.
 * Authorization-code flows use the worker's own OAuth provider
 * (src/auth, credentials under the state dir) with a headless consent:
 * `connect` requests the authorization URL itself, reads the answer from the
 * redirect the authorization server sends back, and exchanges it as the
 * worker's consent does (`exchangeCode`, which checks the answer's issuer).
 * The grants with no user (MCP extensions) never redirect: client
 * credentials run through the worker's `auth.kind: client_credentials`, and
 * workload identity and enterprise-managed authorization through the
 * providers of src/auth, fed from the scenario's context.
 */
import type { OAuthClientProvider } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { RemoteServerConfig } from '../config/schema.js';
import { CLIENT_INFO } from '../connection/connection.js';
import { enterpriseAuthProvider } from '../auth/enterprise-auth.js';
import { exchangeCode } from '../auth/exchange.js';
import { createOAuthProvider, type OAuthServerConfig } from '../auth/index.js';
import { WorkloadIdentityProvider } from '../auth/workload-identity.js';
import { describeZodError } from '../config/zod-errors.js';
import { CliError } from './client.js';

// One consent to connect, one per scope step-up, one per authorization server moved to; a server that asks for more never accepts.
const MAX_CONSENTS = 3;

/** What `MCP_CONFORMANCE_CONTEXT` may carry: credentials a scenario hands its client. */
export const ConnectContext = z.looseObject({
  name: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
  private_key_pem: z.string().optional(),
  signing_algorithm: z.string().optional(),
  /** Workload identity: the platform's JWT. */
  valid_jwt: z.string().optional(),
  /** Enterprise-managed authorization: the IdP's token endpoint, this client there, and the user's ID token. */
  idp_token_endpoint: z.string().optional(),
  idp_client_id: z.string().optional(),
  idp_id_token: z.string().optional(),
  /** Tool calls a scenario asks for, with their arguments. */
  toolCalls: z.array(z.object({ name: z.string(), arguments: z.record(z.string(), z.unknown()).default({}) })).optional(),
});
export type ConnectContext = z.infer<typeof ConnectContext>;

/** Parses `MCP_CONFORMANCE_CONTEXT` (JSON); unset or empty gives `{}`. */
export function parseConnectContext(raw: string | undefined): ConnectContext {
  if (raw === undefined || raw.trim() === '') return {};
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new CliError('MCP_CONFORMANCE_CONTEXT is not valid JSON');
  }
  const parsed = ConnectContext.safeParse(json);
  if (!parsed.success) throw new CliError(`MCP_CONFORMANCE_CONTEXT: ${describeZodError(parsed.error).message}`);
  return parsed.data;
}

/**
 * How `connect` obtains its token: `authorization_code` (a user's consent,
 * headless here), or one of the grants with no user at all.
 */
export type ConnectGrant = 'authorization_code' | 'client_credentials' | 'workload_identity' | 'enterprise';

/** The scenarios that hand the client a grant with no user; every other one runs the authorization-code flow. */
const SCENARIO_GRANTS: Record<string, ConnectGrant> = {
  'auth/client-credentials-basic': 'client_credentials',
  'auth/client-credentials-jwt': 'client_credentials',
  'auth/wif-jwt-bearer': 'workload_identity',
  'auth/enterprise-managed-authorization': 'enterprise',
  // The same flow under its 0.1 conformance name.
  'auth/cross-app-access-complete-flow': 'enterprise',
};
/** Scenarios whose server only accepts DPoP-bound tokens (RFC 9449). */
const DPOP_SCENARIOS = new Set(['auth/dpop', 'auth/dpop-nonce']);

/** How `connect` authorizes: its server config, the transport's provider, and how to finish a consent it started. */
export interface ConnectAuth {
  grant: ConnectGrant;
  config: RemoteServerConfig;
  /** The transport's provider; undefined when the config's `auth` makes its own (client credentials). */
  provider: OAuthClientProvider | undefined;
  /**
   * After a request failed: if the provider started a consent, completes it
   * headlessly and resolves true, so the caller retries; false when no
   * consent is pending and the failure stands. Refuses (throws) a consent for
   * scopes the same authorization server granted once already, which did not
   * help then either, and more than MAX_CONSENTS in one run.
   */
  finishPendingConsent(): Promise<boolean>;
}

export interface ConnectAuthOptions {
  /** The server's URL. */
  url: string;
  /** Server name: names the credentials file under the state dir. */
  name: string;
  stateDir: string;
  /** Credentials from the scenario context. */
  context: ConnectContext;
  /** Which scenario runs (`MCP_CONFORMANCE_SCENARIO`); it picks the grant. */
  scenario: string | undefined;
  /** HTTPS URL of a client metadata document, used as client_id where the server supports it (SEP-991). */
  clientMetadataUrl: string | undefined;
}

/** A run that never redirects: there is never a consent to finish. */
const noConsent = async (): Promise<boolean> => false;

/**
 * The authorization for one `connect`: the grant the scenario hands over, or
 * else the authorization-code flow with PKCE and headless consent — with a
 * pre-registered client when the context gives one, else dynamic
 * registration or the client metadata URL.
 */
export async function connectAuth(options: ConnectAuthOptions): Promise<ConnectAuth> {
  const { url, context, scenario } = options;
  const grant = (scenario === undefined ? undefined : SCENARIO_GRANTS[scenario]) ?? 'authorization_code';
  switch (grant) {
    case 'client_credentials':
      return { grant, config: remoteConfig(url, clientCredentials(context)), provider: undefined, finishPendingConsent: noConsent };
    case 'workload_identity':
      return { grant, config: remoteConfig(url), provider: workloadIdentity(context), finishPendingConsent: noConsent };
    case 'enterprise':
      return { grant, config: remoteConfig(url), provider: enterprise(context), finishPendingConsent: noConsent };
    case 'authorization_code':
      return authorizationCode(options, scenario !== undefined && DPOP_SCENARIOS.has(scenario));
  }
}

async function authorizationCode(options: ConnectAuthOptions, dpop: boolean): Promise<ConnectAuth> {
  const { url, context } = options;
  const config = remoteConfig(url, {
    kind: 'oauth',
    client_id: context.client_id ?? null,
    client_secret: context.client_secret ?? null,
    dpop,
  }) as OAuthServerConfig;
  const provider = await createOAuthProvider({
    stateDir: options.stateDir,
    name: options.name,
    config,
    ...(options.clientMetadataUrl === undefined ? {} : { clientMetadataUrl: options.clientMetadataUrl }),
  });
  let pending: URL | undefined;
  // Armed for the whole run: each time the SDK would send a user to consent, the URL is kept for finishPendingConsent.
  provider.armConsent({ onAuthorizationUrl: (authorizationUrl) => (pending = authorizationUrl) });
  // `<authorization endpoint> <scope>` of each consent given: a server that moved asks its new one afresh.
  const granted = new Set<string>();
  return {
    grant: 'authorization_code',
    config,
    provider,
    async finishPendingConsent() {
      const authorizationUrl = pending;
      pending = undefined;
      if (authorizationUrl === undefined) return false;
      const scope = authorizationUrl.searchParams.get('scope') ?? '';
      const asked = `${authorizationUrl.origin}${authorizationUrl.pathname} ${scope}`;
      if (granted.has(asked)) {
        throw new CliError(`the authorization server at ${authorizationUrl.origin} asks again for scope "${scope}" after granting it; giving up`);
      }
      if (granted.size >= MAX_CONSENTS) throw new CliError(`the server still refuses after ${MAX_CONSENTS} consents; giving up`);
      granted.add(asked);
      const answer = await followConsentRedirect(authorizationUrl, provider.redirectUrl, provider.expectedState);
      await exchangeCode(provider, url, answer);
      return true;
    },
  };
}

/** `connect`'s config for `url`, authorized as `auth` says; a context that does not fit the grant is an error. */
function remoteConfig(url: string, auth: Record<string, unknown> = { kind: 'none' }): RemoteServerConfig {
  const parsed = RemoteServerConfig.safeParse({ type: 'remote', url, auth });
  if (!parsed.success) throw new CliError(`MCP_CONFORMANCE_CONTEXT does not fit the grant: ${describeZodError(parsed.error).message}`);
  return parsed.data;
}

/** The worker's `auth.kind: client_credentials`, from the context: a client secret, or a private key signing a JWT assertion. */
function clientCredentials(context: ConnectContext): Record<string, unknown> {
  const { client_id: clientId, client_secret: secret, private_key_pem: key } = context;
  if (clientId === undefined || (secret === undefined && key === undefined)) {
    throw new CliError('client credentials need client_id and client_secret or private_key_pem in the context');
  }
  if (key !== undefined) {
    return { kind: 'client_credentials', client_id: clientId, private_key: key, algorithm: context.signing_algorithm ?? 'ES256' };
  }
  return { kind: 'client_credentials', client_id: clientId, client_secret: secret };
}

function workloadIdentity(context: ConnectContext): OAuthClientProvider {
  const { client_id: clientId, valid_jwt: assertion } = context;
  if (clientId === undefined || assertion === undefined) throw new CliError('workload identity needs client_id and valid_jwt in the context');
  return new WorkloadIdentityProvider({ clientId, assertion: () => assertion, clientName: CLIENT_INFO.name });
}

function enterprise(context: ConnectContext): OAuthClientProvider {
  const { client_id: clientId, client_secret: clientSecret, idp_token_endpoint: tokenEndpoint, idp_client_id: idpClientId, idp_id_token: idToken } = context;
  if (clientId === undefined || clientSecret === undefined || tokenEndpoint === undefined || idpClientId === undefined || idToken === undefined) {
    throw new CliError('enterprise-managed authorization needs client_id, client_secret, idp_token_endpoint, idp_client_id and idp_id_token in the context');
  }
  return enterpriseAuthProvider({
    clientId,
    clientSecret,
    clientName: CLIENT_INFO.name,
    identityProvider: { tokenEndpoint, clientId: idpClientId, idToken: () => idToken },
  });
}

/**
 * The headless consent: requests the authorization URL without following
 * redirects and returns the query of the redirect back to `redirectUrl`
 * (which nobody listens on) — code, state and, where the server sends it,
 * its issuer (RFC 9207 `iss`), all for the exchange to check. An error in the
 * redirect, a redirect elsewhere, a missing code or a state that is not ours
 * all refuse the consent.
 */
export async function followConsentRedirect(authorizationUrl: URL, redirectUrl: string, state: string | null): Promise<URLSearchParams> {
  const origin = authorizationUrl.origin;
  let response: Response;
  try {
    response = await fetch(authorizationUrl, { redirect: 'manual' });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new CliError(`could not reach the authorization endpoint at ${origin} (${cause})`);
  }
  await response.body?.cancel();
  const location = response.headers.get('location');
  if (response.status < 300 || response.status > 399 || location === null) {
    throw new CliError(`the authorization endpoint at ${origin} answered HTTP ${response.status} instead of redirecting back with a code`);
  }
  const target = new URL(location, authorizationUrl);
  const expected = new URL(redirectUrl);
  if (target.origin !== expected.origin || target.pathname !== expected.pathname) {
    throw new CliError(`the authorization endpoint at ${origin} redirected to ${target.origin}${target.pathname}, not to the redirect URI`);
  }
  const answer = target.searchParams;
  const error = answer.get('error');
  if (error !== null) throw new CliError(`the authorization server refused consent: ${error}`);
  if (state !== null && answer.get('state') !== state) {
    throw new CliError('the authorization redirect carried a state that does not match the request');
  }
  const code = answer.get('code');
  if (code === null || code === '') throw new CliError('the authorization redirect carried no code');
  return answer;
}
