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
import { HostModelError, type AssistantMessage, type ChatContentPart, type ChatMessage, type HostModel, type StopReason } from '../../agent/host-model.js';

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
  const answer = samplingAnswerer(model);
  client.setRequestHandler('sampling/createMessage', (request, ctx) => answer(request.params, ctx.mcpReq.signal));
}

/** How sampling requests are answered with `model`, whether a 2025 server's or embedded in a task's input requests. */
export function samplingAnswerer(model: HostModel): (params: CreateMessageRequest['params'], signal: AbortSignal) => Promise<CreateMessageResult> {
  return async function answerSampling(params, signal) {
    const messages = toChatMessages(params);
    let answer: AssistantMessage;
    try {
      answer = await model.complete(
        {
          messages,
          maxTokens: params.maxTokens,
          ...(params.temperature !== undefined ? { temperature: params.temperature } : {}),
          ...(params.stopSequences !== undefined ? { stopSequences: params.stopSequences } : {}),
        },
        { signal },
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
  };
}

/** The error a sampling request gets when the host has no model. */
export function noHostModelError(): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.MethodNotFound,
    'sampling is not available: no host model is configured (createMcpHost({ hostModel }))',
    { reason: NO_HOST_MODEL },
  );
}

/**
 * Without a host model the capability is not declared, and the SDK will not
 * register a handler for it; the fallback handler still gives a server that
 * asks anyway a clear error instead of a bare "Method not found".
 */
export function refuseSampling(client: Client): void {
  const previous = client.fallbackRequestHandler;
  client.fallbackRequestHandler = async function refuseWithoutModel(request, ctx) {
    if (request.method === 'sampling/createMessage') throw noHostModelError();
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
