/**
 * One OAuth consent: a loopback callback server on the registered port, the
 * authorization URL for the user, and — when the browser comes back with a
 * code and our `state` — `exchangeCode`, which checks the answer's issuer
 * (RFC 9207 `iss`) and stores the tokens. Cancelling closes the socket and
 * rejects `completed`; nothing here ever invents a code or marks a server
 * authorized that is not.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { auth, OAuthError, OAuthErrorCode } from '@modelcontextprotocol/client';
import { redact, secretValues } from '../config/masking.js';
import { FleetError } from '../errors.js';
import { describeAuthFailure } from './oauth-errors.js';
import type { PendingConsents } from './pending-consents.js';
import { exchangeCode } from './exchange.js';
import { CALLBACK_PATH, type FleetOAuthProvider, type OAuthServerConfig, type SharedConsent } from './provider.js';

/** Default bound on a consent: the user has this long to finish it in the browser. */
export const DEFAULT_CONSENT_TIMEOUT_MS = 10 * 60_000;

export interface ConsentOptions {
  /** The consent fails (`auth`) if not completed within this (default 10 minutes). */
  timeoutMs?: number;
  /**
   * Where a provider with a public callback (`publicUrl`) records its state,
   * for whichever worker the browser comes back to. That worker exchanges
   * the code and stores the tokens; this consent then only waits to be
   * ended (the host moves the server on once the tokens are there).
   * `server` also names the server on the loopback callback's page.
   */
  pending?: { consents: PendingConsents; server: string; worker: string };
}

/** A consent under way. */
export interface ConsentSession {
  /** Where the user authorizes (the authorization server's page). */
  readonly authorizationUrl: string;
  /**
   * Whether this session answers a consent another worker began (`--public-url`): it did not begin one,
   * so it is not journaled as begun again.
   */
  readonly joined: boolean;
  /** Resolves once the tokens are stored; rejects with a FleetError (`auth`) on refusal, timeout or cancel. */
  readonly completed: Promise<void>;
  /** Ends the consent: closes the callback socket and rejects `completed`. Idempotent. */
  cancel(reason?: string): void;
}

/**
 * Starts a consent for `config` with `provider`: listens on the provider's
 * loopback port, asks the authorization server for a fresh authorization
 * (the stored tokens are dropped: the user asked to consent again), and
 * resolves with the URL once it is known.
 */
export async function beginConsent(
  provider: FleetOAuthProvider,
  config: OAuthServerConfig,
  options: ConsentOptions = {},
): Promise<ConsentSession> {
  const origin = new URL(config.url).origin;
  let settle!: { resolve: () => void; reject: (error: FleetError) => void };
  const completed = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
  // Whoever holds the session may never await it (a cancelled consent nobody waits for).
  completed.catch(() => undefined);
  let done = false;
  let finishing = false;
  let timer: NodeJS.Timeout | undefined;
  let disarm = (): void => {};

  const pending = provider.publicCallback ? options.pending : undefined;
  if (provider.publicCallback && pending === undefined) {
    throw new FleetError('auth', 'a consent with a public callback needs a store of pending consents');
  }
  const callback = createServer(function handleCallback(req, res) {
    void answerCallback(req, res);
  });
  callback.keepAliveTimeout = 1000;
  let recordedState: string | null = null;

  /** `answering`: ended by a callback request, whose answer must still get out before its socket closes. */
  function end(error: FleetError | null, answering = false): void {
    if (done) return;
    done = true;
    clearTimeout(timer);
    disarm();
    if (recordedState !== null) {
      void pending?.consents.drop(recordedState).catch(() => undefined);
      // Ended without tokens (timed out, cancelled, refused here): the workers waiting on it are told why.
      void provider.endConsent(recordedState, error?.message).catch(() => undefined);
    }
    if (callback.listening) {
      callback.close();
      if (answering) callback.closeIdleConnections();
      else callback.closeAllConnections();
    }
    if (error === null) settle.resolve();
    else settle.reject(error);
  }

  async function answerCallback(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method !== 'GET' || at.pathname !== CALLBACK_PATH) return reply(res, 404, 'Not found.');
    if (done || finishing) return reply(res, 409, 'This authorization is no longer waiting for an answer.');
    const expected = provider.expectedState;
    const state = at.searchParams.get('state');
    // A callback without our state is not an answer to our request: refuse it and keep waiting.
    if (expected === null || state === null || !sameText(state, expected)) {
      return reply(res, 400, 'Refused: the state does not match the authorization request.');
    }
    const code = at.searchParams.get('code');
    if (at.searchParams.get('error') === null && (code === null || code === '')) {
      return reply(res, 400, 'Refused: the answer carries no code.');
    }
    finishing = true;
    const refusal = await redeemAnswer(provider, config, at.searchParams);
    end(refusal?.error ?? null, true);
    const named = options.pending?.server;
    if (refusal === null) reply(res, 200, `Authorized${named === undefined ? '' : ` ${named}`}. You can close this window.`);
    else reply(res, refusal.status, refusal.page);
  }

  if (pending === undefined) await listen(callback, provider.port);
  const timeoutMs = options.timeoutMs ?? DEFAULT_CONSENT_TIMEOUT_MS;
  const waitFor = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(
      () => end(new FleetError('auth', `consent was not completed within ${Math.round(timeoutMs / 1000)}s`)),
      Math.max(0, ms),
    );
    timer.unref();
  };
  waitFor(timeoutMs);
  /** Another worker's consent of this server is pending: this one answers its URL and waits for its tokens. */
  let joined = false;
  const join = (other: SharedConsent): URL => {
    joined = true;
    waitFor(other.until - Date.now());
    return new URL(other.url);
  };

  let authorizationUrl: URL | undefined;
  try {
    // Asked again anywhere in the fleet while a consent waits: the same URL, its state and verifier untouched.
    const other = pending === undefined ? null : await provider.sharedConsent();
    if (other !== null) authorizationUrl = join(other);
    else {
      disarm = provider.armConsent({ onAuthorizationUrl: (at) => (authorizationUrl = at), holdVerifier: pending !== undefined });
      await provider.invalidateCredentials('tokens');
      // Read afresh: the authorization server may have moved, and one that is away says so now rather than in the browser.
      await provider.invalidateCredentials('discovery');
      const result = await auth(provider, { serverUrl: config.url, scope: provider.clientMetadata.scope });
      if (result !== 'REDIRECT' || authorizationUrl === undefined) {
        throw new FleetError('auth', `${origin} did not ask for a consent`);
      }
      const state = provider.expectedState;
      if (pending !== undefined && state !== null) {
        // Two workers asked at once: the consent recorded first is everyone's.
        const first = await provider.recordConsent(authorizationUrl.href, state, Date.now() + timeoutMs);
        if (first !== null) authorizationUrl = join(first);
        else {
          recordedState = state;
          await pending.consents.add(state, pending.server, pending.worker);
        }
      }
    }
  } catch (err) {
    const [kind, why] = describeAuthFailure(err, origin) ?? ['auth', err instanceof Error ? err.message : String(err)];
    // The authorization server away stays `unreachable`: the user can only try again later.
    const error = new FleetError(
      kind === 'unreachable' ? 'unreachable' : 'auth',
      redact(`cannot start OAuth consent with ${origin}: ${why}`, secretValues(config)),
    );
    end(error);
    throw error;
  }
  return {
    authorizationUrl: authorizationUrl.href,
    joined,
    completed,
    cancel: (reason = 'consent cancelled') => end(new FleetError('auth', reason)),
  };
}

/** Why an answer to our authorization request did not authorize: for the server's status, and for the user's page. */
export interface Refusal {
  status: 400 | 502;
  error: FleetError;
  page: string;
}

/**
 * The one way the browser's answer (the callback's query, its state already
 * checked) becomes tokens, at the loopback port or at a public URL: a refusal
 * (`error=`) is reported as such; a code is exchanged, with the answer's `iss`
 * (RFC 9207), and the provider stores the tokens. Null when authorized.
 */
export async function redeemAnswer(provider: FleetOAuthProvider, config: OAuthServerConfig, query: URLSearchParams): Promise<Refusal | null> {
  const origin = new URL(config.url).origin;
  const refused = query.get('error');
  if (refused !== null) {
    return {
      status: 400,
      error: new FleetError('auth', `consent for ${origin} was refused (${oneWord(refused)})`),
      page: `The authorization server refused the authorization (${oneWord(refused)}).`,
    };
  }
  try {
    await exchangeCode(provider, config.url, query);
    return null;
  } catch (err) {
    // Said as what it is: the authorization server would not redeem the code (its error code; never the code itself).
    const why =
      err instanceof OAuthError && err.code === OAuthErrorCode.InvalidGrant
        ? `the authorization server refused the code (${err.code})`
        : (describeAuthFailure(err, origin)?.[1] ?? 'the code exchange failed');
    return {
      status: 502,
      error: new FleetError('auth', `consent for ${origin} failed: ${why}`),
      page: 'The authorization could not be completed; see the worker status.',
    };
  }
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new FleetError('auth', `cannot listen for the OAuth callback on 127.0.0.1:${port} (${err.code ?? err.message})`)),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
}

function reply(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', Connection: 'close' });
  res.end(`${text}\n`);
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** An error code from the query string, reduced to what an error code can be. */
function oneWord(text: string): string {
  return text.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 64) || 'unknown';
}
