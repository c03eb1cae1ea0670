/**
 * Every place mcp-fleet reaches into a private part of the MCP SDK, one
 * accessor per field. The SDK is pinned to {@link SDK_VERSION}; each accessor
 * checks that the field is there with the type it had in that version and
 * throws {@link SdkInternalsError} otherwise, so an upgrade that renames or
 * retypes one fails at the first use (and in test/connection/sdk-internals.test.ts)
 * instead of silently losing what the field was needed for.
 */
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

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
