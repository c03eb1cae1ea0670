/**
 * What the host answers when a server asks the client something: sampling,
 * elicitation, roots. One instance per host; `setup(server)` is the
 * `ConnectOptions.setupClient` of each connection, run before it connects
 * (capabilities are fixed at initialize).
 */
import type { Client } from '@modelcontextprotocol/client';
import type { HostModel } from '../agent/host-model.js';
import { installElicitation, type ElicitationHandler } from './elicitation.js';
import { createRootsService, type Root, type RootsService } from './roots.js';
import { installSampling, refuseSampling } from './sampling.js';

export interface ClientHandlerOptions {
  /** Answers `sampling/createMessage`; without it sampling is not declared and a request gets an error. */
  hostModel?: HostModel;
  /** Answers `elicitation/create`; without it every request is declined. */
  elicitation?: ElicitationHandler;
  /** Declares roots and serves this list; without it roots are not declared. */
  roots?: Root[];
  /** A roots change that could not be sent to a server (its connection was closing). */
  onNotifyError?: (error: Error) => void;
}

export interface ClientHandlers {
  /** The `setupClient` hook for a connection to server `server`. */
  setup(server: string): (client: Client) => void;
  /** The roots, or null when the host declared none. */
  readonly roots: RootsService | null;
}

export function createClientHandlers(options: ClientHandlerOptions): ClientHandlers {
  const roots = options.roots === undefined ? null : createRootsService(options.roots, options.onNotifyError ?? (() => {}));
  return {
    roots,
    setup(server) {
      return function setupClientHandlers(client) {
        if (options.hostModel) installSampling(client, options.hostModel);
        else refuseSampling(client);
        installElicitation(client, server, options.elicitation);
        roots?.install(client);
      };
    },
  };
}
