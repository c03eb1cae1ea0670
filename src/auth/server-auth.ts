/**
 * The host's side of OAuth, as the server machine's actors use it: a provider
 * for every connect of an OAuth server, whether a connect needs a refresh
 * first, the refresh itself, and a consent run as an invoked actor (started
 * when the user begins it, cancelled when the server leaves `authenticating`).
 * Every provider it makes reads and writes one CredentialsStore: the state
 * dir's files, or the database the fleet shares.
 */
import { auth as sdkAuth } from '@modelcontextprotocol/client';
import type { ServerConfig } from '../config/index.js';
import { redact, secretValues } from '../config/masking.js';
import { FleetError } from '../errors.js';
import { publicClientMetadataUrl } from './client-metadata-document.js';
import { beginConsent, redeemAnswer, type ConsentSession, type Refusal } from './consent.js';
import { bindingHash, canBindBrowser, type ConsentBinding } from './consent-binding.js';
import { grantKey } from './credentials-store.js';
import { describeAuthFailure } from './oauth-errors.js';
import { memoryPendingConsents, type PendingConsents } from './pending-consents.js';
import {
  consentNameOf,
  createOAuthProvider,
  credentialsStoreOf,
  isOAuthConfig,
  type CredentialsOption,
  type FleetOAuthProvider,
  type OAuthServerConfig,
} from './provider.js';

/** What `beginAuth` answers (`POST /api/mcp/servers/:name/auth`). */
export interface AuthBegun {
  authorization_url: string;
}

/** What the browser presented with a callback: the binding cookie (verified), and whom its page session signs in, if anyone. */
export interface CallbackBrowser {
  /** The verified binding cookie; absent or null when the browser presented none. */
  binding?: ConsentBinding | null;
  /** The principal of the page session or bearer the request carried; absent or null when it carried none. */
  signedIn?: string | null;
}

/** What a callback authorized: the server, and for a user's own grant, whose. */
export interface CallbackAnswered {
  server: string;
  principal?: string;
}

/** Refused: the server does not use OAuth, is not waiting for consent, or a user's own consent cannot be bound to a browser here. */
export class AuthNotApplicableError extends Error {
  override readonly name = 'AuthNotApplicableError';
  constructor(
    readonly server: string,
    /** `needs_public_url`: a user's own consent needs an https (or loopback) public URL; `needs_browser`: it is begun where a browser can be bound. */
    readonly code: 'not_oauth' | 'not_needed' | 'needs_public_url' | 'needs_browser',
    message: string,
  ) {
    super(message);
  }
}

/** What a running consent tells its server actor. */
export type ConsentReport =
  | { type: 'auth.url'; url: string; joined: boolean }
  | { type: 'auth.completed' }
  | { type: 'auth.failed'; error: FleetError };

/** Where the credentials live (`credentials`: a store; `stateDir`: the file store there), and the consent bound. */
export type ServerAuthOptions = CredentialsOption & {
  /** Bound on a consent (default: beginConsent's 10 minutes). */
  consentTimeoutMs?: number;
  /**
   * The worker's public URL: consents come back to `<publicUrl>/oauth/callback` (see `answerCallback`), and,
   * when it is HTTPS, `<publicUrl>/oauth/client-metadata.json` is the client id where the authorization server takes it.
   */
  publicUrl?: string;
  /** Where consents with a public callback are recorded (default: this process only). */
  pendingConsents?: PendingConsents;
  /** Recorded with each pending consent. */
  workerId?: string;
};

/** A callback at `/oauth/callback` that is not an answer to a pending consent, or whose answer failed. */
export class CallbackRefusedError extends Error {
  override readonly name = 'CallbackRefusedError';
  constructor(
    readonly status: 400 | 502,
    message: string,
    /** An answer to a pending consent that did not authorize: whose consent, and why (for the server's status and the journal). */
    readonly failed?: { server: string; principal?: string; error: FleetError },
  ) {
    super(message);
  }
}

export interface ServerAuth {
  /** The provider for a connect of `config`; undefined when it does not use OAuth. */
  providerFor(name: string, config: ServerConfig): Promise<FleetOAuthProvider | undefined>;
  /** Whether the stored token must be refreshed before a connect can use it. */
  needsRefresh(name: string, config: ServerConfig): Promise<boolean>;
  /** Refreshes the stored token; rejects with an `auth` FleetError when only a consent can help. */
  refresh(name: string, config: ServerConfig): Promise<void>;
  /** Runs one consent, reporting through `report`; returns the function that cancels it. */
  consent(name: string, config: ServerConfig, report: (event: ConsentReport) => void): () => void;
  /** Deletes the stored credentials of a removed server. */
  forget(name: string): Promise<void>;
  /**
   * Answers the browser's return to `<publicUrl>/oauth/callback`, on whichever
   * worker it lands: the pending consent its `state` names is taken (once),
   * the code exchanged and the tokens stored. Resolves with the server's name.
   */
  answerCallback(
    query: URLSearchParams,
    configOf: (name: string) => ServerConfig | undefined,
    browser?: CallbackBrowser,
  ): Promise<CallbackAnswered>;
  /** The provider of `principal`'s own grant for the `per_user` server `name`. */
  grantProvider(name: string, principal: string, config: OAuthServerConfig): Promise<FleetOAuthProvider>;
  /**
   * Begins `principal`'s own consent for the `per_user` server `name`: the
   * authorization request (state, PKCE S256, resource) is recorded as pending
   * for that principal and the browser whose binding hashes to `binding`,
   * answerable for the consent timeout. Their current grant is dropped.
   */
  beginUserConsent(name: string, principal: string, config: ServerConfig, binding: string): Promise<AuthBegun>;
  /** Deletes the per-user grants of a server, of a principal, or of one principal on one server. */
  forgetGrants(of: { server?: string; principal?: string }): Promise<void>;
  /** The key the browser binding of user consents is signed with (the same on every worker of the store). */
  bindingKey(): Promise<Buffer>;
  /** How long a user consent's state can be answered, in milliseconds. */
  readonly consentTtlMs: number;
}

/** Default bound on a user's consent: the state is answerable this long. */
const USER_CONSENT_TTL_MS = 10 * 60_000;

export function createServerAuth(options: ServerAuthOptions): ServerAuth {
  const credentials = credentialsStoreOf(options);
  const pendingConsents = options.pendingConsents ?? memoryPendingConsents();
  // The server's own document wins; else, behind an HTTPS public URL, the one the management app serves.
  const workerDocument = publicClientMetadataUrl(options.publicUrl);
  const create = (name: string, config: OAuthServerConfig) => {
    const clientMetadataUrl = config.auth.client_metadata_url ?? workerDocument;
    return createOAuthProvider({
      credentials,
      name,
      config,
      ...(clientMetadataUrl === undefined ? {} : { clientMetadataUrl }),
      ...(options.publicUrl === undefined ? {} : { publicUrl: options.publicUrl }),
    });
  };
  const provider = (name: string, config: ServerConfig) => (isOAuthConfig(config) ? create(name, config) : Promise.resolve(undefined));
  const grantProvider = (name: string, principal: string, config: OAuthServerConfig) => create(grantKey(name, principal), config);
  const consentTtlMs = options.consentTimeoutMs ?? USER_CONSENT_TTL_MS;
  const worker = options.workerId ?? `pid-${process.pid}`;

  /**
   * The consents this worker waits on that any worker's callback may end (`--public-url`), by the consent's name
   * (consentNameOf). Another worker that ends one without tokens tells it (`tellConsentEnded`): each one waiting
   * here ends with that reason, so its server leaves `authenticating` for `needs_reauth` at once, and the next
   * consent asked for is a new one. Watched only while one waits.
   */
  const waiting = new Map<ConsentSession, { server: string; consent: string }>();
  let stopWatching: (() => void) | null = null;
  const consentEnded = (server: string, consent: string, error: string) => {
    for (const [session, on] of waiting) if (on.server === server && on.consent === consent) session.cancel(error);
  };
  const waitOn = (server: string, session: ConsentSession): (() => void) => {
    const consent = options.publicUrl === undefined ? null : consentNameOf(session.authorizationUrl);
    if (consent === null || credentials.watchConsents === undefined) return () => {};
    waiting.set(session, { server, consent });
    stopWatching ??= credentials.watchConsents(consentEnded);
    return () => {
      waiting.delete(session);
      if (waiting.size > 0 || stopWatching === null) return;
      stopWatching();
      stopWatching = null;
    };
  };

  return {
    providerFor: provider,

    async needsRefresh(name, config) {
      return (await provider(name, config))?.needsRefresh() ?? false;
    },

    async refresh(name, config) {
      await (await provider(name, config))?.refresh();
    },

    consent(name, config, report) {
      let cancelled = false;
      let session: ConsentSession | null = null;
      void (async function runConsent() {
        try {
          if (!isOAuthConfig(config)) throw new FleetError('config', `server "${name}" does not use OAuth`);
          const oauth = await create(name, config);
          const begun = await beginConsent(oauth, config, {
            timeoutMs: options.consentTimeoutMs,
            pending: { consents: pendingConsents, server: name, worker },
          });
          // Left `authenticating` while the consent was being prepared: nobody waits for it.
          if (cancelled) return begun.cancel();
          session = begun;
          const done = waitOn(name, begun);
          report({ type: 'auth.url', url: begun.authorizationUrl, joined: begun.joined });
          await begun.completed.finally(done);
          report({ type: 'auth.completed' });
        } catch (error) {
          if (cancelled) return;
          const failure =
            error instanceof FleetError ? error : new FleetError('auth', error instanceof Error ? error.message : String(error));
          report({ type: 'auth.failed', error: failure });
        }
      })();
      return function cancelConsent() {
        cancelled = true;
        session?.cancel('consent cancelled: the server left authenticating');
      };
    },

    async forget(name) {
      await credentials.delete(name);
      await credentials.deleteGrants?.({ server: name });
    },

    grantProvider,
    consentTtlMs,

    async forgetGrants(of) {
      await credentials.deleteGrants?.(of);
    },

    async bindingKey() {
      if (credentials.bindingKey === undefined) throw new FleetError('config', 'this credentials store keeps no per-user grants');
      return credentials.bindingKey();
    },

    async beginUserConsent(name, principal, config, binding) {
      if (!isOAuthConfig(config) || config.scope !== 'per_user') throw new AuthNotApplicableError(name, 'not_oauth', `server "${name}" is not a per_user OAuth server`);
      const publicUrl = options.publicUrl;
      // The browser must come back to the app that set its binding cookie, and that cookie must be Secure.
      if (publicUrl === undefined) {
        throw new AuthNotApplicableError(name, 'needs_public_url', `server "${name}": a user's own OAuth consent needs the worker's public URL (serve --public-url)`);
      }
      if (!canBindBrowser(publicUrl)) {
        throw new AuthNotApplicableError(
          name,
          'needs_public_url',
          `server "${name}": a user's own OAuth consent needs an https public URL (or a loopback one): a browser keeps no Secure cookie for ${new URL(publicUrl).origin}`,
        );
      }
      const origin = new URL(config.url).origin;
      const oauth = await grantProvider(name, principal, config);
      let authorizationUrl: URL | undefined;
      const disarm = oauth.armConsent({ onAuthorizationUrl: (at) => (authorizationUrl = at) });
      try {
        // A new consent replaces the grant; the discovery is read afresh (the authorization server may have moved).
        await oauth.invalidateCredentials('tokens');
        await oauth.invalidateCredentials('discovery');
        const result = await sdkAuth(oauth, { serverUrl: config.url, scope: oauth.clientMetadata.scope });
        const state = oauth.expectedState;
        if (result !== 'REDIRECT' || authorizationUrl === undefined || state === null) throw new FleetError('auth', `${origin} did not ask for a consent`);
        await pendingConsents.add(state, name, worker, { principal, binding, ttlMs: consentTtlMs });
        return { authorization_url: authorizationUrl.href };
      } catch (err) {
        if (err instanceof FleetError) throw err;
        const [kind, why] = describeAuthFailure(err, origin) ?? ['auth', err instanceof Error ? err.message : String(err)];
        throw new FleetError(kind === 'unreachable' ? 'unreachable' : 'auth', redact(`cannot start OAuth consent with ${origin}: ${why}`, secretValues(config)));
      } finally {
        disarm();
      }
    },

    async answerCallback(query, configOf, browser) {
      const state = query.get('state');
      const pending = state === null || state === '' ? null : await pendingConsents.take(state);
      // Not an answer to a request of ours (no state, a wrong one, one already used, one expired): it changes nothing.
      if (pending === null || state === null) throw new CallbackRefusedError(400, 'Refused: the state does not match a pending authorization request.');
      const name = pending.server;
      const config = configOf(name);
      if (config === undefined || !isOAuthConfig(config)) {
        throw new CallbackRefusedError(400, `Refused: server "${name}" no longer uses OAuth here.`);
      }
      const owner = pending.owner;
      if (owner === undefined) {
        const oauth = await create(name, config);
        let refusal: Refusal | null = null;
        try {
          refusal = await redeemAnswer(oauth, config, query);
        } finally {
          // Answered either way: the next consent asked for is a new one (tokens stored cleared it already). One
          // that did not authorize ends on every worker waiting on it, with why.
          const why = refusal === null ? undefined : refusal.error.message;
          await oauth.endConsent(state, why ?? 'the answer to the consent could not be redeemed').catch(() => undefined);
        }
        if (refusal !== null) throw new CallbackRefusedError(refusal.status, refusal.page, { server: name, error: refusal.error });
        return { server: name };
      }
      // A user's consent: only in the browser that began it, and not while someone else is signed in there.
      const held = browser?.binding ?? null;
      const sameBrowser = held !== null && held.principal === owner.principal && bindingHash(held.nonce) === owner.binding;
      const signedInElse = browser?.signedIn != null && browser.signedIn !== owner.principal;
      if (!sameBrowser || signedInElse) {
        throw new CallbackRefusedError(
          400,
          'Refused: this authorization was begun by another user or in another browser; nothing was stored. Connect from the page, signed in as yourself.',
        );
      }
      if (config.scope !== 'per_user') throw new CallbackRefusedError(400, `Refused: server "${name}" is no longer a per_user server.`);
      const refusal = await redeemAnswer(await grantProvider(name, owner.principal, config), config, query);
      if (refusal !== null) {
        throw new CallbackRefusedError(refusal.status, refusal.page, { server: name, principal: owner.principal, error: refusal.error });
      }
      return { server: name, principal: owner.principal };
    },
  };
}
