/**
 * Agent tools in the tool formats of the model providers' own APIs, for hosts
 * that pass `host.tools()` straight to a provider SDK.
 *
 * Deferred loading is the providers' own tool search: the request still carries
 * every tool, the deferred ones marked `defer_loading: true`, plus the
 * provider's tool search tool, which finds deferred tools when the model needs
 * them. Without a `deferLoading` option every function returns exactly the
 * plain format. An app-only tool (MCP Apps) is left out of every format.
 */
import type { AgentTool } from './agent-tool.js';
import { modelVisible } from '../../apps/tool-meta.js';

/**
 * Which tools a request defers: `true` defers every tool, a predicate the tools
 * it returns true for. A tool with `alwaysLoad` is never deferred.
 */
export type DeferLoading = boolean | ((tool: AgentTool) => boolean);

/** A tool in OpenAI's Chat Completions `tools` format. */
export interface OpenAITool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown>; strict?: boolean };
}

/**
 * A tool in Anthropic's Messages API `tools` format.
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool
 */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  /** Kept out of the model's context until the tool search tool returns it. Only set on deferred tools. */
  defer_loading?: boolean;
}

/**
 * Anthropic's server-side tool search tool, an entry of the same `tools`
 * array. It is never deferred itself, so a request where every agent tool is
 * deferred still has the one non-deferred tool the API requires.
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool
 */
export interface AnthropicToolSearchTool {
  type: 'tool_search_tool_bm25_20251119' | 'tool_search_tool_regex_20251119';
  name: 'tool_search_tool_bm25' | 'tool_search_tool_regex';
}

export interface AnthropicToolsOptions {
  /** Which tools get `defer_loading: true`; absent or `false` defers none. */
  deferLoading?: DeferLoading;
  /** The search tool: `bm25` takes natural-language queries (the default), `regex` Python `re.search` patterns. */
  toolSearch?: 'bm25' | 'regex';
}

/**
 * A function tool in OpenAI's Responses API `tools` format: flat, no
 * `function` wrapper.
 * https://developers.openai.com/api/docs/guides/tools-tool-search
 */
export interface OpenAIResponsesFunctionTool {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** `null` when not given: OpenAI's default applies (see `toOpenAIResponsesTools`). */
  strict: boolean | null;
  /** Schema loaded only when the tool search tool returns the tool. Only set on deferred tools. */
  defer_loading?: boolean;
}

/**
 * OpenAI's hosted tool search tool: searched by OpenAI (its `execution`
 * defaults to `server`).
 * https://developers.openai.com/api/docs/guides/tools-tool-search
 */
export interface OpenAIToolSearchTool {
  type: 'tool_search';
}

export interface OpenAIResponsesToolsOptions {
  /** Forwarded as each function's `strict`; not validated here. */
  strict?: boolean;
  /** Which tools get `defer_loading: true`; absent or `false` defers none. */
  deferLoading?: DeferLoading;
}

const ANTHROPIC_TOOL_SEARCH = {
  bm25: { type: 'tool_search_tool_bm25_20251119', name: 'tool_search_tool_bm25' },
  regex: { type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' },
} as const satisfies Record<'bm25' | 'regex', AnthropicToolSearchTool>;

/** The tools a model may see: an app-only tool (handed over from `allTools()`) never reaches a provider. */
function forModel(tools: AgentTool[]): AgentTool[] {
  return tools.every((tool) => modelVisible(tool.ui)) ? tools : tools.filter((tool) => modelVisible(tool.ui));
}

function isDeferred(tool: AgentTool, deferLoading: DeferLoading | undefined): boolean {
  if (tool.alwaysLoad === true || deferLoading === undefined || deferLoading === false) return false;
  return deferLoading === true || deferLoading(tool);
}

/**
 * Tools in OpenAI's format, schemas verbatim. `strict` is only forwarded when
 * given: it is not validated here, the provider enforces it (and rejects
 * schemas that do not meet its strict-mode rules).
 *
 * Chat Completions has no deferred loading: OpenAI documents tool search for
 * the Responses API only, in its own tool shape — see `toOpenAIResponsesTools`.
 */
export function toOpenAITools(tools: AgentTool[], options: { strict?: boolean } = {}): OpenAITool[] {
  return forModel(tools).map((tool) => {
    const fn: OpenAITool['function'] = { name: tool.name, description: tool.description, parameters: tool.parameters };
    if (options.strict !== undefined) fn.strict = options.strict;
    return { type: 'function', function: fn };
  });
}

/**
 * Tools in Anthropic's format, schemas verbatim.
 *
 * With `deferLoading`, deferred tools get `defer_loading: true` and the tool
 * search tool of `toolSearch` (default `bm25`) comes first; when no tool ends
 * up deferred the output is the plain format, without a search tool. Deferring
 * every agent tool is valid: the search tool is the non-deferred one. Anthropic
 * takes at most 10,000 deferred tools a request and advises keeping the 3–5
 * most used tools loaded (`alwaysLoad`); neither is checked here.
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool
 */
export function toAnthropicTools(tools: AgentTool[]): AnthropicTool[];
export function toAnthropicTools(
  tools: AgentTool[],
  options: AnthropicToolsOptions,
): Array<AnthropicToolSearchTool | AnthropicTool>;
export function toAnthropicTools(
  tools: AgentTool[],
  options: AnthropicToolsOptions = {},
): Array<AnthropicToolSearchTool | AnthropicTool> {
  const out = forModel(tools).map((tool) => {
    const entry: AnthropicTool = { name: tool.name, description: tool.description, input_schema: tool.parameters };
    if (isDeferred(tool, options.deferLoading)) entry.defer_loading = true;
    return entry;
  });
  if (!out.some((entry) => entry.defer_loading)) return out;
  return [{ ...ANTHROPIC_TOOL_SEARCH[options.toolSearch ?? 'bm25'] }, ...out];
}

/**
 * Tools in OpenAI's Responses API format, schemas verbatim, for
 * `client.responses.create({ tools })`.
 *
 * `strict` is `null` unless given; OpenAI then applies its default, and for
 * Responses that is to normalise the schema into strict mode, which can make
 * optional arguments required. Pass `strict: false` to keep MCP schemas as
 * the servers wrote them.
 *
 * With `deferLoading`, deferred tools get `defer_loading: true` and the hosted
 * `tool_search` tool comes first; when no tool ends up deferred there is no
 * search tool. A deferred function still shows its name and description to the
 * model, only its parameters wait for the search. OpenAI supports tool search
 * on gpt-5.4 and later models.
 * https://developers.openai.com/api/docs/guides/tools-tool-search
 */
export function toOpenAIResponsesTools(
  tools: AgentTool[],
  options: OpenAIResponsesToolsOptions = {},
): Array<OpenAIToolSearchTool | OpenAIResponsesFunctionTool> {
  const out = forModel(tools).map((tool) => {
    const entry: OpenAIResponsesFunctionTool = {
      type: 'function',
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      strict: options.strict ?? null,
    };
    if (isDeferred(tool, options.deferLoading)) entry.defer_loading = true;
    return entry;
  });
  if (!out.some((entry) => entry.defer_loading)) return out;
  return [{ type: 'tool_search' }, ...out];
}
