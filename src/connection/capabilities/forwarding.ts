/**
 * A server's requests to its client (sampling, elicitation, roots) during a
 * call a gateway client made go to that client, not to the host's handlers.
 *
 * No request says which call it belongs to, so the call is found two ways:
 * the call's async context (a Streamable HTTP server's requests arrive on the
 * call's own response stream, read in the call's context; a 2026-07-28
 * server's input requests are answered inside the call), else, for requests
 * that arrive outside any call (a stdio server's, read from its stdout),
 * the one gateway call in flight on that server. Two or more at once: nobody
 * can tell, and the host answers as it always did.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { InputRequest, InputResponse } from '@modelcontextprotocol/client';

/** The gateway client whose call is under way: what it declared, and how to ask it. */
export interface RequestingClient {
  /** Whether it declared the capability `request` needs (a form or URL elicitation each its own). */
  accepts(request: InputRequest): boolean;
  /** Sends `request` to the client, on the call's stream. */
  ask(request: InputRequest, signal: AbortSignal): Promise<InputResponse>;
}

export interface Forwarding {
  /** Runs `run` (a gateway call to server `server`) so that `server`'s requests during it go to `client`. */
  during<T>(server: string, client: RequestingClient, run: () => Promise<T>): Promise<T>;
  /** The client `server`'s request should go to now, or undefined: the host answers. */
  clientFor(server: string, request: InputRequest): RequestingClient | undefined;
}

interface Current {
  server: string;
  client: RequestingClient;
}

export function createForwarding(): Forwarding {
  const context = new AsyncLocalStorage<Current>();
  /** The gateway calls in flight, by server. */
  const inFlight = new Map<string, Set<RequestingClient>>();

  return {
    async during(server, client, run) {
      let calls = inFlight.get(server);
      if (calls === undefined) inFlight.set(server, (calls = new Set()));
      calls.add(client);
      try {
        return await context.run({ server, client }, run);
      } finally {
        calls.delete(client);
        if (calls.size === 0 && inFlight.get(server) === calls) inFlight.delete(server);
      }
    },
    clientFor(server, request) {
      const calls = inFlight.get(server);
      if (calls === undefined) return undefined;
      const current = context.getStore();
      // Still in flight: a stream or child started during a call keeps its context after the call is over.
      let client = current !== undefined && current.server === server && calls.has(current.client) ? current.client : undefined;
      if (client === undefined && calls.size === 1) client = [...calls][0];
      return client?.accepts(request) ? client : undefined;
    },
  };
}
