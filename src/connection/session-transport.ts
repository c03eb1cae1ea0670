/**
 * Streamable HTTP that survives the server forgetting its session: an HTTP
 * 404 to a request carrying a session id means the session is gone (MCP
 * spec, "Session Management"), so the transport re-initializes once — the
 * same `initialize` the client sent first, then `notifications/initialized` —
 * and sends the request again. Concurrent requests share one re-initialization.
 */
import {
  isInitializeRequest,
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  SdkHttpError,
  StreamableHTTPClientTransport,
  type TransportSendOptions,
} from '@modelcontextprotocol/client';
import { forgetSessionId } from './sdk-internals.js';

export class SessionRenewingTransport extends StreamableHTTPClientTransport {
  #initialize: JSONRPCRequest | undefined;
  #renewing: Promise<void> | null = null;
  #renewals = 0;

  override async send(message: JSONRPCMessage | JSONRPCMessage[], options?: TransportSendOptions): Promise<void> {
    if (!Array.isArray(message) && isInitializeRequest(message)) this.#initialize = message as JSONRPCRequest;
    const session = this.sessionId;
    try {
      return await super.send(message, options);
    } catch (err) {
      if (!(err instanceof SdkHttpError && err.status === 404) || session === undefined || this.#initialize === undefined) {
        throw err;
      }
      // Another request may be renewing the session, or have renewed it already; otherwise renew it now.
      if (this.#renewing === null && this.sessionId === session) {
        this.#renewing = this.#renew().finally(() => (this.#renewing = null));
      }
      await this.#renewing;
      return super.send(message, options);
    }
  }

  async #renew(): Promise<void> {
    // The request must go out without the dead id to be a new session's initialize.
    forgetSessionId(this);
    const id = `mcp-fleet-reinitialize-${++this.#renewals}`;
    const forward = this.onmessage;
    try {
      const answered = new Promise<void>((resolve, reject) => {
        // The answer is ours, not the client's: it never asked (and must not see a second initialize result).
        this.onmessage = (message: JSONRPCMessage) => {
          if ((isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id === id) {
            if (isJSONRPCErrorResponse(message)) reject(new Error(`re-initialize refused: ${message.error.message}`));
            else resolve();
            return;
          }
          forward?.(message);
        };
      });
      await super.send({ ...this.#initialize!, id });
      await answered;
    } finally {
      this.onmessage = forward;
    }
    await super.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }
}
