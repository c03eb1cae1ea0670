/**
 * Opens a remote MCP server over Streamable HTTP or legacy SSE:
 * config headers and a bearer token on every request, `auto` = Streamable
 * HTTP first, then SSE when the server refuses it with a 4xx at connect.
 */
import { SSEClientTransport, SdkHttpError, SseError, type Client, type OAuthClientProvider, type Transport } from '@modelcontextprotocol/client';
import type { RemoteServerConfig } from '../config/schema.js';
import type { ErrorKind } from '../support/errors.js';
import { describeAuthFailure } from '../oauth/errors.js';
import { scopeChallengeFetch } from '../oauth/step-up.js';
import type { Handshake } from './connection.js';
import type { RetryAfterLog } from './rate-limits.js';
import { SessionRenewingTransport } from './session-transport.js';
import { watchTaskHandles } from './tasks.js';

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
  handshake: Handshake,
  bound: RequestBound,
  authProvider: OAuthClientProvider | undefined,
  retryAfter: RetryAfterLog,
): Promise<RemoteSession> {
  const url = new URL(config.url);
  const requestInit: RequestInit = { headers: remoteHeaders(config) };
  const fetch = retryAfter.watch(scopeChallengeFetch(authProvider));
  const attempt = async (kind: RemoteSession['kind']): Promise<RemoteSession> => {
    const transport =
      kind === 'sse'
        ? new SSEClientTransport(url, { requestInit, authProvider, fetch })
        : new SessionRenewingTransport(url, { requestInit, authProvider, fetch });
    const client = handshake.newClient();
    try {
      await client.connect(watchTaskHandles(transport), { signal: bound.signal, timeout: bound.timeout, prior: handshake.prior });
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
  if (err instanceof SdkHttpError) return err.status > 0 ? err.status : undefined;
  if (err instanceof SseError) return typeof err.code === 'number' && err.code > 0 ? err.code : undefined;
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
  const errno = networkErrno(err);
  if (errno !== undefined) return ['transport_closed', `could not reach ${origin}: ${errno}`];
  return null;
}

/**
 * The errno of a failed fetch: fetch() reports network failures as a
 * TypeError whose cause holds it, and the SDK may wrap that TypeError (the
 * era probe does) in an error of its own.
 */
function networkErrno(err: unknown): string | undefined {
  for (let at = err, depth = 0; at instanceof Error && depth < 4; at = at.cause, depth++) {
    const code = (at.cause as { code?: unknown } | undefined)?.code;
    if (at instanceof TypeError && typeof code === 'string') return code;
  }
  return undefined;
}
