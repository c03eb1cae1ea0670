/**
 * One connection to one MCP server: local (child process) and remote
 * (Streamable HTTP / SSE) transports and handshakes, the protocol era
 * negotiation and its remembered verdicts, tool listing, calls (limits,
 * deadlines, tasks, request `_meta`), failure kinds, stderr tails, and the
 * client capabilities the server may use (`capabilities/`: sampling,
 * elicitation, roots, logging, resources, prompts).
 */
// The public surface: what the rest of src/ uses of this domain.
export { createClientHandlers, type ClientHandlers } from './capabilities/client-handlers.js';
export { type ElicitationHandler } from './capabilities/elicitation.js';
export { forwardServerLog } from './capabilities/logging.js';
export { createPromptRegistry, PromptNotFoundError, type PromptEntry, type PromptRegistry, type RenderedPrompt } from './capabilities/prompts.js';
export { resourceAgentTools } from './capabilities/resources.js';
export { parseRoots, type Root } from './capabilities/roots.js';
export { type CacheScope } from './cache-scope.js';
export { createCallLimiter } from './call-limiter.js';
export { type RequestingClient } from './capabilities/forwarding.js';
export { CLIENT_INFO, connect, filterTools, type ConnectOptions, type ServerConnection } from './connection.js';
export { eraKey, verdictOf } from './era-negotiation.js';
export { eraVerdictsPath, fileEraVerdicts, memoryEraVerdicts, type EraVerdicts } from './era-verdicts.js';
export { openLiveConnection, watchLiveConnection, type LiveConnection } from './live-connection.js';
export { notificationsOf } from './notifications.js';
export { holdSubscription, releaseSubscription } from './resource-subscriptions.js';
export { networkFailure } from './reachability.js';
export { describeRemoteFailure } from './remote-transport.js';
export { listEveryPage, noneIfUnhandled, ttlOf } from './tool-listing.js';
