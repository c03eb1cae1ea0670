/**
 * What the host answers when a server asks the client something: sampling,
 * elicitation, roots. One instance per host; `setup(server)` is the
 * `ConnectOptions.setupClient` of each connection, run before it connects
 * (capabilities are fixed at initialize).
 */
import { answeredInTime } from '../input-rounds.js';
import { ProtocolError, ProtocolErrorCode, type Client, type InputRequest, type InputResponse } from '@modelcontextprotocol/client';
import type { HostModel } from '../../agent/index.js';
import { elicitationAnswerer, installElicitation, type ElicitationHandler } from './elicitation.js';
import { bindResponseHandlers } from '../sdk-internals.js';
import { createForwarding, type Forwarding } from './forwarding.js';
import { createRootsService, type Root, type RootsNotifyError, type RootsService } from './roots.js';
import { installSampling, noHostModelError, refuseSampling, samplingAnswerer } from './sampling.js';

export interface ClientHandlerOptions {
  /** Answers `sampling/createMessage`; without it sampling is not declared and a request gets an error. */
  hostModel?: HostModel;
  /** Declares sampling without a host model too, for the gateway clients it is forwarded to. */
  samplingForCallers?: boolean;
  /** Answers `elicitation/create`; without it every request is declined. */
  elicitation?: ElicitationHandler;
  /** Declares roots and serves this list; without it roots are not declared. */
  roots?: Root[];
  /** A roots change that could not be sent to a server (its connection was closing). */
  onNotifyError?: RootsNotifyError;
}

export interface ClientHandlers {
  /** The `setupClient` hook for a connection to server `server`. */
  setup(server: string): (client: Client) => void;
  /**
   * The `setupClient` hook for a principal's own connection to a `per_user` server: it
   * declares sampling, elicitation and roots for the gateway client whose call it serves;
   * any other request (the host's or an agent's call, none in flight) is refused, as the
   * host's model, forms and roots are not that principal's to give.
   */
  setupForCallers(server: string): (client: Client) => void;
  /**
   * Answers one request server `server` embedded in a task's input requests
   * (2026-07-28), with the same handlers as a 2025 server's requests.
   */
  answer(server: string, request: InputRequest, signal: AbortSignal): Promise<InputResponse>;
  /** The roots, or null when the host declared none. */
  readonly roots: RootsService | null;
  /** Which gateway client a server's request goes to instead of these handlers. */
  readonly forwarding: Forwarding;
}

export function createClientHandlers(options: ClientHandlerOptions): ClientHandlers {
  const roots = options.roots === undefined ? null : createRootsService(options.roots, options.onNotifyError ?? (() => {}));
  const forwarding = createForwarding();
  /** The host's own answer to a request of `server`. */
  async function answerHere(server: string, request: InputRequest, signal: AbortSignal): Promise<InputResponse> {
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
  }
  /** The calling gateway client's answer when there is one that can give it, else the host's. */
  function answer(server: string, request: InputRequest, signal: AbortSignal, connection?: Client): Promise<InputResponse> {
    const client = forwarding.clientFor(server, request, connection);
    return client === undefined ? answerHere(server, request, signal) : client.ask(request, signal);
  }
  return {
    roots,
    forwarding,
    setup(server) {
      return function setupClientHandlers(client) {
        if (options.hostModel) installSampling(client, options.hostModel);
        else refuseSampling(client);
        if (options.samplingForCallers === true) client.registerCapabilities({ sampling: {} });
        installElicitation(client, server, options.elicitation);
        roots?.install(client, server);
        forwardFirst(client, server, forwarding, { sampling: options.hostModel !== undefined || options.samplingForCallers === true, elicitation: true, roots: roots !== null }, (request, signal, connection) => answer(server, request, signal, connection));
      };
    },
    setupForCallers(server) {
      return function setupCallerHandlers(client) {
        client.registerCapabilities({ sampling: { tools: {} }, elicitation: { form: {}, url: {} }, roots: {} });
        forwardFirst(client, server, forwarding, { sampling: true, elicitation: true, roots: true }, async (request, signal, connection) => {
          const to = forwarding.clientFor(server, request, connection);
          if (to !== undefined) return to.ask(request, signal);
          return refuse(request);
        });
      };
    },
    answer: (server, request, signal) => answer(server, request, signal),
  };
}

/** The answer of a connection nobody may answer for: what a client without the capability would give. */
function refuse(request: InputRequest): InputResponse {
  switch (request.method) {
    case 'elicitation/create':
      return { action: 'decline' };
    case 'sampling/createMessage':
      throw new ProtocolError(ProtocolErrorCode.MethodNotFound, 'sampling is not available: no calling client asked for it', { reason: 'no_caller' });
    case 'roots/list':
      throw new ProtocolError(ProtocolErrorCode.MethodNotFound, 'roots are not available: no calling client declared them');
  }
}

/**
 * Puts the calling gateway client before the host's handlers: each declared method is
 * answered by `answer` (the same handlers, after the forwarding), and the methods the
 * host declared none for (sampling without a host model, roots without host roots) are
 * caught by the fallback, so a gateway client that declared them still gets them.
 */
function forwardFirst(
  client: Client,
  server: string,
  forwarding: Forwarding,
  declared: { sampling: boolean; elicitation: boolean; roots: boolean },
  answer: (request: InputRequest, signal: AbortSignal, connection: Client) => Promise<InputResponse>,
): void {
  // A 2026-07-28 server's input_required round is then answered in its call's context.
  bindResponseHandlers(client);
  forwarding.watch(client);
  const ask = (request: InputRequest, signal: AbortSignal) => answeredInTime(signal, (bound) => answer(request, bound, client));
  if (declared.sampling) client.setRequestHandler('sampling/createMessage', (request, ctx) => ask(request, ctx.mcpReq.signal) as Promise<never>);
  if (declared.elicitation) client.setRequestHandler('elicitation/create', (request, ctx) => ask(request, ctx.mcpReq.signal) as Promise<never>);
  if (declared.roots) client.setRequestHandler('roots/list', (request, ctx) => ask(request, ctx.mcpReq.signal) as Promise<never>);
  const previous = client.fallbackRequestHandler;
  client.fallbackRequestHandler = async function forwardToCaller(request, ctx) {
    if ((FORWARDED as readonly string[]).includes(request.method)) {
      const to = forwarding.clientFor(server, request as InputRequest, client);
      if (to !== undefined) return answeredInTime(ctx.mcpReq.signal, (bound) => to.ask(request as InputRequest, bound));
    }
    if (previous) return previous(request, ctx);
    throw new ProtocolError(ProtocolErrorCode.MethodNotFound, 'Method not found');
  };
}

const FORWARDED = ['sampling/createMessage', 'elicitation/create', 'roots/list'] as const;
