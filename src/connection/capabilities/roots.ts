/**
 * Roots: the directories (file:// URIs) the host lets servers work in. Served
 * on `roots/list`; a change is announced to every connected server with
 * `notifications/roots/list_changed`, and the servers list them again.
 */
import type { Client } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { describeZodError } from '../../config/zod-errors.js';

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
  /** Declares roots on `client` and serves the current list to it. */
  install(client: Client): void;
  /** Replaces the list and tells every connected server; resolves when every notification is sent. */
  set(roots: Root[]): Promise<void>;
}

/** Reads `roots` ("roots.1.uri: …" for a bad one); throws a TypeError naming the problem. */
export function parseRoots(roots: unknown, where: string): Root[] {
  const parsed = Roots.safeParse(roots);
  if (parsed.success) return parsed.data;
  throw new TypeError(`${where}: ${describeZodError(parsed.error, 'roots').message}`);
}

export function createRootsService(initial: Root[], onNotifyError: (error: Error) => void): RootsService {
  let roots = initial;
  // Weak: a client whose connection ended must not be kept alive by the list of clients to tell.
  const clients = new Set<WeakRef<Client>>();

  function live(): Client[] {
    const found: Client[] = [];
    for (const ref of clients) {
      const client = ref.deref();
      if (client === undefined) clients.delete(ref);
      // No transport: not connected yet (it will list the new roots itself) or closed.
      else if (client.transport !== undefined) found.push(client);
    }
    return found;
  }

  return {
    list: () => roots.map((root) => ({ ...root })),

    install(client) {
      client.registerCapabilities({ roots: { listChanged: true } });
      client.setRequestHandler('roots/list', () => ({ roots: roots.map((root) => ({ ...root })) }));
      live(); // prunes the collected ones
      clients.add(new WeakRef(client));
    },

    async set(next) {
      roots = next;
      await Promise.all(
        live().map((client) =>
          // A connection closing at this moment is not the caller's problem.
          client.sendRootsListChanged().catch((error: Error) => onNotifyError(error)),
        ),
      );
    },
  };
}
