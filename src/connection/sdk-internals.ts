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

type ResponseHandlers = Map<unknown, (...args: unknown[]) => unknown>;

/**
 * Runs each response handler of `client` in the async context of the request
 * it answers: `Protocol._responseHandlers` (SDK 2.4.0, core-internal
 * src/shared/protocol.ts), a Map the SDK replaces when the connection
 * closes. The SDK runs a handler where the response was read (a stdio
 * child's stdout), and a 2026-07-28 `input_required` round is fulfilled
 * inside it: bound, the round is answered knowing which call it is for.
 * Requests of the 2025 era (and the handshake) are left unbound.
 */
export function bindResponseHandlers(client: object): void {
  const fields = client as { _responseHandlers?: unknown };
  if (!(fields._responseHandlers instanceof Map)) throw new SdkInternalsError('Protocol._responseHandlers', 'a Map');
  const bind = (handlers: ResponseHandlers): ResponseHandlers => {
    const set = handlers.set;
    handlers.set = function setBound(id, handler) {
      // Only the 2026-07-28 era has input_required rounds: a 2025 response needs no context of its own.
      if ((client as Client).getProtocolEra() !== 'modern') return set.call(this, id, handler);
      // A resource run in, not AsyncLocalStorage.bind (nor .snapshot, built on it): bind makes two deprecation wrappers per call.
      const context = new AsyncResource('mcp-fleet.response');
      return set.call(this, id, (...args: unknown[]) => context.runInAsyncScope(handler, undefined, ...args));
    };
    return handlers;
  };
  let current = bind(fields._responseHandlers as ResponseHandlers);
  Object.defineProperty(client, '_responseHandlers', {
    configurable: true,
    get: () => current,
    set: (next: ResponseHandlers) => {
      current = bind(next);
    },
  });
}
