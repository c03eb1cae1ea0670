// The public API of mcp-fleet. Every export here is a deliberate decision:
// anything not listed is internal and may change.

export { createMcpHost } from './host.js';
export type { CatalogDiff, CatalogEntry, HostLogger, McpHost, McpHostOptions } from './host.js';
export { createManagementApp } from './http/app.js';
export type { ManagementAppOptions } from './http/app.js';

export { errorResult } from './services/agent-tool.js';
export type { AgentContentBlock, AgentTool, AgentToolResult, ExecuteOptions, ToolProgress } from './services/agent-tool.js';
export { convertCallResult, namespaceToolName, resultToText } from './services/adapter.js';
export { toAnthropicTools, toOpenAITools } from './services/tool-registry.js';
export type { AnthropicTool, OpenAITool } from './services/tool-registry.js';

export { ServerConfig, LocalServerConfig, RemoteServerConfig, AuthConfig } from './services/config/schema.js';
export type { ServerConfigInput } from './services/config/schema.js';
export { mergePatch, toResponse, toStorage } from './services/config/credentials.js';
export { createConfigStore } from './services/config/store.js';
export type { ConfigStore } from './services/config/store.js';
export { importServers } from './services/config/import.js';
export { resolveStateDir } from './services/paths.js';

export { ConfigError, ConflictError, ErrorKind, FleetError, NotFoundError, StartFailedError } from './services/errors.js';
export { JournalEvent, ServerState } from './services/journal/events.js';
export { ServerView } from './services/status.js';

export { serverMachine } from './machines/server.machine.js';
export { registryMachine } from './machines/registry.machine.js';
