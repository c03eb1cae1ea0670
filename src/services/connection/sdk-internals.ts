/**
 * Every place mcp-fleet reaches into a private part of the MCP SDK, one
 * accessor per field. The SDK is pinned to {@link SDK_VERSION}; each accessor
 * checks that the field is there with the type it had in that version and
 * throws {@link SdkInternalsError} otherwise, so an upgrade that renames or
 * retypes one fails at the first use (and in test/connection/sdk-internals.test.ts)
 * instead of silently losing what the field was needed for.
 */
import { ChildProcess } from 'node:child_process';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { RequestId, Tool } from '@modelcontextprotocol/sdk/types.js';

/** The SDK version whose private fields these accessors were written against (package.json pins it). */
export const SDK_VERSION = '1.32.2';

/** A private SDK field is missing or changed type: the SDK is not the version these accessors know. */
export class SdkInternalsError extends Error {
  override readonly name = 'SdkInternalsError';
  constructor(
    /** `Class.field`, e.g. `StdioClientTransport._process`. */
    readonly field: string,
    expected: string,
  ) {
    super(
      `@modelcontextprotocol/sdk changed: mcp-fleet needs the private ${field} (${expected}) ` +
        `of SDK ${SDK_VERSION}; update src/services/connection/sdk-internals.ts for this SDK version`,
    );
  }
}

/** The part of the SDK's stdio `ReadBuffer` its transport calls. */
export type StdioReadBuffer = Pick<ReadBuffer, 'append' | 'readMessage' | 'clear'>;

/**
 * The abort controllers of the requests the server sent us that are still
 * being served, by request id: `Protocol._requestHandlerAbortControllers`
 * (SDK 1.32.2, src/shared/protocol.ts). Needed to route
 * `notifications/cancelled` ourselves, since the SDK's own handling skips
 * request id 0 (see notifications.ts).
 */
export function requestAbortControllers(client: Client): Map<RequestId, AbortController> {
  const served = (client as unknown as { _requestHandlerAbortControllers?: unknown })._requestHandlerAbortControllers;
  if (!(served instanceof Map)) {
    throw new SdkInternalsError('Protocol._requestHandlerAbortControllers', 'a Map of request id to AbortController');
  }
  return served as Map<RequestId, AbortController>;
}

/**
 * Sets the client's output-schema validators to exactly `tools`:
 * `Client.cacheToolMetadata` (SDK 1.32.2, src/client/index.ts), a private
 * method. `listTools` replaces the cache with each page it lists, so after a
 * multi-page listing only the last page's tools would be validated.
 */
export function cacheToolMetadata(client: Client, tools: Tool[]): void {
  const cache = (client as unknown as { cacheToolMetadata?: unknown }).cacheToolMetadata;
  if (typeof cache !== 'function') throw new SdkInternalsError('Client.cacheToolMetadata', 'a method taking Tool[]');
  (cache as (tools: Tool[]) => void).call(client, tools);
}

/**
 * Clears the session id a Streamable HTTP transport sends:
 * `StreamableHTTPClientTransport._sessionId` (SDK 1.32.2,
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

/**
 * Replaces the buffer a stdio transport reads stdout through:
 * `StdioClientTransport._readBuffer` (SDK 1.32.2, src/client/stdio.ts). The
 * SDK's buffer re-copies everything it holds on every chunk and refuses
 * lines over 10 MiB (see line-buffer.ts). Call it before `start()`.
 */
export function replaceReadBuffer(transport: StdioClientTransport, buffer: StdioReadBuffer): void {
  const fields = transport as unknown as { _readBuffer?: unknown };
  const current = fields._readBuffer as Partial<Record<keyof StdioReadBuffer, unknown>> | undefined;
  if (
    typeof current !== 'object' ||
    current === null ||
    typeof current.append !== 'function' ||
    typeof current.readMessage !== 'function' ||
    typeof current.clear !== 'function'
  ) {
    throw new SdkInternalsError('StdioClientTransport._readBuffer', 'a ReadBuffer with append, readMessage and clear');
  }
  fields._readBuffer = buffer;
}

/**
 * The child process of a started stdio transport:
 * `StdioClientTransport._process` (SDK 1.32.2, src/client/stdio.ts). The SDK
 * keeps it private and drops the exit code and signal, which every error
 * message about a dead server needs. Call it once `start()` has resolved.
 */
export function childProcessOf(transport: StdioClientTransport): ChildProcess {
  const child = (transport as unknown as { _process?: unknown })._process;
  if (!(child instanceof ChildProcess)) {
    throw new SdkInternalsError('StdioClientTransport._process', 'the spawned ChildProcess, once start() resolved');
  }
  return child;
}
