/**
 * One agent turn: the model sees the registry's tools, its tool calls run
 * through the registry (all calls of one answer at once), their results go
 * back to it, until it answers in text or the round bound is reached.
 */
import { resultToText } from '../catalog/tools/adapter.js';
import type { AgentTool, AgentToolResult, ExecuteOptions, ToolProgress } from '../catalog/index.js';
import { foundTools } from '../catalog/tools/search-tools-tool.js';
import { z } from 'zod';
import { AssistantMessage, ChatMessage, type HostModel, type ModelTool, type ToolCall } from './host-model.js';
import { checkOptions, fn } from '../checked-options.js';
import { describeZodError } from '../config/zod-errors.js';

/** Where the tools come from: an `McpHost` fits. */
export interface ToolHost {
  tools(options?: { loading?: 'eager' | 'deferred' }): AgentTool[];
  callTool(name: string, args: Record<string, unknown>, options?: ExecuteOptions): Promise<AgentToolResult>;
  /** Re-lists the catalog listings that expired; the turn waits for it before it reads the tools. */
  freshen?(): Promise<void>;
}

export interface AgentTurnOptions {
  /** At most this many model calls (default 10); the turn ends after the last one's tool calls ran. */
  maxRounds?: number;
  /** Aborts the model call and the tool calls in flight; the turn rejects. */
  signal?: AbortSignal;
  /** Sees every tool call as it starts and every result as it comes back. */
  onToolCall?: (event: ToolCallEvent) => void;
  /**
   * `deferred`: the model starts with `search_tools` and the always-loaded
   * tools; the tools a search finds go with every later request of the turn
   * (default `eager`: every tool, every request).
   */
  loading?: 'eager' | 'deferred';
}

/** The options as given: a misspelled name (`maxround`) would otherwise run on the default. */
const TurnOptions = z
  .strictObject({
    maxRounds: z.number().int('must be an integer').min(1),
    signal: z.custom<AbortSignal>((value) => value instanceof AbortSignal, { message: 'must be an AbortSignal' }),
    onToolCall: fn('a function (event)'),
    loading: z.enum(['eager', 'deferred']),
  } satisfies Record<keyof AgentTurnOptions, z.ZodType>)
  .partial();

export type ToolCallEvent =
  | { type: 'call'; call: ToolCall }
  | { type: 'progress'; call: ToolCall; progress: ToolProgress }
  | { type: 'result'; call: ToolCall; result: AgentToolResult };

export interface AgentTurnResult {
  /** The whole conversation: the messages given, then the turn's assistant and tool messages. */
  messages: ChatMessage[];
  /** The model's final text ('' when the turn stopped at the round bound). */
  text: string;
  /** How many times the model was called. */
  rounds: number;
  /** `answered`: the model replied without tool calls; `max_rounds`: it still asked for tools at the bound. */
  stop: 'answered' | 'max_rounds';
}

export const DEFAULT_MAX_ROUNDS = 10;

/** Runs one turn of `messages` with `model` and the tools of `host`. */
export async function runAgentTurn(
  model: HostModel,
  messages: ChatMessage[],
  host: ToolHost,
  options: AgentTurnOptions = {},
): Promise<AgentTurnResult> {
  checkOptions('runAgentTurn', TurnOptions, options);
  const maxRounds = options.maxRounds ?? DEFAULT_MAX_ROUNDS;
  if (!Array.isArray(messages)) throw new TypeError('runAgentTurn: messages must be an array of chat messages');
  const asked = z.array(ChatMessage).safeParse(messages);
  if (!asked.success) throw new TypeError(`runAgentTurn: messages: ${describeZodError(asked.error).message}`);
  const conversation = [...messages];
  const loading = options.loading ?? 'eager';
  /** Tools `search_tools` found in this turn, by name: loaded for the rest of it. */
  const found = new Map<string, ModelTool>();
  for (let round = 1; round <= maxRounds; round++) {
    options.signal?.throwIfAborted();
    // Read each round: a server that became ready (or went away) changes what the model may call.
    await host.freshen?.();
    const tools: ModelTool[] = host.tools({ loading }).map(({ name, description, parameters }) => ({ name, description, parameters }));
    const listed = new Set(tools.map((tool) => tool.name));
    for (const tool of found.values()) if (!listed.has(tool.name)) tools.push(tool);
    const answer = modelAnswer(await model.complete({ messages: conversation, tools }, { signal: options.signal }));
    conversation.push(answer);
    if (answer.tool_calls.length === 0) {
      return { messages: conversation, text: answer.content, rounds: round, stop: 'answered' };
    }
    const results = await Promise.all(
      answer.tool_calls.map((call) =>
        runToolCall(call, host, options, (result) => {
          for (const { name, description, parameters } of foundTools(result) ?? []) found.set(name, { name, description, parameters });
        }),
      ),
    );
    conversation.push(...results);
  }
  return { messages: conversation, text: '', rounds: maxRounds, stop: 'max_rounds' };
}

/**
 * The model's answer as the schema reads it (`tool_calls` absent is none); a
 * TypeError naming what is wrong when an adapter returned something else.
 */
function modelAnswer(answer: unknown): AssistantMessage {
  const parsed = AssistantMessage.safeParse(answer);
  if (!parsed.success) throw new TypeError(`model.complete answered no assistant message: ${describeZodError(parsed.error).message}`);
  // The answer as given (an adapter's own fields go back to it with the conversation), tool_calls defaulted.
  const given = answer as AssistantMessage;
  return given.tool_calls === undefined ? { ...given, tool_calls: [] } : given;
}

/** One tool call, as the tool message that answers it. Never throws: the model reads what went wrong. */
async function runToolCall(
  call: ToolCall,
  host: ToolHost,
  options: AgentTurnOptions,
  onResult: (result: AgentToolResult) => void,
): Promise<ChatMessage> {
  const args = parseArguments(call.arguments);
  if (typeof args === 'string') return { role: 'tool', tool_call_id: call.id, content: args };
  options.onToolCall?.({ type: 'call', call });
  const result = await host.callTool(call.name, args, {
    signal: options.signal,
    onProgress: options.onToolCall && ((progress) => options.onToolCall?.({ type: 'progress', call, progress })),
  });
  options.onToolCall?.({ type: 'result', call, result });
  onResult(result);
  options.signal?.throwIfAborted();
  const text = resultToText(result);
  return { role: 'tool', tool_call_id: call.id, content: result.details.is_error ? `error: ${text}` : text };
}

/** The call's arguments as an object, or the error text for the model. */
function parseArguments(text: string): Record<string, unknown> | string {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `error: the arguments are not valid JSON (${(err as Error).message}); call the tool again with a JSON object`;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return 'error: the arguments must be a JSON object; call the tool again with one';
  }
  return value as Record<string, unknown>;
}
