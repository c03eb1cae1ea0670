/**
 * A server's requests to its client (sampling, elicitation, roots) during a
 * call a gateway client made go to that client, not to the host's handlers.
 *
 * No request says which call it belongs to, so the call is found two ways:
 * the call's async context (a Streamable HTTP server's requests arrive on the
 * call's own response stream, read in the call's context; a 2026-07-28
 * server's input requests are answered inside the call), else, for requests
 * that arrive outside any call (a stdio server's, read from its stdout),
 * the one call in flight on that connection, when a gateway client made it.
 * Two or more at once (the host's own calls counted): nobody can tell, and
 * the host answers as it always did.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Client, InputRequest, InputResponse } from '@modelcontextprotocol/client';

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
  /** Counts the calls in flight on `connection` (a server's client), with whose they are. */
  watch(connection: Client): void;
  /** The client `server`'s request (on `connection`, when it came on one) should go to now, or undefined: the host answers. */
  clientFor(server: string, request: InputRequest, connection?: Client): RequestingClient | undefined;
}

/** The requests a gateway client's call sends its server; any of them may be asked something back. */
const CALLS: ReadonlySet<string> = new Set(['tools/call', 'resources/read', 'prompts/get', 'completion/complete']);

interface Current {
  server: string;
  client: RequestingClient;
}

export function createForwarding(): Forwarding {
  const context = new AsyncLocalStorage<Current>();
  /** The gateway calls in flight, by server. */
  const inFlight = new Map<string, Set<RequestingClient>>();
  /** Per connection, the owner of each call in flight on it (undefined: the host's own call). */
  const calls = new WeakMap<Client, Set<{ owner: Current | undefined }>>();
  const live = (server: string, current: Current | undefined): current is Current =>
    current !== undefined && current.server === server && inFlight.get(server)?.has(current.client) === true;

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
    watch(connection) {
      const open = new Set<{ owner: Current | undefined }>();
      calls.set(connection, open);
      const send = connection.request.bind(connection) as (...args: unknown[]) => Promise<unknown>;
      connection.request = function requestCounted(...args: unknown[]) {
        if (!CALLS.has((args[0] as { method?: string } | undefined)?.method ?? '')) return send(...args);
        const entry = { owner: context.getStore() };
        open.add(entry);
        return send(...args).finally(() => open.delete(entry));
      } as Client['request'];
    },
    clientFor(server, request, connection) {
      // Still in flight: a stream or child started during a call keeps its context after the call is over.
      let current = context.getStore();
      if (!live(server, current) && connection !== undefined) {
        const open = calls.get(connection);
        current = open?.size === 1 ? [...open][0]!.owner : undefined;
      }
      if (!live(server, current)) return undefined;
      return current.client.accepts(request) ? current.client : undefined;
    },
  };
}
