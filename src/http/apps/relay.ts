/**
 * The transport of one app's bridge when the app runs in a browser frame and
 * the bridge in the worker: the page relays. What the app posts reaches the
 * worker as `POST …/messages` (`receive`), what the bridge sends goes out on
 * the session's event stream (`attach`); until the page listens it waits here.
 */
import { parseJSONRPCMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';

/** Messages kept for a page that has not opened its stream yet; an app that floods an absent page is cut off. */
const MAX_QUEUED = 256;

/** What the app posted is not a JSON-RPC message (the SDK's parser lists every schema it tried; this says it in one line). */
export class NotJsonRpcError extends Error {
  constructor() {
    super('not a JSON-RPC message: it needs "jsonrpc": "2.0" and a method, or an id with a result or an error');
    this.name = 'NotJsonRpcError';
  }
}

export class RelayTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  private queue: JSONRPCMessage[] = [];
  private sink: ((message: JSONRPCMessage) => void) | undefined;
  private closed = false;

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.closed) throw new Error('the app is closed');
    if (this.sink) this.sink(message);
    else if (this.queue.length < MAX_QUEUED) this.queue.push(message);
    else throw new Error('the page does not read the app’s messages');
  }

  /** The page's stream: the queued messages first, then each one as it is sent. */
  attach(sink: (message: JSONRPCMessage) => void): void {
    this.sink = sink;
    for (const message of this.queue.splice(0)) sink(message);
  }

  detach(): void {
    this.sink = undefined;
  }

  /**
   * One message the app posted. Anything that is not a JSON-RPC message is
   * refused here, before the bridge sees it (the bridge then checks each
   * method's params against its schema).
   */
  receive(value: unknown): void {
    if (this.closed) throw new Error('the app is closed');
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(value);
    } catch {
      throw new NotJsonRpcError();
    }
    this.onmessage?.(message);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.sink = undefined;
    this.queue = [];
    this.onclose?.();
  }
}
