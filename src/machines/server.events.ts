import type { ServerConfig, ToolFilter } from '../config/index.js';
import type { FleetError } from '../errors.js';
import type { LiveConnection } from '../connection/index.js';

/** Events a server actor accepts. Management and the registry send the `server.*` ones; invoked actors the rest. */
export type ServerMachineEvent =
  /** The registry's startup queue reached this server: connect now (with the config it re-read). */
  | { type: 'server.connect'; config?: ServerConfig }
  /**
   * `config`: the entry with `enabled: true` (management's or a hand edit's); kept for the view.
   * `queued`: wait in the startup queue rather than connect at once (a hand edit during startup).
   */
  | { type: 'server.enable'; config?: ServerConfig; queued?: boolean }
  /** `config`: the entry with `enabled: false` (management's, a hand edit's or the registry's re-read). */
  | { type: 'server.disable'; config?: ServerConfig }
  | { type: 'server.restart' }
  /** A new config: the server goes through `pending` again with it (or to `disabled`); `queued` as for enable. */
  | { type: 'server.configure'; config: ServerConfig; queued?: boolean }
  /** Only the tool filter or the result bound changed: applied without reconnecting. */
  | { type: 'server.retool'; config: ServerConfig }
  | { type: 'server.stop' }
  /** One of an `on_demand` server's tools was called or loaded through search: start it if it waits. */
  | { type: 'server.demand' }
  /** A call to the ready server began or ended (sent only for `on_demand` servers: they stop when idle). */
  | { type: 'call.started' }
  | { type: 'call.finished' }
  /** An `on_demand` server had no call for `idle_timeout_seconds`: back to waiting. */
  | { type: 'server.idle' }
  /** The live connection ended without being asked to (crash, exit, network, token lost). */
  | { type: 'connection.closed'; error: FleetError }
  /** The catalog session swapped in a new tool listing: register the tools again. */
  | { type: 'catalog.tools_changed' }
  /** The user started OAuth consent for a server that needs it. */
  | { type: 'auth.begin' }
  /**
   * The invoked consent knows where the user must go. `joined`: that is the consent another worker of the
   * fleet began and still waits on (`--public-url`), not one begun here.
   */
  | { type: 'auth.url'; url: string; joined?: boolean }
  /** The invoked consent stored the tokens. */
  | { type: 'auth.completed' }
  /** The invoked consent was refused, timed out or could not start. */
  | { type: 'auth.failed'; error: FleetError }
  /** A consent's answer came back to this worker's public callback and did not authorize (refused, or the code refused). */
  | { type: 'auth.refused'; error: FleetError };

/** Events a server actor emits for the host to act on. */
export type ServerEmitted =
  | { type: 'tools.register'; server: string; live: LiveConnection; filter: ToolFilter }
  | { type: 'tools.unregister'; server: string }
  /** A consent failed: why, with its kind (the view says `needs_reauth` all the same). */
  | { type: 'consent.failed'; server: string; error: FleetError };
