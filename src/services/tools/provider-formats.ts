/**
 * Agent tools in the tool formats of the model providers' own APIs, for hosts
 * that pass `host.tools()` straight to a provider SDK.
 */
import type { AgentTool } from './agent-tool.js';

/** A tool in OpenAI's Chat Completions `tools` format. */
export interface OpenAITool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown>; strict?: boolean };
}

/** A tool in Anthropic's Messages API `tools` format. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/**
 * Tools in OpenAI's format, schemas verbatim. `strict` is only forwarded when
 * given: it is not validated here, the provider enforces it (and rejects
 * schemas that do not meet its strict-mode rules).
 */
export function toOpenAITools(tools: AgentTool[], options: { strict?: boolean } = {}): OpenAITool[] {
  return tools.map((tool) => {
    const fn: OpenAITool['function'] = { name: tool.name, description: tool.description, parameters: tool.parameters };
    if (options.strict !== undefined) fn.strict = options.strict;
    return { type: 'function', function: fn };
  });
}

/** Tools in Anthropic's format, schemas verbatim. */
export function toAnthropicTools(tools: AgentTool[]): AnthropicTool[] {
  return tools.map((tool) => ({ name: tool.name, description: tool.description, input_schema: tool.parameters }));
}
