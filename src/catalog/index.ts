/**
 * What a server offers, kept fresh: the catalog session invoked while a
 * server is ready (list_changed sync, `subscriptions/listen`, freshness),
 * config diffs, the agent tools made of it (`tools/`: adapter, provider
 * formats, the search_tools and read_result meta tools, spilled results) and
 * the tool search index (`search/`).
 */
// The public surface: what the rest of src/ uses of this domain.
export { computeDiff, type ConfigDiff } from './config-diff.js';
export { createCatalogFreshness, type CatalogFreshness } from './freshness.js';
export { jsonEqual } from './json-equal.js';
export { createToolIndex, type SearchableTool } from './search/tool-index.js';
export { startServerSession } from './session.js';
export { MAX_DESCRIPTION_BYTES, namespaceToolName, resultToText, toAgentTool, type AgentToolOptions, type CallFunction } from './tools/adapter.js';
export { errorResult, type AgentTool, type AgentToolResult, type ExecuteOptions, type ToolProgress } from './tools/agent-tool.js';
export { createReadResultTool, READ_RESULT_TOOL } from './tools/read-result-tool.js';
export { createResultSpill, type ResultSpill } from './tools/result-spill.js';
export { foundTools, SEARCH_TOOLS_NAME, searchToolsTool } from './tools/search-tools-tool.js';
