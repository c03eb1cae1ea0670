/**
 * The MCP Registry: its client, the server.json schema, and the conversion of
 * a registry entry (with its inputs) into a server config.
 */
// The public surface: what the rest of src/ uses of this domain.
export { toServerConfig, type ConvertedConfig } from './convert.js';
export { installInputs, missingInputs, type InstallInput, type InstallValues } from './inputs.js';
export { chooseOption, installOptions, type InstallOption } from './options.js';
export { ask, askInput, PromptClosedError } from './prompt.js';
export { RegistryClient } from './registry-client.js';
export { MissingInputsError, RegistryError } from './registry-errors.js';
export { type RegistryServer } from './server-json.js';
