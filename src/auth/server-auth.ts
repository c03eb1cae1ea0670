/**
 * The host's side of OAuth, as the server machine's actors use it: a provider
 * for every connect of an OAuth server, whether a connect needs a refresh
 * first, the refresh itself, and a consent run as an invoked actor (started
 * when the user begins it, cancelled when the server leaves `authenticating`).
 * Every provider it makes reads and writes one CredentialsStore: the state
 * dir's files, or the database the fleet shares.
 */
import type { ServerConfig } from '../config/index.js';
import { FleetError } from '../errors.js';
import { publicClientMetadataUrl } from './client-metadata-document.js';
import { beginConsent, redeemAnswer, type ConsentSession } from './consent.js';
import { memoryPendingConsents, type PendingConsents } from './pending-consents.js';
import {
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

/** Refused: the server does not use OAuth, or is not waiting for consent. */
export class AuthNotApplicableError extends Error {
  override readonly name = 'AuthNotApplicableError';
  constructor(
    readonly server: string,
    readonly code: 'not_oauth' | 'not_needed',
    message: string,
  ) {
    super(message);
  }
}

/** What a running consent tells its server actor. */
export type ConsentReport =
  | { type: 'auth.url'; url: string }
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
  answerCallback(query: URLSearchParams, configOf: (name: string) => ServerConfig | undefined): Promise<string>;
}

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
            pending: { consents: pendingConsents, server: name, worker: options.workerId ?? `pid-${process.pid}` },
          });
          // Left `authenticating` while the consent was being prepared: nobody waits for it.
          if (cancelled) return begun.cancel();
          session = begun;
          report({ type: 'auth.url', url: begun.authorizationUrl });
          await begun.completed;
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

    forget: (name) => credentials.delete(name),

    async answerCallback(query, configOf) {
      const state = query.get('state');
      const name = state === null || state === '' ? null : await pendingConsents.take(state);
      // Not an answer to a request of ours (no state, a wrong one, one already used): it changes nothing.
      if (name === null) throw new CallbackRefusedError(400, 'Refused: the state does not match a pending authorization request.');
      const config = configOf(name);
      if (config === undefined || !isOAuthConfig(config)) {
        throw new CallbackRefusedError(400, `Refused: server "${name}" no longer uses OAuth here.`);
      }
      const refusal = await redeemAnswer(await create(name, config), config, query);
      if (refusal !== null) throw new CallbackRefusedError(refusal.status, refusal.page);
      return name;
    },
  };
}
