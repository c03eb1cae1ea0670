// The public API of mcp-fleet. Every export here is a deliberate decision:
// anything not listed is internal and may change.

export { createMcpHost } from './host.js';
export type { CatalogCounts, CatalogDiff, CatalogEntry, HostLogger, McpHost, McpHostOptions } from './host.js';
export { createManagementApp } from './http/app.js';
export type { ManagementAppOptions } from './http/app.js';

export { errorResult } from './services/tools/agent-tool.js';
export type { AgentContentBlock, AgentTool, AgentToolResult, ExecuteOptions, ToolProgress } from './services/tools/agent-tool.js';
export { convertCallResult, namespaceToolName, resultToText } from './services/tools/adapter.js';
export { toAnthropicTools, toOpenAIResponsesTools, toOpenAITools } from './services/tools/provider-formats.js';
export { PromptNotFoundError } from './services/capabilities/prompts.js';
export type { PromptEntry, RenderedPrompt } from './services/capabilities/prompts.js';
export type { AnthropicTool, OpenAITool } from './services/tools/provider-formats.js';
export type {
  AnthropicToolSearchTool,
  AnthropicToolsOptions,
  DeferLoading,
  OpenAIResponsesFunctionTool,
  OpenAIResponsesToolsOptions,
  OpenAIToolSearchTool,
} from './services/tools/provider-formats.js';

export type { SearchOptions, ToolSearchResult } from './host/tool-search.js';
export { SEARCH_TOOLS_NAME, foundTools } from './services/tools/search-tools-tool.js';
export type { FoundTool } from './services/tools/search-tools-tool.js';

export type { ApprovalDecider, ApprovalDecision, ApprovalRequest, ApproveCallback, PendingApproval } from './services/approvals/approvals.js';

export { runAgentTurn } from './services/agent/agent-loop.js';
export type { AgentTurnOptions, AgentTurnResult, ToolCallEvent, ToolHost } from './services/agent/agent-loop.js';
export { AssistantMessage, ChatMessage, HostModelError, ModelRequest, ModelTool, ToolCall } from './services/agent/host-model.js';
export type { HostModel } from './services/agent/host-model.js';
export { createOpenAICompatibleModel, OpenAICompatibleOptions } from './services/agent/openai-compatible.js';
export { ElicitationResponse } from './services/capabilities/elicitation.js';
export type { ElicitationHandler, ElicitationRequest } from './services/capabilities/elicitation.js';
export { Root } from './services/capabilities/roots.js';

export { ServerConfig, LocalServerConfig, RemoteServerConfig, AuthConfig } from './services/config/schema.js';
export type { ServerConfigInput } from './services/config/schema.js';
export { toResponse, toStorage } from './services/config/masking.js';
export { mergePatch } from './services/config/merge-patch.js';
export { createConfigStore } from './services/config/store.js';
export type { ConfigStore, StoredEntry } from './services/config/store.js';
export { importServers } from './services/config/import.js';
export { resolveStateDir } from './services/config/paths.js';
export { beginConsent, ConsentRequiredError, createOAuthProvider, FleetOAuthProvider } from './services/oauth/index.js';
export type { ConsentSession, OAuthProviderOptions, OAuthServerConfig } from './services/oauth/index.js';
export { AuthNotApplicableError, CallbackRefusedError } from './services/oauth/server-auth.js';
export { createFileCredentialsStore } from './services/oauth/credentials-store.js';
export type { CredentialsStore } from './services/oauth/credentials-store.js';
export { memoryPendingConsents } from './services/oauth/pending-consents.js';
export type { PendingConsents } from './services/oauth/pending-consents.js';
export { DatabaseUnavailableError } from './services/database/errors.js';
export type { AuthBegun } from './services/oauth/server-auth.js';
export type { ClientMetadataDocument } from './services/oauth/client-metadata-document.js';

export {
  ConfigError,
  ConflictError,
  ErrorKind,
  FleetError,
  HostNotRunningError,
  NotFoundError,
  NotReadyError,
  PreconditionFailedError,
  StartFailedError,
} from './services/support/errors.js';
export { JournalEvent, ServerState } from './services/journal/events.js';
export { LastRun, ServerView } from './services/journal/server-view.js';
export { createMemoryEventStore } from './services/journal/event-store.js';
export type { EventStore, JournalSnapshot } from './services/journal/event-store.js';
export { createFileEventStore } from './services/journal/file-event-store.js';
export type { FileEventStoreOptions } from './services/journal/file-event-store.js';

export { serverMachine } from './machines/server.machine.js';
export { registryMachine } from './machines/registry.machine.js';
