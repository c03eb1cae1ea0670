import { z } from 'zod';
import { ConfigError } from '../support/errors.js';
import { LocalServerConfig, RemoteServerConfig, ServerConfig } from './schema.js';
import type { AuthConfig } from './schema.js';
import { describeZodError } from './validate.js';

/** What replaces a secret in every response, log line and error. */
export const MASK = '••••';
/** A secret needs at least this many characters before its last 4 are shown. */
const SHOW_TAIL_FROM_LENGTH = 12;

/** A secret as a response shows it (SPEC §3). */
export const MaskedSecret = z.object({
  /** The stored value is a non-empty string. */
  has_value: z.boolean(),
  /** `••••` plus the last 4 characters when the value has at least 12, else `••••`. */
  masked: z.string(),
});
export type MaskedSecret = z.infer<typeof MaskedSecret>;

/** `auth` in a response: the config minus its secrets, plus presence flags and masks. */
export const AuthResponse = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('none') }),
  z.object({
    kind: z.literal('bearer'),
    /** A token is stored. */
    has_token: z.boolean(),
    /** The token's mask, `null` when there is none. */
    token_masked: z.string().nullable(),
  }),
  z.object({
    kind: z.literal('oauth'),
    client_id: z.string().nullable(),
    /** A pre-registered client secret is stored. */
    has_client_secret: z.boolean(),
    /** The client secret's mask, `null` when there is none. */
    client_secret_masked: z.string().nullable(),
    scopes: z.array(z.string()),
    callback_port: z.number().nullable(),
  }),
]);
export type AuthResponse = z.infer<typeof AuthResponse>;

const MaskedMap = z.record(z.string(), MaskedSecret);

/**
 * A server config as every route returns it: `toResponse()`, no secret anywhere.
 * Derived from the config schemas, so every non-secret field shows as stored.
 */
export const ServerConfigResponse = z.discriminatedUnion('type', [
  LocalServerConfig.extend({ env: MaskedMap }),
  RemoteServerConfig.extend({ headers: MaskedMap, auth: AuthResponse }),
]);
export type ServerConfigResponse = z.infer<typeof ServerConfigResponse>;

/** The full config, secrets included, as written to `mcp_servers.json`. Only the store may use it. */
export function toStorage(config: ServerConfig): ServerConfig {
  return structuredClone(config);
}

/** The config with every secret masked (SPEC §3): the only form a route, log or event may carry. */
export function toResponse(config: ServerConfig): ServerConfigResponse {
  if (config.type === 'local') {
    const { env, ...rest } = config;
    return { ...structuredClone(rest), env: maskMap(env) };
  }
  const { headers, auth, ...rest } = config;
  return { ...structuredClone(rest), headers: maskMap(headers), auth: authResponse(auth) };
}

/** `••••` plus the last 4 characters when `value` has at least 12, else `••••`. */
export function maskSecret(value: string): string {
  return value.length >= SHOW_TAIL_FROM_LENGTH ? MASK + value.slice(-4) : MASK;
}

function maskMap(map: Record<string, string>): Record<string, MaskedSecret> {
  return Object.fromEntries(
    Object.entries(map).map(([key, value]) => [key, { has_value: value.length > 0, masked: maskSecret(value) }]),
  );
}

function authResponse(auth: AuthConfig): AuthResponse {
  switch (auth.kind) {
    case 'none':
      return { kind: 'none' };
    case 'bearer':
      return { kind: 'bearer', has_token: auth.token.length > 0, token_masked: maskSecret(auth.token) };
    case 'oauth':
      return {
        kind: 'oauth',
        client_id: auth.client_id,
        has_client_secret: auth.client_secret !== null,
        client_secret_masked: auth.client_secret === null ? null : maskSecret(auth.client_secret),
        scopes: [...auth.scopes],
        callback_port: auth.callback_port,
      };
  }
}

/** Every secret value of a config (env and header values, token, client secret), for redaction. */
export function secretValues(config: ServerConfig): string[] {
  const values =
    config.type === 'local'
      ? Object.values(config.env)
      : [
          ...Object.values(config.headers),
          ...(config.auth.kind === 'bearer' ? [config.auth.token] : []),
          ...(config.auth.kind === 'oauth' && config.auth.client_secret !== null ? [config.auth.client_secret] : []),
        ];
  return values.filter((v) => v.length > 0);
}

/** Values shorter than this are not redacted: `"1"` or `"on"` would blank out every number and word. */
export const MIN_REDACTED_LENGTH = 4;

/**
 * Replaces every occurrence of every secret in `text` with `••••`, in its raw
 * and its JSON-escaped form (log lines are JSON). Used for stderr tails, error
 * messages and log lines alike.
 */
export function redact(text: string, secrets: Iterable<string>): string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_REDACTED_LENGTH) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
  }
  if (forms.size === 0) return text;
  // One left-to-right pass, the longest form winning at each position: a secret
  // inside a longer one, or inside the mask itself, cannot be half-replaced.
  // No RegExp: an alternation of long values can exceed the engine's limits.
  const unique = [...forms].sort((a, b) => b.length - a.length);
  const next = unique.map((form) => text.indexOf(form));
  let out = '';
  let from = 0;
  for (;;) {
    let best = -1;
    for (const [i, at] of next.entries()) {
      if (at !== -1 && (best === -1 || at < next[best]!)) best = i;
    }
    if (best === -1) return out + text.slice(from);
    const at = next[best]!;
    out += text.slice(from, at) + MASK;
    from = at + unique[best]!.length;
    for (const [i, prev] of next.entries()) {
      if (prev !== -1 && prev < from) next[i] = text.indexOf(unique[i]!, from);
    }
  }
}

/** Keys whose value a PATCH merges key by key instead of replacing. */
type SecretMapKey = 'env' | 'headers';

/**
 * Applies a PATCH (SPEC §3) to a stored config, purely. The patch is any
 * subset of the config's fields. In `env` and `headers`, and for
 * `auth.token` / `auth.client_secret`: omitted keeps, a string replaces,
 * `null` deletes. `tools` merges field by field; other fields replace.
 * Changing `auth.kind` drops every field of the old kind (its secret, and for
 * oauth also client_id, scopes and callback_port, which belong to that
 * provider). Changing `type` keeps only the common fields, so the new type's
 * required fields must be in the patch. The result is validated; a
 * ConfigError names the field and never contains a value.
 */
export function mergePatch(current: ServerConfig, patch: unknown): ServerConfig {
  if (!isPlainObject(patch)) throw new ConfigError('patch: expected an object', '');
  const typeChanges = 'type' in patch && patch.type !== current.type;
  const base: Record<string, unknown> = typeChanges ? commonFields(current) : { ...current };
  // A Map, then fromEntries: a patch key named `__proto__` stays an own (and so rejected) field.
  const candidate = new Map(Object.entries(base));
  for (const [key, value] of Object.entries(patch)) {
    if (key === 'env' || key === 'headers') {
      candidate.set(key, mergeSecretMap(key, base[key], value));
    } else if (key === 'auth') {
      candidate.set(key, mergeAuth(base.auth, value));
    } else if (key === 'tools' && isPlainObject(value) && isPlainObject(base.tools)) {
      candidate.set(key, { ...base.tools, ...value });
    } else {
      candidate.set(key, value);
    }
  }
  const result = ServerConfig.safeParse(Object.fromEntries(candidate));
  if (!result.success) {
    const { message, field } = describeZodError(result.error);
    throw new ConfigError(message, field);
  }
  return result.data;
}

function commonFields(config: ServerConfig): Record<string, unknown> {
  return {
    enabled: config.enabled,
    timeout_seconds: config.timeout_seconds,
    call_timeout_seconds: config.call_timeout_seconds,
    max_concurrent_calls: config.max_concurrent_calls,
    tools: config.tools,
  };
}

function mergeSecretMap(key: SecretMapKey, stored: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) {
    throw new ConfigError(`${key}: expected an object of strings (null deletes one key)`, key);
  }
  const merged = new Map(Object.entries(isPlainObject(stored) ? stored : {}));
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) merged.delete(name);
    else if (typeof value === 'string') merged.set(name, value);
    else throw new ConfigError(`${key}.${name}: expected string or null`, `${key}.${name}`);
  }
  // fromEntries defines own properties, so a key named `__proto__` stays data.
  return Object.fromEntries(merged);
}

const AUTH_SECRETS = ['token', 'client_secret'] as const;

function mergeAuth(stored: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) throw new ConfigError('auth: expected an object', 'auth');
  const storedAuth = isPlainObject(stored) ? stored : {};
  const kindChanges = 'kind' in patch && patch.kind !== storedAuth.kind;
  const merged = new Map(kindChanges ? [] : Object.entries(storedAuth));
  for (const [key, value] of Object.entries(patch)) {
    if ((AUTH_SECRETS as readonly string[]).includes(key)) {
      if (value === null) merged.delete(key);
      else if (typeof value === 'string') merged.set(key, value);
      else throw new ConfigError(`auth.${key}: expected string or null`, `auth.${key}`);
    } else {
      merged.set(key, value);
    }
  }
  return Object.fromEntries(merged);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
