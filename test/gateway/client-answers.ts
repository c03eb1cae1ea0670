/** What a test's gateway client answers a backend's sampling with, and how it reads prompts and results back. */
import type { CreateMessageRequest, CreateMessageResult } from '@modelcontextprotocol/client';

export const reply = (text: string): CreateMessageResult => ({ role: 'assistant', content: { type: 'text', text }, model: 'test-client-model' });

/** The text of a sampling request's first message. */
export const promptOf = (params: CreateMessageRequest['params']) => {
  const content = params.messages[0]!.content;
  return !Array.isArray(content) && content.type === 'text' ? content.text : '';
};

/** A tool result's text parts, joined. */
export const text = (result: { content?: unknown }) => (result.content as Array<{ type: string; text?: string }>).map((part) => part.text).join('');
