/**
 * A tool result's content blocks as its server sent them, beside the agent
 * result made of them. The agent's form is text and media for a model: a
 * resource link, an embedded resource or a block's annotations become text or
 * go. The gateway hands a result on to MCP clients, which read those blocks,
 * so it answers with these when the result was passed whole (not cut to
 * `max_result_bytes`, not spilled). Kept per result object: nothing outlives
 * the result it belongs to.
 */
import type { ContentBlock } from '@modelcontextprotocol/client';
import type { AgentToolResult } from './agent-tool.js';

const sent = new WeakMap<AgentToolResult, ContentBlock[]>();

/** Keeps `content` as what `result` was made of, when the result holds all of it. */
export function keepSentContent(result: AgentToolResult, content: unknown): AgentToolResult {
  if (Array.isArray(content) && result.details.truncated !== true && result.details.spilled === undefined) sent.set(result, content as ContentBlock[]);
  return result;
}

/** The blocks the server sent for `result`, when it holds all of them; else undefined. */
export function sentContentOf(result: AgentToolResult): ContentBlock[] | undefined {
  return sent.get(result);
}
