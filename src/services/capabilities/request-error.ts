/**
 * The error a client-side request handler throws to answer a server with a
 * JSON-RPC error. The SDK sends `code`, `message` and `data` of whatever the
 * handler threw; unlike McpError, the message is not prefixed with
 * "MCP error <code>:", which the server's SDK adds once more on its side.
 */
export class ClientRequestError extends Error {
  override readonly name = 'ClientRequestError';
  constructor(
    /** A JSON-RPC error code (`ErrorCode` of the SDK). */
    readonly code: number,
    message: string,
    /** Structured detail for the server, e.g. `{ reason: 'no_host_model' }`. */
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}
