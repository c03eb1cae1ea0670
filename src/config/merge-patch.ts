/** A PATCH of a stored server config: which fields it keeps, replaces or deletes. */
import type { z } from 'zod';
import { EACH, SERVER_SECRET_PATHS } from './secrets/secret-paths.js';
import { ConfigError } from '../errors.js';
import { describeZodError } from './zod-errors.js';
import { ServerPatch } from './requests.js';
import { CONFIG_PARSE, LocalServerConfig, RemoteServerConfig, type ServerConfig } from './schema.js';
import { validServerConfig } from './validate.js';
import { maskUrl } from './masking.js';

/** Maps of secrets (`env`, `headers`): a PATCH merges them key by key, `null` deleting one. */
const SECRET_MAPS = new Set(
  SERVER_SECRET_PATHS.filter((path) => path.length === 2 && path[1] === EACH).map((path) => path[0] as string),
);
/** The secrets of `auth` (`token`, `client_secret`, …): in a PATCH, `null` deletes them (other fields take `null` as a value). */
const AUTH_SECRETS = new Set(
  SERVER_SECRET_PATHS.filter((path) => path.length === 2 && path[0] === 'auth' && typeof path[1] === 'string').map(
    (path) => path[1] as string,
  ),
);

/**
 * Optional fields whose `null` means what leaving them out means (`log_level`,
 * `catalog_max_age_seconds`, …): in a PATCH `null` deletes them, so setting
 * one that is not there to `null` changes nothing (and writes no `null`).
 */
const ABSENT_WHEN_NULL = new Set(
  [...new Set([...Object.keys(LocalServerConfig.shape), ...Object.keys(RemoteServerConfig.shape)])].filter((key) => {
    const field = (LocalServerConfig.shape as Record<string, z.ZodType>)[key] ?? (RemoteServerConfig.shape as Record<string, z.ZodType>)[key];
    const absent = field?.safeParse(undefined);
    return absent?.success === true && absent.data === undefined && field?.safeParse(null).success === true;
  }),
);

/** Fields both server types have: a change of `type` keeps them. */
const SHARED_FIELDS = Object.keys(LocalServerConfig.shape).filter(
  (key) => key !== 'type' && Object.hasOwn(RemoteServerConfig.shape, key),
);

/**
 * Applies a PATCH (docs/credentials.md, Changing a secret) to a stored config, purely. The patch is any
 * subset of the config's fields (its shape is checked by `ServerPatch`). In
 * `env` and `headers`, and for `auth.token` / `auth.client_secret`: omitted
 * keeps, a string replaces, `null` deletes. Other objects (`tools`,
 * `reconnect`) merge field by field; every other field is replaced.
 * Changing `auth.kind` drops every field of the old kind (its secret, and for
 * oauth also client_id, scopes and callback_port, which belong to that
 * provider). Changing `type` keeps the fields both types share and drops the
 * old type's own, so the new type's required fields must be in the patch.
 * The result is validated; a ConfigError names the field and never contains
 * a value.
 */
export function mergePatch(current: ServerConfig, patch: unknown): ServerConfig {
  const shape = ServerPatch.safeParse(patch, CONFIG_PARSE);
  if (!shape.success) throw configError(shape.error);
  // The patch as sent, not zod's output: a key named `__proto__` must stay data.
  const fields = patch as Record<string, unknown>;
  const typeChanges = 'type' in fields && fields.type !== current.type;
  const base: Record<string, unknown> = typeChanges ? sharedFields(current) : { ...current };
  // A Map, then fromEntries: a patch key named `__proto__` stays an own (and so rejected) field.
  const candidate = new Map(Object.entries(base));
  for (const [key, value] of Object.entries(fields)) {
    const stored = base[key];
    if (SECRET_MAPS.has(key)) {
      candidate.set(key, mergeSecrets(stored, value as Record<string, unknown>, () => true));
    } else if (key === 'auth') {
      candidate.set(key, mergeAuth(stored, value as Record<string, unknown>));
    } else if (key === 'url' && typeof stored === 'string' && value === maskUrl(stored) && value !== stored) {
      // The URL as a response showed it (its credential masked): unchanged.
      candidate.set(key, stored);
    } else if (isPlainObject(value) && isPlainObject(stored)) {
      candidate.set(key, { ...stored, ...value });
    } else if (value === null && ABSENT_WHEN_NULL.has(key)) {
      candidate.delete(key);
    } else {
      candidate.set(key, value);
    }
  }
  return validServerConfig(Object.fromEntries(candidate));
}

function configError(error: z.ZodError): ConfigError {
  const { message, field } = describeZodError(error);
  return new ConfigError(message, field);
}

function sharedFields(config: ServerConfig): Record<string, unknown> {
  const all: Record<string, unknown> = config;
  return Object.fromEntries(SHARED_FIELDS.filter((key) => key in all).map((key) => [key, all[key]]));
}

/** `stored` with `patch` applied: a `null` on a secret key deletes it, any other value replaces. */
function mergeSecrets(stored: unknown, patch: Record<string, unknown>, isSecretKey: (key: string) => boolean): unknown {
  const merged = new Map(Object.entries(isPlainObject(stored) ? stored : {}));
  for (const [key, value] of Object.entries(patch)) {
    if (value === null && isSecretKey(key)) merged.delete(key);
    else merged.set(key, value);
  }
  // fromEntries defines own properties, so a key named `__proto__` stays data.
  return Object.fromEntries(merged);
}

/** A new `kind` starts from nothing: the old kind's secret and settings belong to it. */
function mergeAuth(stored: unknown, patch: Record<string, unknown>): unknown {
  const storedAuth = isPlainObject(stored) ? stored : {};
  const kindChanges = 'kind' in patch && patch.kind !== storedAuth.kind;
  return mergeSecrets(kindChanges ? {} : storedAuth, patch, (key) => AUTH_SECRETS.has(key));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
