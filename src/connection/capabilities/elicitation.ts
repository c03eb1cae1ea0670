/**
 * `elicitation/create`: a server asks the user for input, as a form (a flat
 * JSON Schema) or by sending them to a URL. The host's callback answers;
 * without one every request is declined at once, never left waiting.
 */
import {
  type Client,
  type ElicitRequest,
  type ElicitRequestFormParams,
  type ElicitResult,
  ProtocolError,
  ProtocolErrorCode,
} from '@modelcontextprotocol/client';
import { z } from 'zod';
import { describeZodError } from '../../config/zod-errors.js';

/** A value of a form field: what a flat elicitation schema allows. */
export const ElicitationValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]);
export type ElicitationValue = z.infer<typeof ElicitationValue>;

/** The user's answer: `accept` (with the form's values), `decline` (said no) or `cancel` (dismissed). */
export const ElicitationResponse = z.discriminatedUnion('action', [
  z.object({ action: z.literal('accept'), content: z.record(z.string(), ElicitationValue).optional() }).strict(),
  z.object({ action: z.literal('decline') }).strict(),
  z.object({ action: z.literal('cancel') }).strict(),
]);
export type ElicitationResponse = z.infer<typeof ElicitationResponse>;

/** What the callback is asked: a form to fill in, or a URL to open. `server` is who asks. */
export type ElicitationRequest =
  | {
      mode: 'form';
      server: string;
      message: string;
      requestedSchema: ElicitRequestFormParams['requestedSchema'];
      /** The `default` of every field that has one; an accepted form is completed with these. */
      defaults: Record<string, ElicitationValue>;
    }
  | { mode: 'url'; server: string; message: string; url: string; elicitationId: string };

/**
 * The host's elicitation callback. `signal` aborts when the server cancels
 * the request or the connection ends: close the dialog then.
 */
export type ElicitationHandler = (
  request: ElicitationRequest,
  options: { signal: AbortSignal },
) => ElicitationResponse | Promise<ElicitationResponse>;

/** Declares form and URL elicitation for server `server` and answers with `handler` (or declines without one). */
export function installElicitation(client: Client, server: string, handler: ElicitationHandler | undefined): void {
  client.registerCapabilities({ elicitation: { form: { applyDefaults: true }, url: {} } });
  const answer = elicitationAnswerer(server, handler);
  client.setRequestHandler('elicitation/create', (request, ctx) => answer(request.params, ctx.mcpReq.signal));
}

/**
 * How server `server`'s elicitation requests are answered, wherever they come
 * from: a 2025 server's request, or one embedded in a task's input requests.
 */
export function elicitationAnswerer(
  server: string,
  handler: ElicitationHandler | undefined,
): (params: ElicitRequest['params'], signal: AbortSignal) => Promise<ElicitResult> {
  return async function answerElicitation(params, signal) {
    if (handler === undefined) return { action: 'decline' };
    const asked: ElicitationRequest =
      params.mode === 'url'
        ? { mode: 'url', server, message: params.message, url: params.url, elicitationId: params.elicitationId }
        : {
            mode: 'form',
            server,
            message: params.message,
            requestedSchema: params.requestedSchema,
            defaults: schemaDefaults(params.requestedSchema),
          };
    let answer: unknown;
    try {
      answer = await handler(asked, { signal });
    } catch (err) {
      throw new ProtocolError(ProtocolErrorCode.InternalError, `elicitation callback failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    const parsed = ElicitationResponse.safeParse(answer);
    if (!parsed.success) {
      const why = describeZodError(parsed.error).message;
      throw new ProtocolError(ProtocolErrorCode.InternalError, `elicitation callback returned an invalid response: ${why}`);
    }
    const response = parsed.data;
    if (response.action !== 'accept') return { action: response.action };
    // A URL elicitation carries no data back: the user acted in the browser.
    if (asked.mode === 'url') return { action: 'accept' };
    return { action: 'accept', content: { ...asked.defaults, ...response.content } };
  };
}

/** The `default` of each property of a form schema. */
export function schemaDefaults(schema: ElicitRequestFormParams['requestedSchema']): Record<string, ElicitationValue> {
  const defaults: Record<string, ElicitationValue> = {};
  for (const [field, property] of Object.entries(schema.properties)) {
    const value = ElicitationValue.safeParse((property as { default?: unknown }).default);
    if (value.success) defaults[field] = value.data;
  }
  return defaults;
}
