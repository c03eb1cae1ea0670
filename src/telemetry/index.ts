/**
 * OpenTelemetry spans and metrics (through @opentelemetry/api only), and the
 * logger that redacts secrets.
 */
// The public surface: what the rest of src/ uses of this domain.
export { ATTR } from './attributes.js';
export { observeSync, type SyncTrigger } from './catalog.js';
export { observeHandshake, observeToolListing, traceConnect } from './connects.js';
export { displayEndpoint, ExportFailureLog, exportSecrets, otlpEndpoint, unusableEndpointVariables, type ExportFailureSink, type ExportSignal } from './export-failures.js';
export { forgetServer, noteServerState } from './instruments.js';
export { createLifecycles, nameConnection, type LifecycleOwner, type Lifecycles, type LifecycleSpan } from './lifecycle.js';
export { createLogger, SecretSet, type Logger } from './logger.js';
export { countRefresh } from './oauth.js';
export { observeRequest } from './requests.js';
export { noteSession } from './sessions.js';
export { startToolCall, toolCallTelemetry, type ToolCallTarget } from './tool-calls.js';
export { SCOPE_VERSION } from './tracer.js';
