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
export { PromptNotFoundError } from './services/capabilities/prompts.js';
export type { PromptEntry, RenderedPrompt } from './services/capabilities/prompts.js';
export type { AnthropicTool, OpenAITool } from './services/tool-registry.js';

export { runAgentTurn } from './services/agent-loop.js';
export type { AgentTurnOptions, AgentTurnResult, ToolCallEvent, ToolHost } from './services/agent-loop.js';
export { AssistantMessage, ChatMessage, HostModelError, ModelRequest, ModelTool, ToolCall } from './services/host-model/model.js';
export type { HostModel } from './services/host-model/model.js';
export { createOpenAICompatibleModel, OpenAICompatibleOptions } from './services/host-model/openai-compatible.js';
export { ElicitationResponse } from './services/capabilities/elicitation.js';
export type { ElicitationHandler, ElicitationRequest } from './services/capabilities/elicitation.js';
export { Root } from './services/capabilities/roots.js';

export { ServerConfig, LocalServerConfig, RemoteServerConfig, AuthConfig } from './services/config/schema.js';
export type { ServerConfigInput } from './services/config/schema.js';
export { mergePatch, toResponse, toStorage } from './services/config/credentials.js';
export { createConfigStore } from './services/config/store.js';
export type { ConfigStore } from './services/config/store.js';
export { importServers } from './services/config/import.js';
export { resolveStateDir } from './services/paths.js';
export { beginConsent, ConsentRequiredError, createOAuthProvider, FleetOAuthProvider } from './services/oauth/index.js';
export type { ConsentSession, OAuthProviderOptions, OAuthServerConfig } from './services/oauth/index.js';
export { AuthNotApplicableError } from './services/oauth/server-auth.js';
export type { AuthBegun } from './services/oauth/server-auth.js';

export { ConfigError, ConflictError, ErrorKind, FleetError, NotFoundError, StartFailedError } from './services/errors.js';
export { JournalEvent, ServerState } from './services/journal/events.js';
export { ServerView } from './services/status.js';

export { serverMachine } from './machines/server.machine.js';
export { registryMachine } from './machines/registry.machine.js';
