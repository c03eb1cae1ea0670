/**
 * A server config as the database stores it: the same JSON, with every
 * secret (each `env` and `headers` value, and the secrets of `auth`) replaced
 * by a sealed value bound to `server:<name>:<field>[:<key>]`.
 */
import type { ServerConfig } from '../schema.js';
import { openAtPaths, sealAtPaths } from './seal-at-paths.js';
import type { SecretKey } from './secret-key.js';
import { SERVER_SECRET_PATHS } from './secret-paths.js';

/** A server config with its secrets sealed: JSON fit for a database column, no secret in it. */
export type StoredServerConfig = { readonly type: ServerConfig['type'] } & Readonly<Record<string, unknown>>;

/** `config` with every secret sealed with `key`, bound to server `name`. */
export function sealServerConfig(key: SecretKey, name: string, config: ServerConfig): StoredServerConfig {
  return sealAtPaths(key, config, SERVER_SECRET_PATHS, contextPrefix(name)) as StoredServerConfig;
}

/**
 * The config `stored` for server `name` with its secrets opened. Not yet
 * validated (it comes from the database): pass it to `parseServerConfig`.
 * Throws SecretOpenError when a secret does not open or is stored in clear.
 */
export function openServerConfig(keys: SecretKey | readonly SecretKey[], name: string, stored: unknown): unknown {
  return openAtPaths(keys, stored, SERVER_SECRET_PATHS, contextPrefix(name));
}

function contextPrefix(name: string): string[] {
  return ['server', name];
}
