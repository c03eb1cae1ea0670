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
import { forwardServerLog, type ServerLog } from '../connection/capabilities/logging.js';
import type { PromptRegistry } from '../connection/index.js';
import type { CatalogFreshness, CatalogHandle } from './freshness.js';
import { listenForChanges } from './list-changes.js';
import { startCatalogSync, type CatalogChange, type CatalogKind, type CatalogSync, type CatalogSyncListener, type Offer } from './sync.js';
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
  /** Every configured server's secrets, redacted from what this server logs as its own are. */
  fleetSecrets?: () => readonly string[];
}

/** Starts the session; returns the function that ends it (no more listings, logs or prompt commands). */
export function startServerSession(options: ServerSessionOptions): () => void {
  const session = new ServerSession(options);
  return () => session.stop();
}

/**
 * One ready connection's session. It is its sync's listener and its readers'
 * handle itself, so a host keeps one object per ready server rather than a
 * closure per callback.
 */
class ServerSession implements CatalogSyncListener, CatalogHandle {
  private readonly secrets: string[];
  private readonly log: ServerLog;
  private readonly sync: CatalogSync;
  private readonly stopListening: () => void;

  constructor(private readonly options: ServerSessionOptions) {
    const { server, config, live, append, logger } = options;
    const client = live.connection.client;
    const secrets = secretValues(config);
    this.secrets = secrets;
    const timeoutMs = config.timeout_seconds * 1000;
    this.log = forwardServerLog({
      server,
      client,
      level: config.log_level,
      timeoutMs,
      secrets,
      ...(options.fleetSecrets && { fleetSecrets: options.fleetSecrets }),
      logger,
      onLog: (entry) => append({ type: 'server.log', server, ...entry }),
    });
    this.sync = startCatalogSync({
      connection: live.connection,
      timeoutMs,
      listener: this,
      maxAgeMs: config.catalog_max_age_seconds == null ? null : config.catalog_max_age_seconds * 1000,
    });
    options.catalogs.attach(server, this);
    this.stopListening = listenForChanges(client, (error) =>
      logger.warn(`server ${server}: cannot listen for catalog changes: ${redact(error.message, secrets)}`),
    );
  }

  stop(): void {
    const { server, live, prompts } = this.options;
    this.options.catalogs.detach(server, this);
    this.stopListening();
    this.sync.stop();
    this.log.stop();
    // The connection owns its prompt commands: a later connection of the same server replaces them.
    prompts.remove(server, live);
  }

  onTools(): void {
    this.options.onToolsChanged();
  }

  onOffer(offer: Offer, kind: 'resources' | 'prompts'): void {
    const { server, config, live, append, prompts } = this.options;
    // The sync hands over the whole offer; journal only the kind just listed
    // (the other may not be listed yet: its empty list is no listing).
    if (kind === 'resources') {
      append(resourcesListed(server, offer.resources, offer.resourceTemplates));
      return;
    }
    // Commands first: whoever the journal tells of the listing finds them.
    const client = live.connection.client;
    prompts.set(server, live, offer.prompts, { client, timeoutMs: config.call_timeout_seconds * 1000, secrets: this.secrets });
    append(promptsListed(server, offer.prompts));
  }

  onChange(change: CatalogChange): void {
    this.options.append({ type: 'catalog.changed', server: this.options.server, ...change });
  }

  onError(kind: CatalogKind, error: Error): void {
    this.options.logger.warn(`server ${this.options.server}: cannot list ${kind}: ${redact(error.message, this.secrets)}`);
  }

  due(): boolean {
    return this.sync.due();
  }

  freshen(): Promise<void> {
    return this.sync.freshen();
  }

  idle(): Promise<void> {
    return this.sync.idle();
  }

  async refresh(): Promise<Offer> {
    try {
      await this.sync.refresh();
    } catch (error) {
      throw listingFailure(this.options.server, this.options.config, error, this.secrets);
    }
    return this.sync.offer();
  }
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
