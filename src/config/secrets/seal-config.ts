/**
 * A server config as the database stores it: the same JSON, with every
 * secret (each `env` and `headers` value, and the secrets of `auth`) replaced
 * by a sealed value bound to `server:<name>:<field>[:<key>]`, and a remote
 * `url` whose query carries a credential (`?api_key=…`) sealed whole at
 * `server:<name>:url`.
 */
import type { ServerConfig, ServerConfigInput } from '../schema.js';
import { openAtPaths, openUrl, sealAtPaths, sealUrl } from './seal-at-paths.js';
import type { SecretKey } from './secret-key.js';
import { contextOf, SERVER_SECRET_PATHS } from './secret-paths.js';

/** A server config with its secrets sealed: JSON fit for a database column, no secret in it. */
export type StoredServerConfig = { readonly type: ServerConfig['type'] } & Readonly<Record<string, unknown>>;

/** `config` (parsed, or as a write stores it: short-form.ts) with every secret sealed with `key`, bound to server `name`. */
export function sealServerConfig(key: SecretKey, name: string, config: ServerConfig | ServerConfigInput): StoredServerConfig {
  const sealed = sealAtPaths(key, config, SERVER_SECRET_PATHS, contextPrefix(name)) as StoredServerConfig;
  // The URL's credential is a secret too (docs/credentials.md): a pg_dump must not show it.
  return config.type === 'remote' ? { ...sealed, url: sealUrl(key, config.url, urlContext(name)) } : sealed;
}

/**
 * The config `stored` for server `name` with its secrets opened. Not yet
 * validated (it comes from the database): pass it to `parseServerConfig`.
 * Throws SecretOpenError when a secret does not open or is stored in clear.
 */
export function openServerConfig(keys: SecretKey | readonly SecretKey[], name: string, stored: unknown): unknown {
  const opened = openAtPaths(keys, stored, SERVER_SECRET_PATHS, contextPrefix(name));
  if (typeof opened !== 'object' || opened === null || !Object.hasOwn(opened, 'url')) return opened;
  return { ...opened, url: openUrl(keys, (opened as Record<string, unknown>).url, urlContext(name)) };
}

function urlContext(name: string): string {
  return contextOf([...contextPrefix(name), 'url']);
}

function contextPrefix(name: string): string[] {
  return ['server', name];
}
