/** What a test's gateway client answers a backend's sampling with, and how it reads prompts and results back. */
import type { Client, ClientCapabilities, CreateMessageRequest, CreateMessageResult } from '@modelcontextprotocol/client';

export const reply = (text: string): CreateMessageResult => ({ role: 'assistant', content: { type: 'text', text }, model: 'test-client-model' });

/** The text of a sampling request's first message. */
export const promptOf = (params: CreateMessageRequest['params']) => {
  const content = params.messages[0]!.content;
  return !Array.isArray(content) && content.type === 'text' ? content.text : '';
};

/** A tool result's text parts, joined. */
export const text = (result: { content?: unknown }) => (result.content as Array<{ type: string; text?: string }>).map((part) => part.text).join('');

export type Answer = (request: CreateMessageRequest['params']) => Promise<CreateMessageResult> | CreateMessageResult;

/** What a test client answers a backend with: sampling by `sample`, every elicitation accepted with `elicit`, `roots` as its roots. */
export interface Handlers {
  sample?: Answer;
  elicit?: Record<string, string>;
  roots?: string[];
}

/** The capabilities a client with `handlers` declares: only what it answers. */
export function declared(handlers: Handlers): ClientCapabilities {
  return { ...(handlers.sample && { sampling: {} }), ...(handlers.elicit && { elicitation: { form: {} } }), ...(handlers.roots && { roots: {} }) };
}

/** Sets `client`'s handlers for what `handlers` answer. */
export function answerWith(client: Client, handlers: Handlers): void {
  const { sample, elicit, roots } = handlers;
  if (sample) client.setRequestHandler('sampling/createMessage', (request) => sample(request.params));
  if (elicit) client.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: elicit }));
  if (roots) client.setRequestHandler('roots/list', () => ({ roots: roots.map((uri) => ({ uri })) }));
}
