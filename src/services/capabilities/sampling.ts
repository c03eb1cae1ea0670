/**
 * `sampling/createMessage`: a server asks the host's model for a completion.
 * Declared (`sampling: {}`) only when a host model is configured; a server
 * that asks anyway gets a JSON-RPC error saying there is none.
 */
import {
  type Client,
  type CreateMessageRequest,
  type CreateMessageResult,
  ProtocolError,
  ProtocolErrorCode,
  type SamplingMessage,
  type SamplingMessageContentBlock,
} from '@modelcontextprotocol/client';
import { HostModelError, type AssistantMessage, type ChatContentPart, type ChatMessage, type HostModel, type StopReason } from '../agent/host-model.js';

/** `error.data.reason` of the answer to a sampling request when the host has no model. */
export const NO_HOST_MODEL = 'no_host_model';

const STOP_REASONS: Record<StopReason, CreateMessageResult['stopReason']> = {
  end_turn: 'endTurn',
  max_tokens: 'maxTokens',
  stop_sequence: 'stopSequence',
  tool_use: 'toolUse',
};

/** Declares sampling and answers it with `model`; aborting the request (server cancel) aborts the model call. */
export function installSampling(client: Client, model: HostModel): void {
  client.registerCapabilities({ sampling: {} });
  client.setRequestHandler('sampling/createMessage', async function answerSampling(request, ctx) {
    const messages = toChatMessages(request.params);
    let answer: AssistantMessage;
    try {
      answer = await model.complete(
        {
          messages,
          maxTokens: request.params.maxTokens,
          ...(request.params.temperature !== undefined ? { temperature: request.params.temperature } : {}),
          ...(request.params.stopSequences !== undefined ? { stopSequences: request.params.stopSequences } : {}),
        },
        { signal: ctx.mcpReq.signal },
      );
    } catch (err) {
      const why = err instanceof HostModelError ? err.message : `host model failed: ${String(err)}`;
      throw new ProtocolError(ProtocolErrorCode.InternalError, why, { reason: 'host_model_failed' });
    }
    const result: CreateMessageResult = {
      role: 'assistant',
      content: { type: 'text', text: answer.content },
      model: model.model,
    };
    if (answer.stop_reason !== undefined) result.stopReason = STOP_REASONS[answer.stop_reason];
    return result;
  });
}

/**
 * Without a host model the capability is not declared, and the SDK will not
 * register a handler for it; the fallback handler still gives a server that
 * asks anyway a clear error instead of a bare "Method not found".
 */
export function refuseSampling(client: Client): void {
  const previous = client.fallbackRequestHandler;
  client.fallbackRequestHandler = async function refuseWithoutModel(request, ctx) {
    if (request.method === 'sampling/createMessage') {
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        'sampling is not available: no host model is configured (createMcpHost({ hostModel }))',
        { reason: NO_HOST_MODEL },
      );
    }
    if (previous) return previous(request, ctx);
    throw new ProtocolError(ProtocolErrorCode.MethodNotFound, 'Method not found');
  };
}

/** The request as chat messages; content the host model cannot take is an InvalidParams error naming it. */
function toChatMessages(params: CreateMessageRequest['params']): ChatMessage[] {
  if (params.tools !== undefined || params.toolChoice !== undefined) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'tool use in sampling is not supported by this client (sampling.tools is not declared)');
  }
  const messages: ChatMessage[] = [];
  if (params.systemPrompt) messages.push({ role: 'system', content: params.systemPrompt });
  params.messages.forEach((message, index) => messages.push(toChatMessage(message, index)));
  return messages;
}

function toChatMessage(message: SamplingMessage, index: number): ChatMessage {
  const blocks = Array.isArray(message.content) ? message.content : [message.content];
  const parts = blocks.map((block) => toPart(block, index));
  if (message.role === 'user') {
    const onlyText = parts.every((part) => part.type === 'text');
    return { role: 'user', content: onlyText && parts.length === 1 ? (parts[0] as { text: string }).text : parts };
  }
  if (parts.some((part) => part.type !== 'text')) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `messages[${index}]: images in assistant messages are not supported`);
  }
  return { role: 'assistant', content: parts.map((part) => (part as { text: string }).text).join('\n'), tool_calls: [] };
}

function toPart(block: SamplingMessageContentBlock, index: number): ChatContentPart {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'image':
      return { type: 'image', data: block.data, mimeType: block.mimeType };
    default:
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `messages[${index}]: ${block.type} content is not supported by the host model`);
  }
}
