/**
 * Opens a remote MCP server over Streamable HTTP or legacy SSE:
 * config headers and a bearer token on every request, `auto` = Streamable
 * HTTP first, then SSE when the server refuses it with a 4xx at connect.
 */
import { SSEClientTransport, SdkHttpError, SseError, type Client, type FetchLike, type OAuthClientProvider, type Transport } from '@modelcontextprotocol/client';
import type { RemoteServerConfig } from '../config/index.js';
import type { ErrorKind } from '../errors.js';
import { describeAuthFailure } from '../auth/oauth-errors.js';
import { networkFailure, type ReachWitness } from './reachability.js';
import { scopeChallengeFetch } from '../auth/step-up.js';
import type { Handshake } from './connection.js';
import type { RetryAfterLog } from './rate-limits.js';
import { SessionRenewingTransport } from './session-transport.js';
import { watchTransport } from './transport-proxy.js';

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
 * (SDK OAuth) authorizes every request when given, and `witness` notes what
 * every request got. With `auto`, a 4xx
 * from Streamable HTTP retries over SSE with a fresh client — except 401/403,
 * which SSE would refuse just the same and which must read as auth failures.
 * Without `standaloneStream`, Streamable HTTP opens no standalone `GET` stream.
 */
export async function openRemote(
  config: RemoteServerConfig,
  handshake: Handshake,
  bound: RequestBound,
  authProvider: OAuthClientProvider | undefined,
  retryAfter: RetryAfterLog,
  witness: ReachWitness,
  standaloneStream = true,
): Promise<RemoteSession> {
  const url = new URL(config.url);
  const requestInit: RequestInit = { headers: remoteHeaders(config) };
  const fetch = withStreamsEndingOnAbort(witness.watch(retryAfter.watch(scopeChallengeFetch(authProvider) ?? uncopiedFetch())));
  const attempt = async (kind: RemoteSession['kind']): Promise<RemoteSession> => {
    const transport =
      kind === 'sse'
        ? new SSEClientTransport(url, { requestInit, authProvider, fetch })
        : new SessionRenewingTransport(url, { requestInit, authProvider, fetch: standaloneStream ? fetch : withoutStandaloneStream(url, fetch) });
    const client = handshake.newClient();
    try {
      await untilAborted(
        client.connect(watchTransport(transport), { signal: bound.signal, timeout: bound.timeout, prior: handshake.prior }),
        bound.signal,
      );
    } catch (err) {
      // Also ends a request the connect left waiting (an SSE stream that never opened): its socket goes with it.
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

/**
 * `work`, or the signal's reason once it aborts. The SDK bounds each request
 * of a connect, not the SSE transport's wait for its stream's first event, so
 * the connect's deadline is enforced here; `work` settling later is ignored.
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  work.catch(() => {});
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * `inner`, except that the standalone stream's request (a `GET` of the MCP
 * endpoint with no `Last-Event-ID`) is answered here with the 405 a server
 * without that stream gives: the SDK then goes on without it, as the spec
 * has it. A `GET` that resumes a broken response stream still goes out.
 */
export function withoutStandaloneStream(endpoint: URL, inner: FetchLike): FetchLike {
  return function fetchWithoutStandaloneStream(url, init) {
    if (init?.method === 'GET' && String(url) === endpoint.href && !new Headers(init.headers).has('last-event-id')) {
      return Promise.resolve(new Response(null, { status: 405, statusText: 'Method Not Allowed' }));
    }
    return inner(url, init);
  };
}

/**
 * The global fetch, without the copy it makes of every request: fetch clones
 * a request, teeing its body, so that it could follow a redirect, unless it
 * may not follow one (and has no window). The SDK's requests leave redirects
 * to fetch or handle them themselves (`manual`), so one with a string body or
 * none goes out unable to follow, and a redirect answering it sends the
 * request again as given: answered as before, one request later. A URL that
 * redirected once is sent to as given from then on, so a server that redirects
 * its endpoint sees each later request once. One per connection: what
 * redirected is that connection's to know.
 */
export function uncopiedFetch(): FetchLike {
  const redirecting = new Set<string>();
  return async function fetchUncopied(url, init) {
    const replayable = init?.body === undefined || init.body === null || typeof init.body === 'string';
    const target = String(url);
    if (!replayable || init?.redirect === 'error' || redirecting.has(target)) return fetch(url, init);
    try {
      return await fetch(url, { ...init, window: null, redirect: 'error' });
    } catch (err) {
      if (!(err instanceof TypeError && err.cause instanceof Error && err.cause.message === UNEXPECTED_REDIRECT)) throw err;
      redirecting.add(target);
      return fetch(url, init);
    }
  };
}

// fetch's network error for a redirect it may not follow.
const UNEXPECTED_REDIRECT = 'unexpected redirect';

/** The HTTP status a transport error carries, if it is one. */
export function httpStatus(err: unknown): number | undefined {
  if (err instanceof SdkHttpError) return err.status > 0 ? err.status : undefined;
  if (err instanceof SseError) return typeof err.code === 'number' && err.code > 0 ? err.code : undefined;
  return undefined;
}

/**
 * Kind and one-line text for a failure to reach or talk to `url`; null when it
 * is not a transport failure. `witness` is the connect's ({@link openRemote}):
 * a request no server answered, or a 5xx before the server answered anything
 * else, is `unreachable`. Without it (a call on a connection that was up) the
 * server had answered, and a request that gets no answer means it went away.
 */
export function describeRemoteFailure(err: unknown, url: string, witness?: ReachWitness): [ErrorKind, string] | null {
  const origin = new URL(url).origin;
  const authFailure = describeAuthFailure(err, origin);
  if (authFailure !== null) return authFailure;
  const status = httpStatus(err);
  if (status === 401 || status === 403) {
    return ['auth', `${origin} refused the credentials (HTTP ${status})`];
  }
  if (status !== undefined && status >= 500 && witness !== undefined && !witness.answered(origin)) {
    return ['unreachable', `${origin} answered HTTP ${status} before any MCP message`];
  }
  if (status !== undefined) return ['protocol', `${origin} answered HTTP ${status}${err instanceof SseError && status < 300 ? ' without an event stream' : ''}`];
  const chained = networkFailure(err);
  if (chained !== undefined || err instanceof SseError) {
    // The connect's own fetch saw the request fail and knows where it went (the SSE transport keeps only a message).
    const seen = witness?.lastFailure();
    if (seen !== undefined && (chained === undefined || chained.reason === seen.failure.reason)) {
      const kind = witness!.answered(seen.origin) ? 'transport_closed' : 'unreachable';
      return [kind, `could not reach ${seen.origin}: ${seen.failure.reason}`];
    }
    if (chained !== undefined && witness?.answered(origin)) {
      // Only an auth provider sends requests of a connect past its fetch: discovery and tokens.
      return ['unreachable', `could not reach the authorization server of ${origin}: ${chained.reason}`];
    }
    if (chained !== undefined) return [witness === undefined ? 'transport_closed' : 'unreachable', `could not reach ${origin}: ${chained.reason}`];
  }
  if (err instanceof SseError) return ['transport_closed', `could not open the event stream of ${origin}`];
  return null;
}

/**
 * `inner`, with an event stream (a `subscriptions/listen` stream, an SSE
 * response, the standalone stream) ended when the signal its request was sent
 * with aborts. fetch follows that signal only through the Request object it
 * makes, which nothing holds once the response has arrived: after a garbage
 * collection the abort no longer reached the body, and a closed connection
 * left the server's stream open (a server that waits for its streams before
 * it exits never did). The body piped through a stream bound to the signal is
 * followed for as long as it is read; its cancel ends the request as before.
 */
export function withStreamsEndingOnAbort(inner: FetchLike): FetchLike {
  return async function fetchEndingStreamsOnAbort(url, init) {
    const response = await inner(url, init);
    const signal = init?.signal;
    if (!signal || response.body === null || !response.headers.get('content-type')?.startsWith('text/event-stream')) return response;
    const ending = new Response(response.body.pipeThrough(new TransformStream(), { signal }), response);
    // What an EventSource reads of where the stream came from.
    return Object.defineProperties(ending, { url: { value: response.url }, redirected: { value: response.redirected } });
  };
}
