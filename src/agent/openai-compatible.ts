/**
 * A {@link HostModel} for any OpenAI-compatible chat-completions endpoint
 * (OpenAI, Azure-style proxies, vLLM, llama.cpp, Ollama, LM Studio, …):
 * `POST {baseUrl}/chat/completions` with a bearer key.
 */
import { z } from 'zod';
import { redact } from '../config/masking.js';
import {
  AssistantMessage,
  HostModelError,
  ModelRequest,
  type ChatContentPart,
  type ChatMessage,
  type HostModel,
  type StopReason,
} from './host-model.js';
import { describeZodError } from '../config/zod-errors.js';

export const OpenAICompatibleOptions = z
  .object({
    /** Base URL of the API, up to and without `/chat/completions` (e.g. `https://api.openai.com/v1`). */
    baseUrl: z.url({ protocol: /^https?$/, error: 'baseUrl must be an http(s) URL' }),
    /** Sent as `Authorization: Bearer <apiKey>`; omit for local servers without auth. Never logged. */
    apiKey: z.string().optional(),
    /** The model name the endpoint knows (e.g. `gpt-4o-mini`). */
    model: z.string().min(1, 'model must be a non-empty string'),
    /** A bound on each request, in ms (default 120 000). */
    timeoutMs: z.number().int().positive().default(120_000),
  })
  .strict();
export type OpenAICompatibleOptions = z.input<typeof OpenAICompatibleOptions>;

// The parts of an OpenAI chat-completions answer that mcp-fleet reads.
const Completion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          tool_calls: z
            .array(z.object({ id: z.string(), function: z.object({ name: z.string(), arguments: z.string() }) }))
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
});

const STOP_REASONS: Record<string, StopReason> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
};

// How much of an error body goes into the message: enough to say why, not a whole HTML page.
const ERROR_BODY_CHARS = 300;

/** Creates the model; bad options throw a TypeError naming the option. */
export function createOpenAICompatibleModel(options: OpenAICompatibleOptions): HostModel {
  const parsed = OpenAICompatibleOptions.safeParse(options);
  if (!parsed.success) {
    throw new TypeError(`createOpenAICompatibleModel: ${describeZodError(parsed.error).message}`);
  }
  const { baseUrl, apiKey, model, timeoutMs } = parsed.data;
  const endpoint = `${baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const secrets = apiKey ? [apiKey] : [];

  async function complete(request: ModelRequest, { signal }: { signal?: AbortSignal } = {}): Promise<AssistantMessage> {
    const body = toRequestBody(model, validRequest(request));
    const timeout = AbortSignal.timeout(timeoutMs);
    const bound = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let response: Response;
    let text: string;
    try {
      response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
        body: JSON.stringify(body),
        signal: bound,
      });
      text = await response.text();
    } catch (err) {
      if (signal?.aborted) throw new HostModelError(`host model request was cancelled`);
      if (timeout.aborted) throw new HostModelError(`host model ${model} did not answer within ${timeoutMs} ms`);
      throw new HostModelError(redact(`cannot reach host model at ${endpoint}: ${describeFetchError(err)}`, secrets));
    }
    if (!response.ok) {
      const why = redact(errorText(text), secrets);
      throw new HostModelError(`host model ${model} answered HTTP ${response.status}: ${why}`, response.status);
    }
    return fromCompletion(text, model);
  }

  return { model, complete };
}

/** The request, checked: a malformed one is the caller's bug, named before anything is sent. */
function validRequest(request: ModelRequest): ModelRequest {
  const parsed = ModelRequest.safeParse(request);
  if (parsed.success) return parsed.data;
  throw new TypeError(`invalid model request: ${describeZodError(parsed.error).message}`);
}

function toRequestBody(model: string, request: ModelRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { model, messages: request.messages.map(toWireMessage) };
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
  }
  if (request.maxTokens !== undefined) body.max_tokens = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.stopSequences !== undefined && request.stopSequences.length > 0) body.stop = request.stopSequences;
  return body;
}

function toWireMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'user':
      return {
        role: 'user',
        content: typeof message.content === 'string' ? message.content : message.content.map(toWirePart),
      };
    case 'assistant':
      return message.tool_calls.length === 0
        ? { role: 'assistant', content: message.content }
        : {
            role: 'assistant',
            // Some servers reject '' next to tool calls; null is what OpenAI itself sends.
            content: message.content === '' ? null : message.content,
            tool_calls: message.tool_calls.map((call) => ({
              id: call.id,
              type: 'function',
              function: { name: call.name, arguments: call.arguments },
            })),
          };
    default:
      return message;
  }
}

function toWirePart(part: ChatContentPart): Record<string, unknown> {
  return part.type === 'text'
    ? part
    : { type: 'image_url', image_url: { url: `data:${part.mimeType};base64,${part.data}` } };
}

function fromCompletion(text: string, model: string): AssistantMessage {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new HostModelError(`host model ${model} answered with something that is not JSON: ${errorText(text)}`);
  }
  const parsed = Completion.safeParse(json);
  if (!parsed.success) {
    throw new HostModelError(`host model ${model} answered in an unexpected shape: ${describeZodError(parsed.error).message}`);
  }
  const [choice] = parsed.data.choices;
  const calls = choice!.message.tool_calls ?? [];
  const reason = STOP_REASONS[choice!.finish_reason ?? ''];
  return AssistantMessage.parse({
    role: 'assistant',
    content: choice!.message.content ?? '',
    tool_calls: calls.map((call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments })),
    ...(reason ? { stop_reason: reason } : {}),
  });
}

/** The provider's own error message when the body has one (`{error: {message}}`), else the start of the body. */
function errorText(body: string): string {
  try {
    const message = (JSON.parse(body) as { error?: { message?: unknown } }).error?.message;
    if (typeof message === 'string') return message.slice(0, ERROR_BODY_CHARS);
  } catch {
    // not JSON: the raw body says what happened
  }
  const trimmed = body.trim().replace(/\s+/g, ' ');
  return trimmed === '' ? '(empty body)' : trimmed.slice(0, ERROR_BODY_CHARS);
}

/** fetch's TypeError says "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND…) is in its cause. */
function describeFetchError(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return err instanceof Error ? err.message : String(err);
}
