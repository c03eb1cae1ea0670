/**
 * `search_tools`: the meta tool a model gets when tool loading is deferred.
 * It finds tools by what the model wants to do; the tools it returns are
 * loaded (their definitions go with the model's next request of the turn:
 * `runAgentTurn` reads them from `details.structured.tools`).
 */
import type { AgentTool, AgentToolResult } from './agent-tool.js';

export const SEARCH_TOOLS_NAME = 'search_tools';
const MAX_LIMIT = 20;

/** A tool found, as the meta tool's structured result carries it. */
export interface FoundTool {
  name: string;
  server: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface SearchToolsOptions {
  /** Ranked tools that can be called now (or start their server when called). */
  search(query: string, limit: number): FoundTool[];
  /** The model loaded these tools: their `on_demand` servers may start now. */
  loaded(tools: FoundTool[]): void;
}

/** The structured result of a `search_tools` call, or null when `result` is not one. */
export function foundTools(result: AgentToolResult): FoundTool[] | null {
  if (result.details.tool !== SEARCH_TOOLS_NAME || result.details.is_error) return null;
  const structured = result.details.structured as { tools?: unknown } | undefined;
  return Array.isArray(structured?.tools) ? (structured.tools as FoundTool[]) : null;
}

export function searchToolsTool(options: SearchToolsOptions): AgentTool {
  return {
    name: SEARCH_TOOLS_NAME,
    description:
      'Find tools for a task. Most tools are not listed until found: describe what you want to do ' +
      '(e.g. "read a file", "take a screenshot of a web page") and the best matching tools become ' +
      'callable in your next step.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What you want to do, in a few words' },
        limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, description: 'How many tools to return (default 8)' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    server: '',
    originalName: SEARCH_TOOLS_NAME,
    alwaysLoad: true,
    async execute(given) {
      // A model may send null, or nothing, as the arguments: read as none, which says what is missing.
      const args: Record<string, unknown> = typeof given === 'object' && given !== null ? given : {};
      const query = typeof args['query'] === 'string' ? args['query'].trim() : '';
      if (query === '') return failure('search_tools needs a "query": a few words saying what you want to do');
      const asked = args['limit'];
      const limit = typeof asked === 'number' && Number.isInteger(asked) ? Math.min(Math.max(asked, 1), MAX_LIMIT) : 8;
      const tools = options.search(query, limit);
      options.loaded(tools);
      const text =
        tools.length === 0
          ? `No tool matches "${query}". Try other words.`
          : `Found ${tools.length} tool(s), callable now:\n` +
            tools.map((tool) => `- ${tool.name}: ${firstLine(tool.description)}`).join('\n');
      return {
        content: [{ type: 'text', text }],
        details: { is_error: false, server: '', tool: SEARCH_TOOLS_NAME, structured: { tools } },
      };
    },
  };
}

function failure(text: string): AgentToolResult {
  return { content: [{ type: 'text', text }], details: { is_error: true, server: '', tool: SEARCH_TOOLS_NAME } };
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}
