/**
 * The agent loop over the fleet's tools and the adapters to a host's model
 * (OpenAI-compatible).
 */
// The public surface: what the rest of src/ uses of this domain.
export { HostModelError, type AssistantMessage, type ChatContentPart, type ChatMessage, type HostModel, type StopReason } from './host-model.js';
