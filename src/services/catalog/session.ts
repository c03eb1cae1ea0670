/**
 * What runs beside a ready server's live connection, from its entry into
 * `ready` until its exit: the catalog sync (tools, resources, prompts), the
 * prompt slash commands, and the server's log. One per actor and connection.
 */
import { forwardServerLog } from '../capabilities/logging.js';
import type { PromptRegistry } from '../capabilities/prompts.js';
import { startCatalogSync, type Offer } from './sync.js';
import { redact, secretValues } from '../config/credentials.js';
import type { ServerConfig } from '../config/schema.js';
import type { Journal } from '../journal/journal.js';
import type { LiveConnection } from '../connection/live-connection.js';

export interface ServerSessionOptions {
  server: string;
  config: ServerConfig;
  live: LiveConnection;
  /** The server's actor: owns its prompt commands, so a replaced actor cannot drop its successor's. */
  owner: object;
  journal: Journal;
  prompts: PromptRegistry;
  logger: { info(message: string): void; warn(message: string): void };
  /** The tool listing changed (`live.connection.allTools`): register the server's tools again, in one step. */
  retool(): void;
}

export interface ServerSession {
  readonly live: LiveConnection;
  /** Resources (and templates) and prompts as last listed. */
  offer(): Offer;
  /** Ends the session: no more listings, logs or prompt commands of this connection. */
  stop(): void;
}

export function startServerSession(options: ServerSessionOptions): ServerSession {
  const { server, config, live, owner, journal, prompts, logger } = options;
  const client = live.connection.client;
  const secrets = secretValues(config);
  const timeoutMs = config.timeout_seconds * 1000;

  const stopLog = forwardServerLog({
    server,
    client,
    level: config.log_level,
    timeoutMs,
    secrets,
    logger,
    onLog: (entry) => journal.append({ type: 'server.log', server, ...entry }),
  });
  const sync = startCatalogSync({
    connection: live.connection,
    timeoutMs,
    onTools: options.retool,
    onOffer: (offer) =>
      prompts.set(server, owner, offer.prompts, { client, timeoutMs: config.call_timeout_seconds * 1000, secrets }),
    onChange: (change) => journal.append({ type: 'catalog.changed', server, ...change }),
    onError: (kind, error) => logger.warn(`server ${server}: cannot list ${kind}: ${redact(error.message, secrets)}`),
  });

  return {
    live,
    offer: sync.offer,
    stop() {
      sync.stop();
      stopLog();
      prompts.remove(server, owner);
    },
  };
}
