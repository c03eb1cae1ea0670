import os from 'node:os';
import path from 'node:path';
import { SERVER_NAME_PATTERN, SERVER_NAME_RULE } from './schema.js';
import { ConfigError } from '../errors.js';

/** Env var that overrides the default state dir (`~/.mcp-fleet`). */
export const STATE_DIR_ENV = 'MCP_FLEET_STATE_DIR';
/** Env var naming a profile: the state dir becomes `<base>/profiles/<name>`. */
export const PROFILE_ENV = 'MCP_FLEET_PROFILE';

/**
 * The state dir: `flag`, else `$MCP_FLEET_STATE_DIR`, else
 * `~/.mcp-fleet`; with `$MCP_FLEET_PROFILE=name`, `<base>/profiles/<name>`.
 * Reads the environment on every call so a profile switch or a test redirect
 * takes effect at once. Empty values count as unset. Always absolute.
 */
export function resolveStateDir(flag?: string): string {
  const base = nonEmpty(flag) ?? nonEmpty(process.env[STATE_DIR_ENV]) ?? path.join(os.homedir(), '.mcp-fleet');
  const profile = nonEmpty(process.env[PROFILE_ENV]);
  if (profile === undefined) return path.resolve(base);
  // The name becomes a path segment: the server-name pattern rules out `..`, `/` and friends.
  if (!SERVER_NAME_PATTERN.test(profile)) {
    throw new ConfigError(`${PROFILE_ENV} ${SERVER_NAME_RULE}`, PROFILE_ENV);
  }
  return path.resolve(base, 'profiles', profile);
}

/** `<stateDir>/mcp_servers.json`: the server list. */
export function configPath(stateDir: string): string {
  return path.join(stateDir, 'mcp_servers.json');
}

/** `<stateDir>/api_token`: the generated management API token. */
export function apiTokenPath(stateDir: string): string {
  return path.join(stateDir, 'api_token');
}

/** `<stateDir>/journal/`: the journal's event store (segments and snapshot). */
export function journalDir(stateDir: string): string {
  return path.join(stateDir, 'journal');
}

/** `<stateDir>/events.jsonl`: the journal as written before the event store; read only for its last `seq`. */
export function journalPath(stateDir: string): string {
  return path.join(stateDir, 'events.jsonl');
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
