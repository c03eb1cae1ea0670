/**
 * The fleet's configuration: the server config schema and the request
 * schemas, validation (with readable zod errors), the stores (the file
 * `mcp_servers.json` with its versions, and PostgreSQL), hand-edit watching,
 * import from other clients, state-dir paths, masking of secrets in every
 * response, log line and event, the merge of a PATCH, and secrets sealed at
 * rest (`secrets/`).
 */
// The public surface: what the rest of src/ uses of this domain.
export { importServers } from './import.js';
export { MASK, MIN_REDACTED_LENGTH, redact, secretValues, secretValuesOf, ServerConfigResponse, toResponse } from './masking.js';
export { mergePatch } from './merge-patch.js';
export { apiTokenPath, configPath, journalDir, journalPath, PROFILE_ENV, resolveStateDir, STATE_DIR_ENV } from './paths.js';
export { createPgConfigStore } from './pg-config-store.js';
export { ServerCreate, ServerPatch } from './requests.js';
export { AuthKind, DEFAULT_MAX_RESULT_BYTES, LoggingLevel, RemoteServerConfig, SERVER_NAME_PATTERN, SERVER_NAME_RULE, ServerName, type ApprovalSetting, type AuthConfig, type LocalServerConfig, type ServerConfig, type ServerConfigInput, type ToolFilter } from './schema.js';
export { openCredentialsRecord, sealCredentialsRecord } from './secrets/seal-credentials.js';
export { SecretOpenError } from './secrets/sealed.js';
export { loadSecretKey, SecretKeyError, type SecretKey } from './secrets/secret-key.js';
export { ConfigEntryInvalidError, ConfigFileBrokenError, createConfigStore, type ConfigStore } from './store.js';
export { parseServerConfig, quoteName } from './validate.js';
export { describeZodError } from './zod-errors.js';
