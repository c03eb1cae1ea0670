/**
 * Authorization for the one-shot `mcp-fleet connect`: no browser, no human.
 * Authorization-code flows use the worker's own OAuth provider
 * (services/oauth, credentials under the state dir) with a headless consent:
 * `connect` requests the authorization URL itself, reads the code from the
 * redirect the authorization server answers with, and exchanges it as the
 * worker's consent does (`exchangeCode`). Client-credentials
 * flows (an MCP extension) use the SDK's providers and never redirect.
 */
import {
  ClientCredentialsProvider,
  type OAuthClientProvider,
  PrivateKeyJwtProvider,
} from '@modelcontextprotocol/client';
import { z } from 'zod';
import { RemoteServerConfig } from '../services/config/schema.js';
import { CLIENT_INFO } from '../services/connection/connection.js';
import { exchangeCode } from '../services/oauth/exchange.js';
import { createOAuthProvider, type OAuthServerConfig } from '../services/oauth/index.js';
import { describeZodError } from '../services/support/zod-errors.js';
import { CliError } from './client.js';

// One consent to connect and one per scope step-up; a server that asks for more never accepts.
const MAX_CONSENTS = 3;

/** What `MCP_CONFORMANCE_CONTEXT` may carry: credentials a scenario hands its client. */
export const ConnectContext = z.looseObject({
  name: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
  private_key_pem: z.string().optional(),
  signing_algorithm: z.string().optional(),
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

/** How `connect` authorizes: its server config, the transport's provider, and how to finish a consent it started. */
export interface ConnectAuth {
  config: RemoteServerConfig;
  provider: OAuthClientProvider;
  /**
   * After a request failed: if the provider started a consent, completes it
   * headlessly and resolves true, so the caller retries; false when no
   * consent is pending and the failure stands. Refuses (throws) a consent for
   * scopes already granted once, which did not help then either, and more
   * than MAX_CONSENTS in one run.
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

/**
 * The authorization for one `connect`: client credentials (secret or signed
 * JWT) when the scenario asks for them, else the authorization-code flow with
 * PKCE and headless consent — with a pre-registered client when the context
 * gives one, else dynamic registration or the client metadata URL.
 */
export async function connectAuth(options: ConnectAuthOptions): Promise<ConnectAuth> {
  const { url, context, scenario } = options;
  const clientId = context.client_id;
  const clientCredentials = clientCredentialsProvider(scenario, context);
  if (clientCredentials !== undefined) {
    // Client credentials never redirect: there is never a consent to finish.
    const config = RemoteServerConfig.parse({ type: 'remote', url });
    return { config, provider: clientCredentials, finishPendingConsent: async () => false };
  }
  const config = RemoteServerConfig.parse({
    type: 'remote',
    url,
    auth: { kind: 'oauth', client_id: clientId ?? null, client_secret: context.client_secret ?? null },
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
  const granted = new Set<string>();
  return {
    config,
    provider,
    async finishPendingConsent() {
      const authorizationUrl = pending;
      pending = undefined;
      if (authorizationUrl === undefined) return false;
      const scope = authorizationUrl.searchParams.get('scope') ?? '';
      if (granted.has(scope)) throw new CliError(`the server asks again for scope "${scope}" after it was granted; giving up`);
      if (granted.size >= MAX_CONSENTS) throw new CliError(`the server still refuses after ${MAX_CONSENTS} consents; giving up`);
      granted.add(scope);
      const code = await followConsentRedirect(authorizationUrl, provider.redirectUrl, provider.expectedState);
      await exchangeCode(provider, url, code);
      return true;
    },
  };
}

/** The SDK's client-credentials provider an `auth/client-credentials-*` scenario asks for; undefined for any other scenario. */
function clientCredentialsProvider(scenario: string | undefined, context: ConnectContext): OAuthClientProvider | undefined {
  const clientId = context.client_id;
  if (scenario === 'auth/client-credentials-jwt') {
    if (clientId === undefined || context.private_key_pem === undefined) {
      throw new CliError('client_credentials with a signed JWT needs client_id and private_key_pem in the context');
    }
    return new PrivateKeyJwtProvider({
      clientId,
      privateKey: context.private_key_pem,
      algorithm: context.signing_algorithm ?? 'ES256',
      clientName: CLIENT_INFO.name,
    });
  }
  if (scenario === 'auth/client-credentials-basic') {
    if (clientId === undefined || context.client_secret === undefined) {
      throw new CliError('client_credentials needs client_id and client_secret in the context');
    }
    return new ClientCredentialsProvider({ clientId, clientSecret: context.client_secret, clientName: CLIENT_INFO.name });
  }
  return undefined;
}

/**
 * The headless consent: requests the authorization URL without following
 * redirects and reads the code from the redirect back to `redirectUrl`
 * (which nobody listens on). An error in the redirect, a redirect elsewhere,
 * a missing code or a state that is not ours all refuse the consent.
 */
export async function followConsentRedirect(authorizationUrl: URL, redirectUrl: string, state: string | null): Promise<string> {
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
  const error = target.searchParams.get('error');
  if (error !== null) throw new CliError(`the authorization server refused consent: ${error}`);
  if (state !== null && target.searchParams.get('state') !== state) {
    throw new CliError('the authorization redirect carried a state that does not match the request');
  }
  const code = target.searchParams.get('code');
  if (code === null || code === '') throw new CliError('the authorization redirect carried no code');
  return code;
}
