/**
 * What the host answers when a server asks the client something: sampling,
 * elicitation, roots. One instance per host; `setup(server)` is the
 * `ConnectOptions.setupClient` of each connection, run before it connects
 * (capabilities are fixed at initialize).
 */
import { ProtocolError, ProtocolErrorCode, type Client, type InputRequest, type InputResponse } from '@modelcontextprotocol/client';
import type { HostModel } from '../../agent/index.js';
import { elicitationAnswerer, installElicitation, type ElicitationHandler } from './elicitation.js';
import { createRootsService, type Root, type RootsService } from './roots.js';
import { installSampling, noHostModelError, refuseSampling, samplingAnswerer } from './sampling.js';

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
  /**
   * Answers one request server `server` embedded in a task's input requests
   * (2026-07-28), with the same handlers as a 2025 server's requests.
   */
  answer(server: string, request: InputRequest, signal: AbortSignal): Promise<InputResponse>;
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
    async answer(server, request, signal) {
      switch (request.method) {
        case 'elicitation/create':
          return elicitationAnswerer(server, options.elicitation)(request.params, signal);
        case 'sampling/createMessage':
          if (options.hostModel === undefined) throw noHostModelError();
          return samplingAnswerer(options.hostModel)(request.params, signal);
        case 'roots/list':
          if (roots === null) throw new ProtocolError(ProtocolErrorCode.MethodNotFound, 'roots are not available: the host declared none');
          return { roots: roots.list() };
      }
    },
  };
}
