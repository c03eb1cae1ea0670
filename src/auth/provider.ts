/**
 * The SDK's `OAuthClientProvider` for one remote server, its credentials in a
 * CredentialsStore (files under the state dir, or the fleet's database). It
 * refreshes the access token before it expires — on demand in `tokens()` and,
 * while the server is ready, in the background — one refresh at a time
 * however many requests wait for it, and fleet-wide: the refresh holds the
 * store's lock, re-reads the stored tokens inside it and uses those another
 * worker just refreshed instead of refreshing again. Every change is written
 * as a locked read-modify-write of the fields it changes, so an older copy
 * held in memory never overwrites a rotated refresh token. It
 * only ever shows an authorization URL to a consent the user started
 * (`armConsent`); otherwise the need for consent is an error. Registrations
 * are kept per authorization server, and a token the server refuses sends
 * the next authorization back to discovery: the server may have moved to
 * another authorization server (SEP-2352).
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  DpopSession,
  extractWWWAuthenticateParams,
  isDpopNonceChallenge,
  isHttpsUrl,
  OAuthError,
  OAuthErrorCode,
  refreshAuthorization,
  selectResourceURL,
  type OAuthClientInformationContext,
  type OAuthClientInformationMixed,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type OAuthTokens,
} from '@modelcontextprotocol/client';
import type { RemoteServerConfig } from '../config/index.js';
import { FleetError } from '../errors.js';
import type { CredentialsRecord, StoredClient, StoredTokens } from './credentials-file.js';
import { changeCredentials, createFileCredentialsStore, type CredentialsStore, type LockedChange } from './credentials-store.js';
import { createDpopKey, dpopKeyPairOf, type StoredDpopKey } from './dpop-key.js';
import { discoverAuthorization } from './discovery.js';
import { ConsentRequiredError } from './oauth-errors.js';
import { fetchNotingAway, isAuthorizationServerAway, type AuthorizationServerAwayError } from './away.js';
import { issuerOf, registrationFor, sameIssuer, withoutRegistration, withRegistration } from './registrations.js';
import { countRefresh } from '../telemetry/oauth.js';
import { freeLoopbackPort } from './free-port.js';

/** Refresh answers that mean the grant is gone: only a new consent helps. */
const REFRESH_REFUSALS = new Set<string>([OAuthErrorCode.InvalidGrant, OAuthErrorCode.InvalidClient, OAuthErrorCode.UnauthorizedClient]);

/** Path of the loopback consent callback. */
export const CALLBACK_PATH = '/oauth/callback';
/** Refresh at most this long before expiry; shorter lifetimes refresh at half-life. */
const MAX_REFRESH_AHEAD_MS = 60_000;
/** A background refresh that failed for a reason other than a rejected grant is tried again after this. */
const REFRESH_RETRY_MS = 10_000;
/** Bound on the refresh request: it runs holding the credentials lock, which other workers may be waiting for. */
const REFRESH_TIMEOUT_MS = 30_000;
/** Tokens a refresh could not store are tried again after this, doubling up to UNSAVED_RETRY_MAX_MS. */
const UNSAVED_RETRY_MS = 250;
const UNSAVED_RETRY_MAX_MS = 4_000;

/**
 * Tokens a refresh received but could not store (the database went away
 * before its commit). The authorization server rotated the refresh token, so
 * these are the only valid ones: every provider of the process uses them
 * instead of the stored ones while the store still holds `from`, and they are
 * stored at the first chance. Kept per store, then per server, across the
 * providers a connect, a refresh or a consent each make.
 */
interface Unsaved {
  /** The tokens to store. */
  tokens: StoredTokens;
  /** The discovery the refresh used, for a record that had none. */
  discovery: CredentialsRecord['discovery'];
  /** The stored tokens the refresh started from: stored tokens other than these are newer, and win. */
  from: StoredTokens | null;
  serverUrl: string;
  clientId: string | null;
  attempt: number;
  timer: NodeJS.Timeout | undefined;
  storing: Promise<void> | null;
}
const unsavedByStore = new WeakMap<CredentialsStore, Map<string, Unsaved>>();

function unsavedOf(store: CredentialsStore): Map<string, Unsaved> {
  let kept = unsavedByStore.get(store);
  if (kept === undefined) unsavedByStore.set(store, (kept = new Map()));
  return kept;
}

/**
 * `current` (as stored) with the unsaved tokens of `entry` in place of the
 * ones they replace; `write` when that is a change to store. Stored tokens
 * other than the ones the refresh started from are newer (or the same,
 * committed after all): the unsaved ones are then done with.
 */
function withUnsaved(current: CredentialsRecord, entry: Unsaved | undefined): { record: CredentialsRecord; write: boolean; done: boolean } {
  if (entry === undefined) return { record: current, write: false, done: false };
  if (!sameTokens(current.tokens, entry.from)) return { record: current, write: false, done: true };
  return { record: { ...current, tokens: entry.tokens, discovery: current.discovery ?? entry.discovery }, write: true, done: false };
}

/**
 * Stores the unsaved tokens of `server`, under its lock, if the store still
 * holds the tokens they replace; tried again with backoff while the store
 * fails. Drops them once stored, or once newer tokens are found stored.
 */
function storeUnsaved(store: CredentialsStore, server: string): Promise<void> {
  const kept = unsavedOf(store);
  const entry = kept.get(server);
  if (entry === undefined) return Promise.resolve();
  clearTimeout(entry.timer);
  entry.storing ??= store
    .lockForRefresh(server, entry.serverUrl, entry.clientId, async function storeUnsavedTokens(current) {
      const { record, write } = withUnsaved(current, entry);
      return { record: write ? record : null, result: undefined };
    })
    .then(
      () => {
        if (kept.get(server) === entry) kept.delete(server);
      },
      () => {
        entry.storing = null;
        if (kept.get(server) !== entry) return;
        entry.timer = setTimeout(() => void storeUnsaved(store, server), Math.min(UNSAVED_RETRY_MAX_MS, UNSAVED_RETRY_MS * 2 ** entry.attempt++));
        entry.timer.unref();
      },
    );
  return entry.storing;
}

/** A remote server config whose `auth.kind` is `oauth`. */
export type OAuthServerConfig = RemoteServerConfig & { auth: Extract<RemoteServerConfig['auth'], { kind: 'oauth' }> };

export function isOAuthConfig(config: { type: string; auth?: { kind: string } }): config is OAuthServerConfig {
  return config.type === 'remote' && config.auth?.kind === 'oauth';
}

/** Where a provider's credentials live: a store, or the state dir (the file store, `<stateDir>/oauth/<name>.json`). */
export type CredentialsOption =
  | {
      /** The store of the credentials (files, or the fleet's database). */
      credentials: CredentialsStore;
      stateDir?: never;
    }
  | {
      /** The state dir: credentials in `<stateDir>/oauth/<name>.json`. */
      stateDir: string;
      credentials?: never;
    };

export type OAuthProviderOptions = CredentialsOption & {
  /** Server name. */
  name: string;
  config: OAuthServerConfig;
  /** Clock, for tests (default `Date.now`). */
  now?: () => number;
  /** A URL offered as the `client_id` where the authorization server takes client metadata documents (SEP-991). */
  clientMetadataUrl?: string;
  /**
   * Where the worker is reached (`serve --public-url`): the redirect URI is
   * then `<publicUrl>/oauth/callback`, served by the management app, instead
   * of a loopback port of this machine.
   */
  publicUrl?: string;
};

/** The store `options` name: the given one, else the file store of its state dir. */
export function credentialsStoreOf(options: CredentialsOption): CredentialsStore {
  return options.credentials ?? createFileCredentialsStore(options.stateDir);
}

/** Where a consent under way is told the authorization URL. */
export interface ConsentHooks {
  onAuthorizationUrl(url: URL): void;
  /**
   * Keep the PKCE verifier in memory until `recordConsent`: a consent that another worker's consent
   * (begun meanwhile) supersedes must not replace the verifier that one's callback needs.
   */
  holdVerifier?: boolean;
}

/** A consent of the server under way somewhere in the fleet (`CredentialsRecord.consent`). */
export interface SharedConsent {
  url: string;
  /** Epoch ms when it times out. */
  until: number;
}

const stateHashOf = (state: string) => createHash('sha256').update(state).digest('base64url');

/** The name of the consent whose authorization URL is `authorizationUrl`: the hash of its `state` (`CredentialsRecord.consent.state_hash`). */
export function consentNameOf(authorizationUrl: string): string | null {
  const state = new URL(authorizationUrl).searchParams.get('state');
  return state === null ? null : stateHashOf(state);
}

/** Loads (or creates) the server's credentials and returns its provider. */
export async function createOAuthProvider(options: OAuthProviderOptions): Promise<FleetOAuthProvider> {
  const { name, config } = options;
  const credentials = credentialsStoreOf(options);
  let record = await credentials.load(name, config.url, config.auth.client_id);
  // Behind a public URL no loopback port is registered.
  if (options.publicUrl !== undefined) return new FleetOAuthProvider(options, credentials, record, 0);
  const configured = config.auth.callback_port;
  let port = configured ?? record.redirect_port;
  if (port === null || record.redirect_port !== port) {
    // Picked once and kept: a later consent must present the registered redirect_uri. A port another worker stored first wins.
    const picked = port ?? (await freeLoopbackPort());
    record = await changeCredentials(credentials, name, config.url, config.auth.client_id, (current) => ({
      ...current,
      redirect_port: configured ?? current.redirect_port ?? picked,
    }));
    port = record.redirect_port ?? picked;
  }
  return new FleetOAuthProvider(options, credentials, record, port);
}

/** What a refresh under the lock came to: the record it committed (null: none), and why the grant is lost, if it is. */
interface RefreshOutcome {
  record: CredentialsRecord | null;
  lost: string | null;
}

/** What a refresh readies before taking the lock: the discovery, and the DPoP session with the key it signs with. */
interface Prepared {
  discovery: OAuthDiscoveryState;
  dpop: { key: StoredDpopKey; session: DpopSession } | undefined;
}

export class FleetOAuthProvider implements OAuthClientProvider {
  readonly #name: string;
  readonly #config: OAuthServerConfig;
  readonly #credentials: CredentialsStore;
  /** The record as this provider last read or wrote it; the store has the word when they differ. */
  #record: CredentialsRecord;
  readonly #now: () => number;
  /** The loopback port of `redirectUrl` (0 behind a public URL). */
  readonly port: number;
  /** `<publicUrl>/oauth/callback`, when the worker has one. */
  readonly #publicCallback: string | undefined;
  #consent: ConsentHooks | null = null;
  /** The verifier of an armed consent that holds it (`holdVerifier`), not stored yet. */
  #heldVerifier: string | null = null;
  #state: string | null = null;
  #refreshing: Promise<void> | null = null;
  #refreshingRefused: Promise<void> | null = null;
  #timer: NodeJS.Timeout | undefined;
  readonly #lostListeners = new Set<(error: FleetError) => void>();
  /** Scopes a `403 insufficient_scope` asked for on this connection. */
  readonly #challenged = new Set<string>();
  /** The scope of the step-up under way, if the last 403 asked for one: what a consent must now grant. */
  #steppingUpTo: string | undefined;
  /** The `resource_metadata` URL of the server's last 401, for the next discovery. */
  #resourceMetadataUrl: URL | undefined;
  /** With `auth.dpop`, the key tokens are bound to (loaded or made on first use). */
  #dpop: Promise<DpopSession> | undefined;
  /** Why the last refresh could not reach the authorization server; null once one got an answer. */
  #away: AuthorizationServerAwayError | null = null;

  /**
   * Read by the SDK: offered as the client id where the server supports it.
   * Optional, as the SDK's interface has it: a consumer type-checking with
   * `exactOptionalPropertyTypes` accepts this class as its implementation.
   */
  readonly clientMetadataUrl?: string;

  constructor(options: OAuthProviderOptions, credentials: CredentialsStore, record: CredentialsRecord, port: number) {
    if (options.clientMetadataUrl !== undefined) this.clientMetadataUrl = options.clientMetadataUrl;
    this.#name = options.name;
    this.#config = options.config;
    this.#credentials = credentials;
    this.#record = withUnsaved(record, unsavedOf(credentials).get(options.name)).record;
    this.#now = options.now ?? Date.now;
    this.port = port;
    this.#publicCallback = options.publicUrl === undefined ? undefined : `${options.publicUrl.replace(/\/+$/, '')}${CALLBACK_PATH}`;
    // A new use of the server is a chance to store what an earlier refresh could not.
    void storeUnsaved(credentials, options.name);
  }

  /** Whether the callback comes to the management app at a public URL (any worker of the fleet), not to a loopback port. */
  get publicCallback(): boolean {
    return this.#publicCallback !== undefined;
  }

  /** The MCP server these credentials are for. */
  get serverUrl(): string {
    return this.#config.url;
  }

  get redirectUrl(): string {
    return this.#publicCallback ?? `http://127.0.0.1:${this.port}${CALLBACK_PATH}`;
  }

  get clientMetadata(): OAuthClientMetadata {
    const { client_secret: secret } = this.#config.auth;
    const scopes = [...new Set([...this.#config.auth.scopes, ...(this.#record.step_up_scope?.split(' ') ?? [])])];
    return {
      client_name: 'mcp-fleet',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: secret === null ? 'none' : 'client_secret_basic',
      // Behind a public URL the callback is a web server's, whatever its host (the SDK would call a loopback one native).
      ...(this.#publicCallback === undefined ? {} : { application_type: 'web' }),
      ...(scopes.length > 0 ? { scope: scopes.join(' ') } : {}),
    };
  }

  state(): string {
    this.#state = randomBytes(24).toString('base64url');
    return this.#state;
  }

  /** The `state` of the last authorization request, which the callback must echo. */
  get expectedState(): string | null {
    return this.#state;
  }

  /**
   * The client registered with the authorization server `ctx.issuer` (by
   * default the one discovery last named): the configured client, or the
   * registration kept for that issuer.
   */
  clientInformation(ctx?: OAuthClientInformationContext): OAuthClientInformationMixed | undefined {
    const { client_id: id, client_secret: secret } = this.#config.auth;
    if (id !== null) return secret === null ? { client_id: id } : { client_id: id, client_secret: secret };
    const issuer = ctx?.issuer ?? this.#discoveredIssuer();
    const client = issuer === undefined ? undefined : registrationFor(this.#record.clients, issuer);
    if (client === undefined) return undefined;
    // Registered for another redirect URI (callback_port or public URL changed): a consent registers again rather
    // than present a stale one; outside a consent the registration stays, so its refresh token keeps working.
    const consenting = this.#consent !== null;
    if (consenting && Array.isArray(client.redirect_uris) && !client.redirect_uris.includes(this.redirectUrl)) return undefined;
    // A URL client id (a metadata document, kept without redirect URIs) other than the one offered now (the public URL
    // or the configured document moved): the authorization server would fetch a document nobody serves any more.
    if (consenting && isUrlClientId(client) && client.client_id !== this.clientMetadataUrl) return undefined;
    // A consent asking for more scope than the registration allows (a step-up) registers again too;
    // outside a consent the registration stays, so the stored refresh token keeps working.
    const registered = typeof client.scope === 'string' ? client.scope.split(' ') : null;
    const wanted = this.clientMetadata.scope?.split(' ') ?? [];
    if (consenting && registered !== null && !wanted.every((scope) => registered.includes(scope))) {
      return undefined;
    }
    return client as OAuthClientInformationMixed;
  }

  async saveClientInformation(info: OAuthClientInformationMixed, ctx?: OAuthClientInformationContext): Promise<void> {
    // A pre-registered client stays in the config, where the user put it.
    if (this.#config.auth.client_id !== null) return;
    const issuer = ctx?.issuer ?? (info as StoredClient).issuer ?? this.#discoveredIssuer();
    if (issuer === undefined) throw new FleetError('auth', `no authorization server is known for the registration of server "${this.#name}"`);
    await this.#change((current) => ({ ...current, clients: withRegistration(current.clients, issuer, info as StoredClient) }));
  }

  /**
   * The stored tokens, refreshed first when due. Asked for the tokens of the
   * authorization server `ctx.issuer`, tokens another one issued are none.
   */
  async tokens(ctx?: OAuthClientInformationContext): Promise<OAuthTokens | undefined> {
    const stored = this.#record.tokens;
    if (stored === null) return undefined;
    if (ctx !== undefined && stored.issuer !== undefined && !sameIssuer(stored.issuer, ctx.issuer)) return undefined;
    if (stored.refresh_token !== undefined && this.#refreshDue(stored)) {
      // A failed refresh leaves the old token, and the server's 401 says the rest.
      await this.refresh().catch(() => undefined);
    }
    return toSdkTokens(this.#record.tokens, this.#now());
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const stored = storedTokens(tokens, this.#now());
    // A step-up that ends in new tokens is over.
    this.#steppingUpTo = undefined;
    // The SDK saving what a locked refresh answered it (sdk-refresh.ts): stored already, maybe replaced since.
    const held = this.#record.tokens;
    if (held !== null && sameTokens(held, stored) && held.issuer === stored.issuer) return;
    // Persisted before the SDK uses it: a rotated refresh token is never lost to a crash.
    // Tokens end the consent under way: the next one asked for is a new one.
    await this.#change((current) => ({ ...current, tokens: stored, consent: null }));
  }

  redirectToAuthorization(authorizationUrl: URL): void {
    const steppingUpTo = this.#steppingUpTo;
    this.#steppingUpTo = undefined;
    if (this.#consent !== null) {
      this.#consent.onAuthorizationUrl(authorizationUrl);
      return;
    }
    // A step-up to a scope the token lacks cannot be a refresh (RFC 6749, section 6): only the user can grant it.
    // The refresh got no answer: the grant may be intact, and the authorization URL would not load either.
    if (this.#away !== null && steppingUpTo === undefined) throw this.#away;
    const reason =
      steppingUpTo !== undefined
        ? `the server requires the scope "${steppingUpTo}"`
        : this.#record.tokens === null
          ? 'no usable token'
          : 'the token was refused';
    const error = new ConsentRequiredError(this.#name, reason);
    this.#reportLost(error);
    throw error;
  }

  async saveCodeVerifier(codeVerifier: string): Promise<void> {
    if (this.#consent?.holdVerifier === true) {
      this.#heldVerifier = codeVerifier;
      return;
    }
    await this.#change((current) => ({ ...current, code_verifier: codeVerifier }));
  }

  codeVerifier(): string {
    if (this.#record.code_verifier === null) throw new FleetError('auth', 'no PKCE verifier: no consent was started');
    return this.#record.code_verifier;
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    await this.#change((current) => ({ ...current, discovery: state as CredentialsRecord['discovery'] }));
  }

  /**
   * The discovered authorization server. Nothing cached (first use, or the
   * server refused a token), it is discovered here rather than by the SDK's
   * `auth()`, which reuses what this returns: so discovery.ts decides when the
   * metadata's issuer may differ from the URL it was found at.
   */
  async discoveryState(): Promise<OAuthDiscoveryState> {
    if (this.#record.discovery !== null) return this.#record.discovery as unknown as OAuthDiscoveryState;
    const discovered = await discoverAuthorization(this.#config.url, {
      resourceMetadataUrl: this.#resourceMetadataUrl,
      serverHeaders: this.#config.headers,
      // Bounded: a refresh waits for this, and a consent's answer to the user does too.
      fetch: fetchNotingAway(this.#config.url, boundedFetch),
    });
    await this.saveDiscoveryState(discovered);
    return discovered;
  }

  /** The DPoP key this provider's tokens are bound to; undefined for Bearer tokens. */
  dpop(): Promise<DpopSession> | undefined {
    if (!this.#config.auth.dpop) return undefined;
    this.#dpop ??= this.#dpopSession().catch((error: unknown) => {
      this.#dpop = undefined;
      throw error;
    });
    return this.#dpop;
  }

  /** The stored key, or a new one stored before any token can be bound to it (unless another worker stored one first). */
  async #dpopSession(): Promise<DpopSession> {
    const stored = this.#record.dpop_key;
    if (stored !== null) return DpopSession.create({ keyPair: await dpopKeyPairOf(stored) });
    const fresh = await createDpopKey();
    await this.#change((current) => ({ ...current, dpop_key: current.dpop_key ?? fresh.stored }));
    const kept = this.#record.dpop_key;
    const keyPair = kept === null || sameDpopKey(kept, fresh.stored) ? fresh.keyPair : await dpopKeyPairOf(kept);
    return DpopSession.create({ keyPair });
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    const all = scope === 'all';
    // The authorization server that refused our client: the one discovery named when it did.
    const refused = this.#discoveredIssuer();
    if (all) this.#dpop = undefined;
    await this.#change((current) => {
      const next = { ...current };
      if (all) {
        next.clients = {};
        next.dpop_key = null;
      }
      // The authorization server refused our client: its registration goes (every one, when none is known to be current).
      if (scope === 'client') next.clients = refused === undefined ? {} : withoutRegistration(current.clients, refused);
      if (all || scope === 'tokens') next.tokens = null;
      if (all || scope === 'verifier') next.code_verifier = null;
      if (all || scope === 'discovery') next.discovery = null;
      return next;
    });
  }

  /**
   * The MCP server answered 401. Its challenge's `resource_metadata` URL is
   * where the next discovery looks. When the request carried our token (and
   * the 401 is not a DPoP nonce challenge, which the transport answers
   * itself), the token no longer authenticates there: the cached discovery
   * goes, so the next authorization reads the server's metadata again and
   * follows it to a new authorization server if it moved (SEP-2352).
   */
  async noteUnauthorized(response: Response, carriedToken: boolean): Promise<void> {
    const challenged = extractWWWAuthenticateParams(response).resourceMetadataUrl;
    if (challenged !== undefined) this.#resourceMetadataUrl = challenged;
    if (carriedToken && !isDpopNonceChallenge(response) && this.#record.discovery !== null) {
      await this.invalidateCredentials('discovery');
    }
  }

  /**
   * The server refused a request for want of `scope` (`403 insufficient_scope`).
   * The first time, the scope is remembered for every later consent and the
   * SDK's step-up goes ahead: a refresh and one retry when the token already
   * holds the scope, else an authorization, which needs the user's consent
   * (`redirectToAuthorization` says so). Refused again, the token cannot be
   * widened without the user: the server needs consent.
   */
  async noteScopeChallenge(scope: string | undefined): Promise<void> {
    const wanted = scope ?? this.#record.step_up_scope ?? '';
    if (this.#challenged.has(wanted)) {
      this.#reportLost(new ConsentRequiredError(this.#name, `the server requires the scope "${wanted}"`));
      return;
    }
    this.#challenged.add(wanted);
    this.#steppingUpTo = wanted;
    if (scope !== undefined && scope !== this.#record.step_up_scope) {
      await this.#change((current) => ({ ...current, step_up_scope: scope }));
    }
  }

  /**
   * Lets `redirectToAuthorization` hand the URL to a consent the user started;
   * returns the function that ends it. One consent at a time.
   */
  armConsent(hooks: ConsentHooks): () => void {
    if (this.#consent !== null) throw new FleetError('auth', `a consent for server "${this.#name}" is already under way`);
    this.#consent = hooks;
    this.#heldVerifier = null;
    return () => {
      if (this.#consent === hooks) this.#consent = null;
    };
  }

  /** The consent of this server pending in the fleet (read afresh), unless none is or it timed out. */
  async sharedConsent(): Promise<SharedConsent | null> {
    const { url, auth } = this.#config;
    return liveConsent(await this.#credentials.load(this.#name, url, auth.client_id), this.#now());
  }

  /**
   * Records the consent just prepared (its URL, `state` and held verifier) as the one pending fleet-wide, in one
   * locked change: unless another worker recorded one first that has not timed out, which is then answered instead
   * (ours is dropped, its verifier never stored). Null when ours was recorded.
   */
  async recordConsent(authorizationUrl: string, state: string, until: number): Promise<SharedConsent | null> {
    const verifier = this.#heldVerifier;
    if (verifier === null) throw new FleetError('auth', 'no PKCE verifier: no consent was started');
    const { url, auth } = this.#config;
    const now = this.#now();
    const { record, other } = await this.#credentials.lockForRefresh<{ record: CredentialsRecord; other: SharedConsent | null }>(this.#name, url, auth.client_id, async (current) => {
      const other = liveConsent(current, now);
      if (other !== null) return { record: null, result: { record: current, other } };
      const next: CredentialsRecord = {
        ...current,
        code_verifier: verifier,
        consent: { authorization_url: authorizationUrl, state_hash: stateHashOf(state), until },
      };
      return { record: next, result: { record: next, other: null } };
    });
    this.#heldVerifier = null;
    this.#adopt(record);
    return other;
  }

  /**
   * Forgets the pending consent of `state` (answered, cancelled or timed out); one recorded since stays. `error`:
   * it ended without tokens, and why; the other workers waiting on it are told, so they stop waiting.
   */
  async endConsent(state: string, error?: string): Promise<void> {
    const hash = stateHashOf(state);
    const { url, auth } = this.#config;
    const { record, ended } = await this.#credentials.lockForRefresh(this.#name, url, auth.client_id, async (current) => {
      if (current.consent?.state_hash !== hash) return { record: null, result: { record: current, ended: false } };
      const next = { ...current, consent: null };
      return { record: next, result: { record: next, ended: true } };
    });
    this.#adopt(record);
    // Tokens stored cleared it already: only a consent that ended without them is told.
    if (ended && error !== undefined) await this.#credentials.tellConsentEnded?.(this.#name, hash, error);
  }

  /**
   * Why this provider's last refresh could not reach the authorization
   * server (`unreachable`: nobody needs to consent); null when it got an
   * answer, or none was tried.
   */
  get away(): AuthorizationServerAwayError | null {
    return this.#away;
  }

  /** Whether a connect must refresh the stored token first: it has a refresh token and is (nearly) expired. */
  needsRefresh(): boolean {
    const tokens = this.#record.tokens;
    return tokens !== null && tokens.refresh_token !== undefined && this.#refreshDue(tokens);
  }

  /**
   * Refreshes the access token when it is due, holding the store's lock of
   * these credentials (fleet-wide with the database): inside it the stored
   * tokens are read again, and when they are not due — another worker (or
   * another provider of this process) refreshed them, maybe before this
   * provider was made — those are taken and the token endpoint is not
   * called. Otherwise the refresh is made and its tokens — a rotated refresh
   * token among them — are committed before the lock is released, and only
   * then used. Concurrent callers share one attempt. A rejected refresh
   * token (`invalid_grant`), or one issued by another authorization server
   * than the one the refresh would go to (never sent there), is dropped and
   * reported to the `keepFresh` listeners as a ConsentRequiredError; it never
   * opens a consent.
   */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#refreshLocked(false).finally(() => (this.#refreshing = null));
    return this.#refreshing;
  }

  /**
   * As `refresh`, but also when the stored tokens are not due: the server
   * refused the access token this provider holds. Tokens another worker
   * stored since are still taken instead.
   */
  #refreshRefused(): Promise<void> {
    this.#refreshingRefused ??= this.#refreshLocked(true).finally(() => (this.#refreshingRefused = null));
    return this.#refreshingRefused;
  }

  /**
   * The SDK refreshing by itself (its `auth()` after a 401, or for a scope
   * step-up) with `presented`: sdk-refresh.ts hands its token request here, so
   * it goes through the same lock. Answers with the tokens to use: those of a
   * refresh made now, or newer ones already held.
   */
  async refreshFor(presented: string): Promise<OAuthTokens> {
    if (this.#record.tokens?.refresh_token === presented) await this.#refreshRefused();
    const tokens = toSdkTokens(this.#record.tokens, this.#now());
    if (tokens === undefined) throw new ConsentRequiredError(this.#name, 'no usable token');
    return tokens;
  }

  /**
   * The MCP server refused the access token `presented` (a 401): resolves
   * with the access token to use instead. When the token held now is another
   * one, this or another request (or worker) replaced it already, and that
   * one is used; otherwise one locked refresh, shared by every request the
   * same token was refused for, which takes tokens another worker stored
   * meanwhile instead of refreshing again. Rejects when only a consent helps.
   */
  async replaceRefused(presented: string): Promise<string | undefined> {
    if (this.#record.tokens?.access_token === presented) await this.#refreshRefused();
    return this.#record.tokens?.access_token;
  }

  /**
   * While the server is ready: refreshes in the background before expiry, and
   * calls `onLost` when the server needs consent again. Returns the stop function.
   */
  keepFresh(onLost: (error: FleetError) => void): () => void {
    this.#lostListeners.add(onLost);
    this.#schedule();
    return () => {
      this.#lostListeners.delete(onLost);
      if (this.#lostListeners.size === 0) clearTimeout(this.#timer);
    };
  }

  async #refreshLocked(refused: boolean): Promise<void> {
    const held = this.#record.tokens;
    // Made ready before the lock: each may store something (the discovery, a first DPoP key), which takes the lock itself.
    let prepared: Prepared | undefined;
    if (held?.refresh_token !== undefined) {
      const discovery = await this.discoveryState().catch((err: unknown) => {
        if (isAuthorizationServerAway(err)) this.#noteAway(err, refused);
        throw err;
      });
      const session = await this.dpop();
      const key = this.#record.dpop_key;
      prepared = { discovery, dpop: session === undefined || key === null ? undefined : { key, session } };
    }
    const { url, auth } = this.#config;
    const kept = unsavedOf(this.#credentials);
    const before = kept.get(this.#name);
    /** What the authorization server answered inside the lock, and the stored tokens it replaces. */
    let answered: { record: CredentialsRecord; from: StoredTokens | null } | null = null;
    let outcome: RefreshOutcome;
    try {
      outcome = await this.#credentials.lockForRefresh(this.#name, url, auth.client_id, async (stored) => {
        // Unsaved tokens first: the refresh starts from them, and whatever this commits stores them.
        const { record: current, write } = withUnsaved(stored, before);
        const change = await this.#refreshHolding(current, held, prepared, refused);
        if (change.record !== null && change.result.lost === null && !sameTokens(change.record.tokens, current.tokens)) {
          answered = { record: change.record, from: stored.tokens };
        }
        if (change.record === null && write) return { record: current, result: { record: current, lost: null } };
        return change;
      });
    } catch (err) {
      if (isAuthorizationServerAway(err)) this.#noteAway(err, refused);
      if (answered === null) throw err;
      // Received but not stored: the refresh token was rotated, so these are the tokens to use until they are stored.
      this.#keepUnsaved(answered);
      return;
    }
    if (kept.get(this.#name) === before) kept.delete(this.#name);
    this.#away = null;
    if (outcome.record !== null) {
      this.#adopt(outcome.record);
      // A step-up that ends in new tokens is over.
      if (outcome.record.tokens !== null) this.#steppingUpTo = undefined;
    }
    if (outcome.lost !== null) {
      const error = new ConsentRequiredError(this.#name, outcome.lost);
      this.#reportLost(error);
      throw error;
    }
  }

  /**
   * The refresh itself, holding the lock, given the record as stored now.
   * Writes nothing (the lock is not re-entrant): what is to be stored is the
   * record it returns, committed by the store before the lock is released.
   */
  async #refreshHolding(
    current: CredentialsRecord,
    held: StoredTokens | null,
    prepared: Prepared | undefined,
    refused: boolean,
  ): Promise<LockedChange<RefreshOutcome>> {
    this.#adopt(current);
    const tokens = current.tokens;
    // Not due: refreshed elsewhere since this provider read its tokens (those are the ones to use), or,
    // unless the server refused the ones held, stored by another worker before this provider was made.
    if (tokens !== null && !this.#refreshDue(tokens) && (!refused || !sameTokens(tokens, held))) {
      return { record: null, result: { record: null, lost: null } };
    }
    if (tokens?.refresh_token === undefined) throw new ConsentRequiredError(this.#name, 'no refresh token');
    const discovery = (current.discovery as unknown as OAuthDiscoveryState | null) ?? prepared?.discovery;
    if (discovery === undefined) throw new ConsentRequiredError(this.#name, 'no authorization server is known for the refresh');
    const issuer = issuerOf(discovery);
    const unusable = (reason: string): LockedChange<RefreshOutcome> => {
      const record = { ...current, tokens: null };
      return { record, result: { record, lost: reason } };
    };
    // As the SDK's auth(): a refresh token issued by another authorization server is never sent to this one.
    if (tokens.issuer !== undefined && !sameIssuer(tokens.issuer, issuer)) {
      return unusable(`the stored tokens were issued by ${tokens.issuer}, not ${issuer}`);
    }
    const client = this.clientInformation({ issuer });
    if (client === undefined) throw new ConsentRequiredError(this.#name, 'the client is not registered');
    // As the SDK's auth(): the resource indicator the metadata names, verbatim.
    const selected = await selectResourceURL(this.#config.url, this, discovery.resourceMetadata);
    const resource = selected && discovery.resourceMetadata ? discovery.resourceMetadata.resource : selected;
    const dpop = await dpopSessionFor(current.dpop_key, prepared?.dpop, this.#config.auth.dpop);
    let fresh: OAuthTokens;
    try {
      fresh = await refreshAuthorization(discovery.authorizationServerUrl, {
        metadata: discovery.authorizationServerMetadata,
        clientInformation: client,
        refreshToken: tokens.refresh_token,
        resource,
        dpop,
        fetchFn: fetchNotingAway(this.#config.url, boundedFetch),
      });
    } catch (err) {
      if (err instanceof OAuthError && REFRESH_REFUSALS.has(err.code)) {
        countRefresh(this.#name, 'refused');
        return unusable(`the authorization server rejected the refresh (${err.code})`);
      }
      countRefresh(this.#name, 'failed');
      throw err;
    }
    countRefresh(this.#name, 'refreshed');
    const record: CredentialsRecord = {
      ...current,
      discovery: current.discovery ?? (discovery as unknown as CredentialsRecord['discovery']),
      tokens: storedTokens({ ...fresh, issuer }, this.#now()),
    };
    return { record, result: { record, lost: null } };
  }

  /** Keeps tokens a refresh received but could not store, uses them, and tries storing them again. */
  #keepUnsaved({ record, from }: { record: CredentialsRecord; from: StoredTokens | null }): void {
    const kept = unsavedOf(this.#credentials);
    clearTimeout(kept.get(this.#name)?.timer);
    const entry: Unsaved = {
      tokens: record.tokens!,
      discovery: record.discovery,
      from,
      serverUrl: this.#config.url,
      clientId: this.#config.auth.client_id,
      attempt: 0,
      timer: undefined,
      storing: null,
    };
    kept.set(this.#name, entry);
    this.#away = null;
    this.#steppingUpTo = undefined;
    this.#adopt(record);
    entry.timer = setTimeout(() => void storeUnsaved(this.#credentials, this.#name), UNSAVED_RETRY_MS);
    entry.timer.unref();
  }

  /** The issuer of the authorization server discovery last named; undefined before any discovery. */
  #discoveredIssuer(): string | undefined {
    const discovery = this.#record.discovery as unknown as OAuthDiscoveryState | null;
    return discovery === null ? undefined : issuerOf(discovery);
  }

  /**
   * Writes a change of the record: `change` is applied to the record as
   * stored now, under the store's lock, so fields this provider did not
   * change keep what other workers stored; the result is adopted here.
   */
  async #change(change: (current: CredentialsRecord) => CredentialsRecord): Promise<void> {
    const { url, auth } = this.#config;
    this.#adopt(await changeCredentials(this.#credentials, this.#name, url, auth.client_id, change));
  }

  /** Takes `record` (as stored) as this provider's: a replaced DPoP key drops its session, new tokens their schedule. */
  #adopt(stored: CredentialsRecord): void {
    const before = this.#record;
    const record = withUnsaved(stored, unsavedOf(this.#credentials).get(this.#name)).record;
    this.#record = record;
    if (before.dpop_key !== null && (record.dpop_key === null || !sameDpopKey(before.dpop_key, record.dpop_key))) {
      this.#dpop = undefined;
    }
    if (!sameTokens(before.tokens, record.tokens) || before.tokens?.expires_at !== record.tokens?.expires_at) this.#schedule();
  }

  #refreshDue(tokens: StoredTokens): boolean {
    return tokens.expires_at !== undefined && this.#now() >= tokens.expires_at - refreshAhead(tokens);
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    const tokens = this.#record.tokens;
    if (this.#lostListeners.size === 0 || tokens?.expires_at === undefined || tokens.refresh_token === undefined) return;
    const delay = Math.max(0, tokens.expires_at - refreshAhead(tokens) - this.#now());
    this.#timer = setTimeout(() => {
      // The same locked refresh as any other. A rejected grant was reported to the listeners;
      // anything else (network, 5xx, the database away) is tried again.
      this.refresh().catch((err: unknown) => {
        if (err instanceof ConsentRequiredError || this.#lostListeners.size === 0) return;
        // Tried again by the expiry at the latest, so a token that runs out meanwhile is reported then.
        const untilExpiry = tokens.expires_at! - this.#now();
        this.#timer = setTimeout(() => this.#schedule(), untilExpiry > 0 ? Math.min(REFRESH_RETRY_MS, untilExpiry) : REFRESH_RETRY_MS);
        this.#timer.unref();
      });
    }, delay);
    this.#timer.unref();
  }

  /**
   * A refresh found the authorization server away. When the access token held
   * can no longer be used — expired, or refused by the server — a ready
   * connection is told: it is as good as lost until the server is back.
   */
  #noteAway(error: AuthorizationServerAwayError, refused: boolean): void {
    this.#away = error;
    const tokens = this.#record.tokens;
    const expired = tokens?.expires_at !== undefined && this.#now() >= tokens.expires_at;
    if (refused || expired) this.#reportLost(error);
  }

  #reportLost(error: FleetError): void {
    for (const listener of [...this.#lostListeners]) listener(error);
  }
}

/** Whether a kept client is a client ID metadata document's URL rather than a registration (which names its redirect URIs). */
function isUrlClientId(client: StoredClient): boolean {
  return !Array.isArray(client.redirect_uris) && isHttpsUrl(client.client_id);
}

/** Tokens as stored: `expires_in` made an absolute expiry, counted from `now`. */
function storedTokens(tokens: OAuthTokens, now: number): StoredTokens {
  const { expires_in: lifetime, ...rest } = tokens;
  const stored: StoredTokens = { ...rest, obtained_at: now };
  if (lifetime !== undefined) stored.expires_at = now + lifetime * 1000;
  return stored;
}

/** The record's pending consent, unless it timed out by `now`. */
function liveConsent(record: CredentialsRecord, now: number): SharedConsent | null {
  const consent = record.consent;
  return consent === null || consent.until <= now ? null : { url: consent.authorization_url, until: consent.until };
}

/** Whether two token sets are the same grant state: same access and refresh token. */
function sameTokens(a: StoredTokens | null, b: StoredTokens | null): boolean {
  if (a === null || b === null) return a === b;
  return a.access_token === b.access_token && a.refresh_token === b.refresh_token;
}

/** Whether two stored DPoP keys are one key (compared by value: a database may store the JWK's members in another order). */
function sameDpopKey(a: StoredDpopKey, b: StoredDpopKey): boolean {
  return a.private_jwk.x === b.private_jwk.x && a.private_jwk.y === b.private_jwk.y && a.private_jwk.d === b.private_jwk.d;
}

/**
 * The DPoP session for a refresh of tokens bound to `stored` (the key as
 * stored now): the one readied before the lock when it signs with that key,
 * else one made for it here (another worker replaced the key meanwhile).
 * Nothing is stored: a refresh holds the lock. None without `auth.dpop` or a key.
 */
async function dpopSessionFor(
  stored: StoredDpopKey | null,
  prepared: Prepared['dpop'],
  enabled: boolean,
): Promise<DpopSession | undefined> {
  if (!enabled || stored === null) return undefined;
  if (prepared !== undefined && sameDpopKey(prepared.key, stored)) return prepared.session;
  return DpopSession.create({ keyPair: await dpopKeyPairOf(stored) });
}

/** fetch bounded by REFRESH_TIMEOUT_MS, for the refresh made holding the lock and the discovery it may need first. */
function boundedFetch(url: string | URL, init?: RequestInit): Promise<Response> {
  const timeout = AbortSignal.timeout(REFRESH_TIMEOUT_MS);
  return fetch(url, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout });
}

function refreshAhead(tokens: StoredTokens): number {
  const lifetime = tokens.expires_at! - (tokens.obtained_at ?? tokens.expires_at!);
  return Math.min(MAX_REFRESH_AHEAD_MS, lifetime / 2);
}

/** Stored tokens as the SDK wants them: `expires_in` counted from now. */
function toSdkTokens(stored: StoredTokens | null, now: number): OAuthTokens | undefined {
  if (stored === null) return undefined;
  const { expires_at: expiresAt, obtained_at: _obtained, ...rest } = stored;
  const tokens: OAuthTokens = { ...rest };
  if (expiresAt !== undefined) tokens.expires_in = Math.max(0, Math.floor((expiresAt - now) / 1000));
  return tokens;
}
