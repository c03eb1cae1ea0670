/**
 * What runs beside a ready server's live connection, from its entry into
 * `ready` until its exit (the server machine invokes it there): the catalog
 * sync (tools, resources, prompts), the prompt slash commands, and the
 * server's log. Listings of resources and prompts go into the journal, where
 * the catalog view is folded from; a new tool listing asks the machine to
 * register the tools again.
 */
import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { describeRemoteFailure } from '../connection/remote-transport.js';
import { forwardServerLog } from '../connection/capabilities/logging.js';
import type { PromptRegistry } from '../connection/index.js';
import type { CatalogFreshness } from './freshness.js';
import { listenForChanges } from './list-changes.js';
import { startCatalogSync } from './sync.js';
import { redact, secretValues } from '../config/masking.js';
import type { ServerConfig } from '../config/index.js';
import { promptsListed, resourcesListed, type JournalEventInput } from '../journal/events.js';
import type { LiveConnection } from '../connection/index.js';
import { FleetError, type ErrorKind } from '../errors.js';

export interface ServerSessionOptions {
  server: string;
  config: ServerConfig;
  live: LiveConnection;
  /** Records what the session learns (listings, changes, server log). */
  append(event: JournalEventInput): void;
  prompts: PromptRegistry;
  logger: { info(message: string): void; warn(message: string): void };
  /** The tool listing changed (`live.connection.allTools`): the tools must be registered again. */
  onToolsChanged(): void;
  /** Where readers find this server's sync while the session runs (expired listings, forced refreshes). */
  catalogs: CatalogFreshness;
}

/** Starts the session; returns the function that ends it (no more listings, logs or prompt commands). */
export function startServerSession(options: ServerSessionOptions): () => void {
  const { server, config, live, append, prompts, logger } = options;
  const client = live.connection.client;
  const secrets = secretValues(config);
  const timeoutMs = config.timeout_seconds * 1000;
  // The connection owns its prompt commands: a later connection of the same server replaces them.
  const owner = live;

  const stopLog = forwardServerLog({
    server,
    client,
    level: config.log_level,
    timeoutMs,
    secrets,
    logger,
    onLog: (entry) => append({ type: 'server.log', server, ...entry }),
  });
  const sync = startCatalogSync({
    connection: live.connection,
    timeoutMs,
    onTools: options.onToolsChanged,
    onOffer(offer, kind) {
      // The sync hands over the whole offer; journal only the kind just listed
      // (the other may not be listed yet: its empty list is no listing).
      if (kind === 'resources') {
        append(resourcesListed(server, offer.resources, offer.resourceTemplates));
        return;
      }
      // Commands first: whoever the journal tells of the listing finds them.
      prompts.set(server, owner, offer.prompts, { client, timeoutMs: config.call_timeout_seconds * 1000, secrets });
      append(promptsListed(server, offer.prompts));
    },
    onChange: (change) => append({ type: 'catalog.changed', server, ...change }),
    onError: (kind, error) => logger.warn(`server ${server}: cannot list ${kind}: ${redact(error.message, secrets)}`),
    maxAgeMs: config.catalog_max_age_seconds == null ? null : config.catalog_max_age_seconds * 1000,
  });
  const detach = options.catalogs.attach(server, {
    due: () => sync.due(),
    freshen: () => sync.freshen(),
    async refresh() {
      try {
        await sync.refresh();
      } catch (error) {
        throw listingFailure(server, config, error, secrets);
      }
      return sync.offer();
    },
  });

  const stopListening = listenForChanges(client, (error) =>
    logger.warn(`server ${server}: cannot listen for catalog changes: ${redact(error.message, secrets)}`),
  );

  return function stopServerSession() {
    detach();
    stopListening();
    sync.stop();
    stopLog();
    prompts.remove(server, owner);
  };
}

/** A forced listing that failed, as one secret-free line with its kind. */
function listingFailure(server: string, config: ServerConfig, error: unknown, secrets: string[]): FleetError {
  const fail = (kind: ErrorKind, message: string) =>
    new FleetError(kind, `server ${server}: cannot list its catalog: ${redact(message, secrets)}`, { cause: error });
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) return fail('timeout', error.message);
  if (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) return fail('transport_closed', error.message);
  // A remote server's failure is worded and kinded as a connect's is (refused, 5xx, credentials).
  const remote = config.type === 'remote' ? describeRemoteFailure(error, config.url) : null;
  if (remote !== null) return fail(remote[0], remote[1]);
  return fail('protocol', error instanceof Error ? error.message : String(error));
}
