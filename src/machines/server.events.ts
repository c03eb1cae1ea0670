import type { ServerConfig, ToolFilter } from '../services/config/schema.js';
import type { FleetError } from '../services/support/errors.js';
import type { LiveConnection } from '../services/connection/live-connection.js';

/** Events a server actor accepts. Management sends these; services send the rest. */
export type ServerEvent =
  /** The registry's startup queue reached this server: connect now (with the re-read config). */
  | { type: 'server.connect'; config?: ServerConfig }
  | { type: 'server.enable' }
  /** `config`: the entry the registry just re-read from the file (disabled there); kept for the view. */
  | { type: 'server.disable'; config?: ServerConfig }
  | { type: 'server.restart' }
  /** Only the tool filter changed: apply it without reconnecting. */
  | { type: 'server.retool'; config: ServerConfig }
  | { type: 'server.stop' }
  /** The live connection ended without being asked to (crash, exit, network). */
  | { type: 'connection.closed'; error: FleetError }
  /** The user started OAuth consent for a server that needs it. */
  | { type: 'auth.begin' }
  | { type: 'auth.completed' }
  | { type: 'auth.failed'; error: FleetError };

/** Events a server actor emits for the host to act on. */
export type ServerEmitted =
  | { type: 'tools.register'; server: string; live: LiveConnection; filter: ToolFilter }
  | { type: 'tools.unregister'; server: string }
  /** The actor no longer holds this connection: close it (the host tracks the closing). */
  | { type: 'connection.release'; server: string; live: LiveConnection };
