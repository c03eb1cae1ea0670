/**
 * Whether a remote server was reached at all. fetch() reports a request that
 * got no answer (refused, no such host, reset, TLS) as a TypeError whose
 * cause holds the code, and the SDK may wrap that in errors of its own (the
 * era probe does), so the cause chain is followed. The SSE transport keeps
 * only the failure's message, so each connect also watches its own fetches:
 * which origins answered, and the last request that got no answer.
 */
import type { FetchLike } from '@modelcontextprotocol/client';

/** A request that got no HTTP answer: the code (when fetch gave one) and a short reason for people. */
export interface NetworkFailure {
  code: string | undefined;
  /** "connection refused (ECONNREFUSED)", "TLS failed (DEPTH_ZERO_SELF_SIGNED_CERT)", "bad port". */
  reason: string;
}

const REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'no such host',
  EAI_AGAIN: 'host name lookup failed',
  EAI_NONAME: 'no such host',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EADDRNOTAVAIL: 'address not available',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed',
};

// OpenSSL's and Node's TLS codes: a handshake that failed or a certificate that was not trusted.
const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|UNABLE_TO_|EPROTO$|HOSTNAME_MISMATCH$)/;

// undici's fixed wording for "no response"; only consulted when the cause carries no code (a "bad port").
const FETCH_FAILED = 'fetch failed';

/** The network failure somewhere on `err`'s cause chain; undefined when the request was answered or never sent. */
export function networkFailure(err: unknown): NetworkFailure | undefined {
  for (let at = err, depth = 0; at instanceof Error && depth < 8; at = at.cause, depth++) {
    if (!(at instanceof TypeError)) continue;
    const cause = at.cause;
    const code = (cause as { code?: unknown } | undefined)?.code;
    if (typeof code === 'string' && code !== '') return { code, reason: describeCode(code) };
    if (at.message === FETCH_FAILED) {
      const why = cause instanceof Error && cause.message !== '' ? cause.message : 'no answer';
      // fetch refuses the ports of other protocols (1, 9, 25, 6000, …) without trying them.
      return { code: undefined, reason: why === 'bad port' ? 'fetch does not connect to this port (bad port)' : firstLine(why) };
    }
  }
  return undefined;
}

function describeCode(code: string): string {
  const reason = REASONS[code] ?? (TLS_CODE.test(code) ? 'TLS failed' : undefined);
  return reason === undefined ? code : `${reason} (${code})`;
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').slice(0, 120);
}

/** What one connect's fetches saw. */
export interface ReachWitness {
  /** Wraps `inner` (undefined: the global fetch) so its answers and failures are noted. */
  watch(inner: FetchLike | undefined): FetchLike;
  /**
   * Whether `origin` answered a request of this connect with an HTTP status
   * below 500: a 5xx is what a proxy or load balancer says for a server that
   * is down, so it does not count as the server answering.
   */
  answered(origin: string): boolean;
  /** The last request of this connect that got no answer at all, and the origin it went to. */
  lastFailure(): { origin: string; failure: NetworkFailure } | undefined;
}

export function createReachWitness(): ReachWitness {
  const answered = new Set<string>();
  let last: { origin: string; failure: NetworkFailure } | undefined;
  return {
    watch(inner) {
      const send = inner ?? fetch;
      return async function fetchNotingReach(url, init) {
        const origin = new URL(url).origin;
        try {
          const response = await send(url, init);
          if (response.status < 500) answered.add(origin);
          return response;
        } catch (err) {
          const failure = networkFailure(err);
          if (failure !== undefined) last = { origin, failure };
          throw err;
        }
      };
    },
    answered: (origin) => answered.has(origin),
    lastFailure: () => last,
  };
}
