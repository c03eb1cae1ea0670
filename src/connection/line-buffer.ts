/**
 * The read side of a stdio connection: newline-delimited JSON-RPC messages,
 * one per line, each at most {@link MAX_MESSAGE_BYTES}. A drop-in for the
 * SDK's `ReadBuffer`, which re-copies everything it holds on every chunk
 * (a 20 MB line took ~5 s of CPU) and stops at 10 MiB; this one copies each
 * byte once, when its line is complete.
 */
import { deserializeMessage, ProtocolErrorCode, specTypeSchemas, type JSONRPCMessage, type StandardSchemaV1, type StandardSchemaV1Sync } from '@modelcontextprotocol/client';

/**
 * The largest message a stdio server may send. Above it the line cannot be
 * read without holding it whole, so the connection is closed instead. Results
 * below it are read, then bounded by `max_result_bytes`.
 */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

const NEWLINE = 0x0a;

/** A line longer than the limit arrived; the connection cannot go on. */
export class MessageTooLargeError extends Error {
  override readonly name = 'MessageTooLargeError';
  constructor(readonly limit: number) {
    const size = limit % (1024 * 1024) === 0 ? `${limit / (1024 * 1024)} MiB` : `${limit} bytes`;
    super(`the server sent a message larger than ${size}, the most one message may be`);
  }
}

/** Buffers stdout chunks into whole lines, copying each byte once. */
export class LineBuffer {
  #chunks: Buffer[] = [];
  #bytes = 0;
  /** Whether a held chunk contains a newline, i.e. a whole line is waiting. */
  #complete = false;

  /** `maxBytes`: the longest line accepted (give or take one chunk). */
  constructor(readonly maxBytes: number = MAX_MESSAGE_BYTES) {}

  /** Adds a chunk; throws {@link MessageTooLargeError} (and forgets everything) when a line outgrows the limit. */
  append(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#bytes += chunk.length;
    if (chunk.includes(NEWLINE)) this.#complete = true;
    // Only an unfinished line can outgrow the limit: whole lines are read right after each append.
    if (!this.#complete && this.#bytes > this.maxBytes) {
      this.clear();
      throw new MessageTooLargeError(this.maxBytes);
    }
  }

  /** The next whole line as a JSON-RPC message, or null; throws on a line that is not one (the caller goes on). */
  readMessage(): JSONRPCMessage | null {
    if (!this.#complete) return null;
    const joined = this.#chunks.length > 1;
    const held = joined ? Buffer.concat(this.#chunks, this.#bytes) : this.#chunks[0]!;
    const end = held.indexOf(NEWLINE);
    // A view into a big joined line would keep all of it alive: copy the (at most one chunk) rest.
    const rest = joined ? Buffer.from(held.subarray(end + 1)) : held.subarray(end + 1);
    this.#chunks = rest.length === 0 ? [] : [rest];
    this.#bytes = rest.length;
    this.#complete = rest.includes(NEWLINE);
    return parseMessage(held.toString('utf8', 0, end).replace(/\r$/, ''));
  }

  /** Whether a whole line is waiting to be read. */
  pending(): boolean {
    return this.#complete;
  }

  clear(): void {
    this.#chunks = [];
    this.#bytes = 0;
    this.#complete = false;
  }
}

const { JSONRPCRequest, JSONRPCNotification, JSONRPCResultResponse, JSONRPCErrorResponse } = specTypeSchemas;

/**
 * The message a line holds, as the SDK's `deserializeMessage` reads it: its
 * union tries request, notification, result and error in turn, and each
 * failed try builds issues and their messages (a response fails two, an
 * error three). The keys a message has already rule out the variants before
 * its own (each requires what is missing), so the first variant that can
 * match is validated alone; if it fails, the SDK's union decides and throws
 * its own error.
 */
function parseMessage(line: string): JSONRPCMessage {
  const value: unknown = JSON.parse(line);
  const schema = variantOf(value);
  if (schema !== undefined) {
    const result = schema['~standard'].validate(value);
    if (result.issues === undefined) return result.value as JSONRPCMessage;
    const malformed = malformedAnswer(value as Record<string, unknown>, result.issues);
    if (malformed !== undefined) return malformed;
  }
  return deserializeMessage(line);
}

/**
 * An answer to a request (an `id` and a `result` or an `error`) that is not a
 * valid one (`"result": null`, an error without a code), as an error answer
 * to that id saying so. Skipped as a line that is not JSON-RPC, it left its
 * request waiting out its timeout; an answer to no request is dropped by the
 * SDK as before.
 */
function malformedAnswer(value: Record<string, unknown>, issues: readonly StandardSchemaV1.Issue[]): JSONRPCMessage | undefined {
  const { id } = value;
  const what = Object.hasOwn(value, 'result') ? 'result' : Object.hasOwn(value, 'error') ? 'error' : undefined;
  if (what === undefined || Object.hasOwn(value, 'method') || (typeof id !== 'string' && typeof id !== 'number')) return undefined;
  // Where and what, in zod's words (types, never the values sent).
  const issue = issues.find((candidate) => candidate.path?.length) ?? issues[0];
  const at = (issue?.path ?? []).map((key) => String(typeof key === 'object' ? key.key : key)).join('.');
  const why = at === '' ? '' : ` (${at}: ${(issue?.message ?? 'invalid').replace(/^Invalid input: /, '')})`;
  const message = `the server's answer was malformed: its ${what} is not a valid JSON-RPC ${what}${why}`;
  return { jsonrpc: '2.0', id, error: { code: ProtocolErrorCode.InternalError, message } };
}

function variantOf(value: unknown): StandardSchemaV1Sync | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  if (Object.hasOwn(value, 'method')) return Object.hasOwn(value, 'id') ? JSONRPCRequest : JSONRPCNotification;
  return Object.hasOwn(value, 'result') ? JSONRPCResultResponse : JSONRPCErrorResponse;
}
