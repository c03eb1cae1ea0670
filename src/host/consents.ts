/**
 * The host's consents: a shared server's (the admin's, one grant for the
 * server) and a `per_user` server's (each principal's own grant, begun by them
 * and bound to their browser), their callbacks, and forgetting grants. Each
 * consent is journaled with whose it is.
 */
import type { McpHost } from './api.js';
import type { Management } from './management.js';
import type { Sessions } from './sessions.js';
import { principalOf } from './access.js';
import { AuthNotApplicableError, CallbackRefusedError, type ServerAuth } from '../auth/server-auth.js';
import { isOAuthConfig } from '../auth/provider.js';
import type { ServerActorRef } from '../machines/registry.machine.js';
import { ADMIN_PRINCIPAL } from '../users/index.js';
import type { JournalEventInput } from '../journal/index.js';

export interface ConsentsDeps {
  auth: ServerAuth;
  management: Pick<Management, 'beginAuth'>;
  sessions: Pick<Sessions, 'end'>;
  append(event: JournalEventInput): void;
  current(name: string): ServerActorRef | undefined;
  servers(): Record<string, ServerActorRef>;
  /** Throws unless the host is running. */
  running(): unknown;
  /** A shared server's tokens arrived: the host machine decides what follows. */
  tokensStored(server: string): void;
}

type Consents = Pick<McpHost, 'beginAuth' | 'consentBindingKey' | 'consentTtlMs' | 'forgetGrants' | 'answerConsentCallback'>;

export function createConsents(deps: ConsentsDeps): Consents {
  // Taken apart, not kept: the deps object itself dies once the host is made.
  const { auth, management, sessions, append, current, servers, running, tokensStored } = deps;
  return {
    async beginAuth(name, authOptions) {
      running();
      const principal = principalOf(authOptions?.principal)?.id ?? ADMIN_PRINCIPAL;
      const config = current(name)?.getSnapshot().context.config;
      // A per_user server has no grant of its own: each principal begins theirs, bound to their browser.
      if (config?.scope === 'per_user') {
        if (!isOAuthConfig(config)) throw new AuthNotApplicableError(name, 'not_oauth', `server "${name}" does not use OAuth`);
        if (authOptions?.browserBinding === undefined) {
          throw new AuthNotApplicableError(
            name,
            'needs_browser',
            `server "${name}" is per_user: each user connects their own account from the page (POST /api/mcp/servers/${name}/auth), which binds the consent to their browser`,
          );
        }
        const begun = await auth.beginUserConsent(name, principal, config, authOptions.browserBinding);
        append({ type: 'consent.begun', server: name, principal });
        return begun;
      }
      const { begun, ...answer } = await management.beginAuth(name);
      // Once per consent: asked again while it waits, the same URL is answered and nothing new is journaled.
      if (begun) append({ type: 'consent.begun', server: name, principal });
      return answer;
    },

    consentBindingKey: () => auth.bindingKey(),
    consentTtlMs: () => auth.consentTtlMs,

    async forgetGrants(of) {
      const principal = of.principal === undefined ? undefined : (principalOf(of.principal)?.id ?? ADMIN_PRINCIPAL);
      await auth.forgetGrants({ ...(of.server !== undefined && { server: of.server }), ...(principal !== undefined && { principal }) });
      // A session connected with a forgotten grant ends: the next call finds no grant.
      if (of.server !== undefined) await sessions.end(of.server, principal);
      else if (principal !== undefined) await Promise.all(Object.keys(servers()).map((server) => sessions.end(server, principal)));
    },

    async answerConsentCallback(query, browser) {
      running();
      let answered;
      try {
        answered = await auth.answerCallback(query, (candidate) => current(candidate)?.getSnapshot().context.config, browser);
      } catch (error) {
        // An answer to a pending consent that did not authorize: recorded where the callback's page sends the user.
        if (error instanceof CallbackRefusedError && error.failed !== undefined) {
          const { server, principal, error: why } = error.failed;
          append({ type: 'consent.failed', server, principal: principal ?? ADMIN_PRINCIPAL, error: why.message });
          if (principal === undefined) current(server)?.send({ type: 'auth.refused', error: why });
        }
        throw error;
      }
      if (answered.principal === undefined) {
        tokensStored(answered.server);
      } else {
        append({ type: 'consent.completed', server: answered.server, principal: answered.principal });
        // A session of theirs still holding the grant this one replaced connects again with the new one.
        await sessions.end(answered.server, answered.principal);
      }
      return answered.server;
    },
  };
}
