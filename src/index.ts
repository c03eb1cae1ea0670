// The public API of mcp-fleet. Every export here is a deliberate decision:
// anything not listed is internal and may change.

export { createMcpHost } from './host.js';
export type { CatalogCounts, CatalogDiff, CatalogEntry, HostLogger, InputsView, McpHost, McpHostOptions, ServerLink, SessionView } from './host.js';
export type { UpdateOptions } from './host/management.js';
export { createManagementApp } from './http/app.js';
export type { ManagementAppOptions } from './http/app.js';

export { errorResult } from './catalog/tools/agent-tool.js';
export type { AgentContentBlock, AgentTool, AgentToolResult, ExecuteOptions, ToolProgress } from './catalog/tools/agent-tool.js';
export { convertCallResult, namespaceToolName, resultToText } from './catalog/tools/adapter.js';
export { toAnthropicTools, toOpenAIResponsesTools, toOpenAITools } from './catalog/tools/provider-formats.js';
export { PromptNotFoundError } from './connection/capabilities/prompts.js';
export type { PromptEntry, RenderedPrompt } from './connection/capabilities/prompts.js';
export type { AnthropicTool, OpenAITool } from './catalog/tools/provider-formats.js';
export type {
  AnthropicToolSearchTool,
  AnthropicToolsOptions,
  DeferLoading,
  OpenAIResponsesFunctionTool,
  OpenAIResponsesToolsOptions,
  OpenAIToolSearchTool,
} from './catalog/tools/provider-formats.js';

export type { SearchOptions, ToolSearchResult } from './host/tool-search.js';

export { APP_MIME_TYPE, AppCsp, AppPermissions, ToolUi, ToolUiRef, ToolVisibility, UI_EXTENSION } from './apps/index.js';
export type { AppBridgeOptions, AppMessage, AppModelContext, AppOpenLink, AppSession, AppSize } from './apps/index.js';
export { SEARCH_TOOLS_NAME, foundTools } from './catalog/tools/search-tools-tool.js';
export type { FoundTool } from './catalog/tools/search-tools-tool.js';

export type { ApprovalDecider, ApprovalDecision, ApprovalRequest, ApproveCallback, PendingApproval } from './approvals/approvals.js';

export { runAgentTurn } from './agent/agent-loop.js';
export type { AgentTurnOptions, AgentTurnResult, ToolCallEvent, ToolHost } from './agent/agent-loop.js';
export { AssistantMessage, ChatMessage, HostModelError, ModelRequest, ModelTool, ToolCall } from './agent/host-model.js';
export type { HostModel } from './agent/host-model.js';
export { createOpenAICompatibleModel, OpenAICompatibleOptions } from './agent/openai-compatible.js';
export { ElicitationResponse } from './connection/capabilities/elicitation.js';
export type { ElicitationHandler, ElicitationRequest } from './connection/capabilities/elicitation.js';
export { Root } from './connection/capabilities/roots.js';

export { ServerConfig, LocalServerConfig, RemoteServerConfig, AuthConfig, AccessRule } from './config/schema.js';
export { ADMIN_PRINCIPAL, Me, OIDC_CLIENT_SECRET_ENV, Principal, Quota, createFileUsersStore, USER_KEY_PREFIX, UserExistsError } from './users/index.js';
export type { OidcOptions, PrincipalInput, UsersStore, UserView } from './users/index.js';
export type { ServerConfigInput } from './config/schema.js';
export { toResponse, toStorage } from './config/masking.js';
export { mergePatch } from './config/merge-patch.js';
export { ConfigEntryInvalidError, ConfigFileBrokenError, createConfigStore } from './config/store.js';
export type { ConfigStore, StoredEntry } from './config/store.js';
export { importServers } from './config/import.js';
export { resolveStateDir } from './config/paths.js';
export { beginConsent, ConsentRequiredError, createOAuthProvider, FleetOAuthProvider } from './auth/index.js';
export type { ConsentSession, OAuthProviderOptions, OAuthServerConfig } from './auth/index.js';
export { AuthNotApplicableError, CallbackRefusedError } from './auth/server-auth.js';
export type { CallbackBrowser } from './auth/server-auth.js';
export type { ConsentBinding } from './auth/consent-binding.js';
export { createFileCredentialsStore } from './auth/credentials-store.js';
export type { CredentialsStore } from './auth/credentials-store.js';
export { memoryPendingConsents } from './auth/pending-consents.js';
export type { PendingConsents } from './auth/pending-consents.js';
export { DatabaseUnavailableError } from './fleet/database-errors.js';
export type { AuthBegun } from './auth/server-auth.js';
export type { ClientMetadataDocument } from './auth/client-metadata-document.js';

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
} from './errors.js';
export { JournalEvent, ServerState } from './journal/events.js';
export { LastRun, ServerView } from './journal/server-view.js';
export { createMemoryEventStore } from './journal/event-store.js';
export type { EventStore, JournalSnapshot } from './journal/event-store.js';
export { createFileEventStore } from './journal/file-event-store.js';
export type { FileEventStoreOptions } from './journal/file-event-store.js';

export { serverMachine } from './machines/server.machine.js';
export { registryMachine } from './machines/registry.machine.js';
