/**
 * What a server answers to `tools/call`, made into what the SDK accepts before
 * it sees it. A task handle becomes an error result carrying the task
 * (tasks.ts). A content block of a type this client does not know (a newer
 * revision's, a server's own) becomes a text block holding its JSON: the SDK
 * would refuse the whole result for it, losing the blocks it does know, while
 * the model is better served seeing it, as `convertCallResult` shows one.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { taskPlaceholder } from './tasks.js';
import type { TransportTap } from './transport-proxy.js';

/** The content block types of a tool result, in both protocol eras. */
const KNOWN_BLOCKS: ReadonlySet<unknown> = new Set(['text', 'image', 'audio', 'resource', 'resource_link']);

export function toolResultTap(): TransportTap {
  return new ToolResultTap();
}

/** One per connection: a class, with its set of calls in flight there only while one is. */
class ToolResultTap implements TransportTap {
  private toolCalls: Set<string | number> | null = null;

  sent(message: JSONRPCMessage): void {
    if (!('method' in message)) return;
    if (message.method === 'tools/call' && 'id' in message) (this.toolCalls ??= new Set()).add(message.id);
    // A call the client gave up on (aborted, timed out) may never be answered: it is forgotten, so the set stays bounded.
    if (message.method === 'notifications/cancelled') this.toolCalls?.delete((message.params as { requestId?: string | number } | undefined)?.requestId ?? '');
  }

  delivered(message: JSONRPCMessage): JSONRPCMessage {
    if (this.toolCalls === null || !('id' in message) || message.id === undefined || !this.toolCalls.delete(message.id)) return message;
    if (this.toolCalls.size === 0) this.toolCalls = null;
    if (!('result' in message)) return message;
    const result = message.result as Record<string, unknown>;
    const answer = taskPlaceholder(result) ?? withKnownBlocks(result);
    return answer === result ? message : ({ ...message, result: answer } as JSONRPCMessage);
  }
}

/** `result`, or a copy whose blocks of unknown types are text holding their JSON. */
function withKnownBlocks(result: Record<string, unknown>): Record<string, unknown> {
  const { content } = result;
  if (!Array.isArray(content) || content.every(isKnownBlock)) return result;
  return { ...result, content: content.map((block: unknown) => (isKnownBlock(block) ? block : { type: 'text', text: JSON.stringify(block) })) };
}

function isKnownBlock(block: unknown): boolean {
  return typeof block === 'object' && block !== null && KNOWN_BLOCKS.has((block as { type?: unknown }).type);
}
