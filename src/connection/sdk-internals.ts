/**
 * Every place mcp-fleet reaches into a private part of the MCP SDK, one
 * accessor per field. The SDK is pinned to {@link SDK_VERSION}; each accessor
 * checks that the field is there with the type it had in that version and
 * throws {@link SdkInternalsError} otherwise, so an upgrade that renames or
 * retypes one fails at the first use (and in test/connection/sdk-internals.test.ts)
 * instead of silently losing what the field was needed for.
 */
import { AsyncResource } from 'node:async_hooks';
import type { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

/** The SDK version whose private fields these accessors were written against (package.json pins it). */
export const SDK_VERSION = '2.4.0';

/** A private SDK field is missing or changed type: the SDK is not the version these accessors know. */
export class SdkInternalsError extends Error {
  override readonly name = 'SdkInternalsError';
  constructor(
    /** `Class.field`, e.g. `StdioClientTransport._process`. */
    readonly field: string,
    expected: string,
  ) {
    super(
      `@modelcontextprotocol/client changed: mcp-fleet needs the private ${field} (${expected}) ` +
        `of SDK ${SDK_VERSION}; update src/connection/sdk-internals.ts for this SDK version`,
    );
  }
}

/**
 * Clears the session id a Streamable HTTP transport sends:
 * `StreamableHTTPClientTransport._sessionId` (SDK 2.4.0,
 * src/client/streamableHttp.ts). The SDK only clears it after a successful
 * DELETE; a session the server forgot must be re-initialized without it.
 */
export function forgetSessionId(transport: StreamableHTTPClientTransport): void {
  const fields = transport as unknown as { _sessionId?: unknown };
  // The SDK assigns the field in its constructor, so it exists even while undefined.
  if (!('_sessionId' in fields) || (fields._sessionId !== undefined && typeof fields._sessionId !== 'string')) {
    throw new SdkInternalsError('StreamableHTTPClientTransport._sessionId', 'a string or undefined');
  }
  fields._sessionId = undefined;
}

type ResponseHandler = (...args: unknown[]) => unknown;

/** The response handlers of one client, each set in the 2026-07-28 era bound to the async context it was set in. */
class BoundResponseHandlers extends Map<unknown, ResponseHandler> {
  readonly #client: Client;

  constructor(client: Client, handlers: Map<unknown, ResponseHandler>) {
    super();
    this.#client = client;
    // Taken over as they were (set before anything was bound), not through `set`.
    handlers.forEach((handler, id) => super.set(id, handler));
  }

  override set(id: unknown, handler: ResponseHandler): this {
    // Only the 2026-07-28 era has input_required rounds: a 2025 response needs no context of its own.
    if (this.#client.getProtocolEra() !== 'modern') return super.set(id, handler);
    // A resource run in, not AsyncLocalStorage.bind (nor .snapshot, built on it): bind makes two deprecation wrappers per call.
    const context = new AsyncResource('mcp-fleet.response');
    return super.set(id, (...args: unknown[]) => context.runInAsyncScope(handler, undefined, ...args));
  }
}

/**
 * Runs each response handler of `client` in the async context of the request
 * it answers: `Protocol._responseHandlers` (SDK 2.4.0, core-internal
 * src/shared/protocol.ts), a Map. The SDK runs a handler where the response
 * was read (a stdio child's stdout), and a 2026-07-28 `input_required` round
 * is fulfilled inside it: bound, the round is answered knowing which call it
 * is for. Requests of the 2025 era (and the handshake) are left unbound.
 * The SDK puts a new Map in its place when the connection closes; mcp-fleet
 * connects a client once, so the one replaced here is the one its requests
 * use. (An accessor on the client, to follow the replacement, cost every
 * client its fast properties: ~2 KiB kept per server.)
 */
export function bindResponseHandlers(client: object): void {
  const fields = client as { _responseHandlers?: unknown };
  if (!(fields._responseHandlers instanceof Map)) throw new SdkInternalsError('Protocol._responseHandlers', 'a Map');
  fields._responseHandlers = new BoundResponseHandlers(client as Client, fields._responseHandlers as Map<unknown, ResponseHandler>);
}
