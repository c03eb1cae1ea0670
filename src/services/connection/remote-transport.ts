/**
 * Opens a remote MCP server over Streamable HTTP or legacy SSE (SPEC §2):
 * config headers and a bearer token on every request, `auto` = Streamable
 * HTTP first, then SSE when the server refuses it with a 4xx at connect.
 */
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { RemoteServerConfig } from '../config/schema.js';
import type { ErrorKind } from '../support/errors.js';
import { describeAuthFailure } from '../oauth/errors.js';
import { scopeChallengeFetch } from '../oauth/step-up.js';
import { SessionRenewingTransport } from './session-transport.js';

/** A remote transport that finished `initialize`. */
export interface RemoteSession {
  client: Client;
  transport: Transport;
  /** The transport that answered (what `auto` settled on). */
  kind: 'streamable_http' | 'sse';
}

/** Request options bounding initialize: the connect-wide signal and a per-request timeout. */
export interface RequestBound {
  signal: AbortSignal;
  timeout: number;
}

/** The headers every request carries: the config's, plus `Authorization` for bearer auth. */
export function remoteHeaders(config: RemoteServerConfig): Record<string, string> {
  const headers = { ...config.headers };
  if (config.auth.kind === 'bearer') headers.Authorization = `Bearer ${config.auth.token}`;
  return headers;
}

/**
 * Connects `newClient()` to `config.url` and initializes; `authProvider`
 * (SDK OAuth) authorizes every request when given. With `auto`, a 4xx
 * from Streamable HTTP retries over SSE with a fresh client — except 401/403,
 * which SSE would refuse just the same and which must read as auth failures.
 */
export async function openRemote(
  config: RemoteServerConfig,
  newClient: () => Client,
  bound: RequestBound,
  authProvider?: OAuthClientProvider,
): Promise<RemoteSession> {
  const url = new URL(config.url);
  const requestInit: RequestInit = { headers: remoteHeaders(config) };
  const fetch = scopeChallengeFetch(authProvider);
  const attempt = async (kind: RemoteSession['kind']): Promise<RemoteSession> => {
    const transport =
      kind === 'sse'
        ? new SSEClientTransport(url, { requestInit, authProvider, fetch })
        : new SessionRenewingTransport(url, { requestInit, authProvider, fetch });
    const client = newClient();
    try {
      await client.connect(transport, bound);
    } catch (err) {
      await transport.close();
      throw err;
    }
    return { client, transport, kind };
  };
  if (config.transport !== 'auto') return attempt(config.transport);
  try {
    return await attempt('streamable_http');
  } catch (err) {
    const status = httpStatus(err);
    if (status === undefined || status < 400 || status > 499 || status === 401 || status === 403) throw err;
    if (bound.signal.aborted) throw err;
    return attempt('sse');
  }
}

/** The HTTP status a transport error carries, if it is one. */
export function httpStatus(err: unknown): number | undefined {
  if (err instanceof StreamableHTTPError || err instanceof SseError) {
    return typeof err.code === 'number' && err.code > 0 ? err.code : undefined;
  }
  return undefined;
}

/** Kind and one-line text for a failure to reach or talk to `url`; null when it is not a transport failure. */
export function describeRemoteFailure(err: unknown, url: string): [ErrorKind, string] | null {
  const origin = new URL(url).origin;
  const authFailure = describeAuthFailure(err, origin);
  if (authFailure !== null) return authFailure;
  const status = httpStatus(err);
  if (status === 401 || status === 403) {
    return ['auth', `${origin} refused the credentials (HTTP ${status})`];
  }
  if (status !== undefined) return ['protocol', `${origin} answered HTTP ${status}`];
  if (err instanceof SseError) return ['transport_closed', `could not open the event stream of ${origin}`];
  // fetch() reports network failures as a TypeError whose cause holds the errno.
  const cause = (err as { cause?: { code?: unknown } } | undefined)?.cause;
  if (err instanceof TypeError && typeof cause?.code === 'string') {
    return ['transport_closed', `could not reach ${origin}: ${cause.code}`];
  }
  return null;
}
