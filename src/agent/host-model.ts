/**
 * The host's own language model, as mcp-fleet sees it: messages and tools in,
 * one assistant message (text and/or tool calls) out. Provider-neutral; an
 * adapter (openai-compatible.ts) maps it to a provider's wire format. The
 * agent loop and `sampling/createMessage` both go through it.
 */
import { z } from 'zod';

/** A part of a user message: text, or an image as base64 data. */
export const ChatContentPart = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image'), data: z.string(), mimeType: z.string() }),
]);
export type ChatContentPart = z.infer<typeof ChatContentPart>;

/** A tool call the model asked for; `arguments` is the JSON text exactly as the model wrote it. */
export const ToolCall = z.object({ id: z.string(), name: z.string(), arguments: z.string() });
export type ToolCall = z.infer<typeof ToolCall>;

/** Why the model stopped: its own words, the token bound, a stop sequence, or to call tools. */
export const StopReason = z.enum(['end_turn', 'max_tokens', 'stop_sequence', 'tool_use']);
export type StopReason = z.infer<typeof StopReason>;

export const AssistantMessage = z.object({
  role: z.literal('assistant'),
  /** The text of the answer; '' when the model only called tools. */
  content: z.string(),
  tool_calls: z.array(ToolCall).default([]),
  /** Absent when the provider did not say (or said something else). */
  stop_reason: StopReason.optional(),
});
export type AssistantMessage = z.infer<typeof AssistantMessage>;

/** One message of a conversation. */
export const ChatMessage = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string() }),
  z.object({ role: z.literal('user'), content: z.union([z.string(), z.array(ChatContentPart)]) }),
  AssistantMessage,
  /** A tool's answer to the call `tool_call_id`. */
  z.object({ role: z.literal('tool'), tool_call_id: z.string(), content: z.string() }),
]);
export type ChatMessage = z.infer<typeof ChatMessage>;

/** A tool offered to the model: an `AgentTool` fits as it is. */
export const ModelTool = z.object({
  name: z.string(),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
});
export type ModelTool = z.infer<typeof ModelTool>;

/** One completion request. */
export const ModelRequest = z.object({
  messages: z.array(ChatMessage).min(1),
  tools: z.array(ModelTool).optional(),
  maxTokens: z.number().int().positive().optional(),
  temperature: z.number().optional(),
  stopSequences: z.array(z.string()).optional(),
});
export type ModelRequest = z.infer<typeof ModelRequest>;

/** The host's model. */
export interface HostModel {
  /** The model's name, reported to servers as the `model` of a sampling result. */
  readonly model: string;
  /** One completion. Aborting `signal` aborts the request; failures reject with a {@link HostModelError}. */
  complete(request: ModelRequest, options?: { signal?: AbortSignal }): Promise<AssistantMessage>;
}

/**
 * A model call that failed: unreachable, an HTTP error, an answer of the wrong
 * shape, or aborted. `status` is the HTTP status when there was one. The
 * message never contains the API key.
 */
export class HostModelError extends Error {
  override readonly name = 'HostModelError';
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}
