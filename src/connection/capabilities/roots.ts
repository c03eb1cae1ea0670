/**
 * Roots: the directories (file:// URIs) the host lets servers work in. Served
 * on `roots/list`; a change is announced to every connected server with
 * `notifications/roots/list_changed`, and the servers list them again.
 */
import type { Client } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { describeZodError } from '../../config/zod-errors.js';
import { MODERN_REVISION } from '../era-negotiation.js';

export const Root = z
  .object({
    /** A `file://` URI (MCP allows no other scheme for roots). */
    uri: z.string().startsWith('file://', 'a root uri must be a file:// URI'),
    /** A name to show for it. */
    name: z.string().optional(),
  })
  .strict();
export type Root = z.infer<typeof Root>;
export const Roots = z.array(Root);

/** The roots of one host, and the clients to tell when they change. */
export interface RootsService {
  /** The current list (a copy). */
  list(): Root[];
  /** Declares roots on `client` (a connection to `server`) and serves the current list to it. */
  install(client: Client, server: string): void;
  /** Replaces the list and tells every connected server; resolves when every notification is sent. */
  set(roots: Root[]): Promise<void>;
}

/** Reads `roots` ("roots.1.uri: …" for a bad one); throws a TypeError naming the problem. */
export function parseRoots(roots: unknown, where: string): Root[] {
  const parsed = Roots.safeParse(roots);
  if (parsed.success) return parsed.data;
  throw new TypeError(`${where}: ${describeZodError(parsed.error, 'roots').message}`);
}

/** A server `server` whose roots change could not be told (its connection was closing). */
export type RootsNotifyError = (server: string, error: Error) => void;

export function createRootsService(initial: Root[], onNotifyError: RootsNotifyError): RootsService {
  let roots = initial;
  // Weak: a client whose connection ended must not be kept alive by the list of clients to tell.
  const clients = new Set<{ ref: WeakRef<Client>; server: string }>();

  /** The connections to tell of a change, each with its server's name. */
  function live(): Array<{ client: Client; server: string }> {
    const found: Array<{ client: Client; server: string }> = [];
    for (const entry of clients) {
      const client = entry.ref.deref();
      if (client === undefined) clients.delete(entry);
      // No transport: not connected yet (it will list the new roots itself) or closed.
      else if (client.transport !== undefined && announcesRoots(client)) found.push({ client, server: entry.server });
    }
    return found;
  }

  return {
    list: () => roots.map((root) => ({ ...root })),

    install(client, server) {
      client.registerCapabilities({ roots: { listChanged: true } });
      client.setRequestHandler('roots/list', () => ({ roots: roots.map((root) => ({ ...root })) }));
      live(); // prunes the collected ones
      clients.add({ ref: new WeakRef(client), server });
    },

    async set(next) {
      roots = next;
      await Promise.all(
        live().map(({ client, server }) =>
          // A connection closing at this moment is not the caller's problem.
          client.sendRootsListChanged().catch((error: Error) => onNotifyError(server, error)),
        ),
      );
    },
  };
}

/**
 * A 2026-07-28 connection has no `roots/list_changed`: its server asks for
 * the roots in each request that needs them (an `input_required` round), so
 * it gets the new list the next time it asks.
 */
function announcesRoots(client: Client): boolean {
  const version = client.getNegotiatedProtocolVersion();
  return version === undefined || version < MODERN_REVISION;
}
