/**
 * The host's side of OAuth: a provider for every connect of an OAuth server,
 * and at most one consent per server actor, started by the user (`beginAuth`)
 * and cancelled as soon as the actor leaves `authenticating` (stop, restart,
 * remove, shutdown) or the consent times out.
 */
import type { ServerConfig } from '../config/schema.js';
import { FleetError } from '../support/errors.js';
import { beginConsent, type ConsentSession } from './consent.js';
import { credentialsPath, deleteCredentials } from './credentials-file.js';
import { createOAuthProvider, isOAuthConfig, type FleetOAuthProvider } from './provider.js';

/** What `beginAuth` answers (SPEC §6 `POST /api/mcp/servers/:name/auth`). */
export interface AuthBegun {
  authorization_url: string;
}

/** The events a consent sends to its server actor. */
export type ConsentEvent =
  | { type: 'auth.begin' }
  | { type: 'auth.completed' }
  | { type: 'auth.failed'; error: FleetError };

/** A server actor as a consent sees it. */
export interface AuthTarget {
  name: string;
  config: ServerConfig;
  /** Its top-level state now. */
  state(): string;
  send(event: ConsentEvent): void;
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

export interface ServerAuthOptions {
  stateDir: string;
  /** Bound on a consent (default: beginConsent's 10 minutes). */
  consentTimeoutMs?: number;
}

export interface ServerAuth {
  /** The provider for a connect of `config`; undefined when it does not use OAuth. */
  providerFor(name: string, config: ServerConfig): Promise<FleetOAuthProvider | undefined>;
  /** Starts (or returns the URL of) the consent of the actor `key`; `target` must be in `needs_reauth`. */
  begin(key: object, target: AuthTarget): Promise<AuthBegun>;
  /** The actor left `authenticating`: its consent, if any, ends. */
  left(key: object): void;
  /** Deletes the stored credentials of a removed server. */
  forget(name: string): Promise<void>;
}

export function createServerAuth(options: ServerAuthOptions): ServerAuth {
  const consents = new Map<object, ConsentSession>();
  const starting = new Map<object, Promise<AuthBegun>>();

  async function start(key: object, target: AuthTarget): Promise<AuthBegun> {
    const { name, config } = target;
    if (!isOAuthConfig(config)) throw new AuthNotApplicableError(name, 'not_oauth', `server "${name}" does not use OAuth`);
    const provider = await createOAuthProvider({ stateDir: options.stateDir, name, config });
    const session = await beginConsent(provider, config, { timeoutMs: options.consentTimeoutMs });
    // The actor may have moved on (restart, remove) while the consent was being prepared.
    if (target.state() !== 'needs_reauth') {
      session.cancel();
      throw new AuthNotApplicableError(name, 'not_needed', `server "${name}" is ${target.state()}: no consent needed`);
    }
    consents.set(key, session);
    target.send({ type: 'auth.begin' });
    // A consent cancelled because the actor moved on has nobody left to tell.
    const tell = (event: ConsentEvent) => target.state() === 'authenticating' && target.send(event);
    session.completed.then(
      () => tell({ type: 'auth.completed' }),
      (error: FleetError) => tell({ type: 'auth.failed', error }),
    );
    return { authorization_url: session.authorizationUrl };
  }

  return {
    async providerFor(name, config) {
      return isOAuthConfig(config) ? createOAuthProvider({ stateDir: options.stateDir, name, config }) : undefined;
    },

    begin(key, target) {
      const running = consents.get(key);
      if (running && target.state() === 'authenticating') return Promise.resolve({ authorization_url: running.authorizationUrl });
      const pending = starting.get(key);
      if (pending) return pending;
      if (!isOAuthConfig(target.config)) {
        return Promise.reject(new AuthNotApplicableError(target.name, 'not_oauth', `server "${target.name}" does not use OAuth`));
      }
      if (target.state() !== 'needs_reauth') {
        return Promise.reject(
          new AuthNotApplicableError(
            target.name,
            'not_needed',
            `server "${target.name}" is ${target.state()}: consent starts only from needs_reauth`,
          ),
        );
      }
      const begun = start(key, target).finally(() => starting.delete(key));
      starting.set(key, begun);
      return begun;
    },

    left(key) {
      const session = consents.get(key);
      if (!session) return;
      consents.delete(key);
      session.cancel('consent cancelled: the server left authenticating');
    },

    forget: (name) => deleteCredentials(credentialsPath(options.stateDir, name)),
  };
}
