/**
 * Where a JSON value keeps its secrets, as paths: `['env', EACH]` is every
 * value of `env`, `['auth', 'token']` one field. The paths of a server config
 * are read from the schemas' secret registry (config/schema.ts), so masking,
 * redaction, PATCH and sealing at rest all follow one list: a secret field
 * added to the schema is sealed with no change here.
 */
import { z } from 'zod';
import { isSecret, ServerConfig } from '../schema.js';

/** A path step meaning "every key of this map". A symbol: no field name can collide with it. */
export const EACH: unique symbol = Symbol('each key');

/** Field names and {@link EACH}, from the root of a value to one secret. */
export type SecretPath = readonly (string | typeof EACH)[];

/** Every place a server config (of any type and auth kind) may hold a secret, in schema order. */
export const SERVER_SECRET_PATHS: readonly SecretPath[] = secretPathsOf(ServerConfig);

/**
 * The secret paths of `schema`: its fields registered as secrets, through
 * objects, maps and unions (the union of their options' paths, once each).
 */
export function secretPathsOf(schema: z.core.$ZodType, prefix: SecretPath = []): SecretPath[] {
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodPrefault || schema instanceof z.ZodOptional || schema instanceof z.ZodNullable) {
    return secretPathsOf(schema.unwrap() as z.ZodType, prefix);
  }
  if (isSecret(schema)) return [prefix];
  if (schema instanceof z.ZodRecord) return secretPathsOf(schema.valueType as z.ZodType, [...prefix, EACH]);
  if (schema instanceof z.ZodObject) {
    return Object.entries(schema.shape).flatMap(([key, field]) => secretPathsOf(field as z.ZodType, [...prefix, key]));
  }
  if (schema instanceof z.ZodUnion) {
    const paths = (schema.options as z.ZodType[]).flatMap((option) => secretPathsOf(option, prefix));
    return uniquePaths(paths);
  }
  return [];
}

/** The concrete location of one secret: field names and map keys. */
export type Location = readonly string[];

/**
 * `value` with `replace` applied to whatever sits at each of `paths` (absent
 * steps are skipped; `EACH` visits own keys). Objects on the way are copied,
 * never changed in place; `fromEntries` keeps a key named `__proto__` data.
 */
export function mapAtPaths(
  value: unknown,
  paths: readonly SecretPath[],
  replace: (found: unknown, at: Location) => unknown,
): unknown {
  return paths.reduce((current, path) => mapAtPath(current, path, [], replace), value);
}

function mapAtPath(
  value: unknown,
  path: SecretPath,
  at: Location,
  replace: (found: unknown, at: Location) => unknown,
): unknown {
  const [step, ...rest] = path;
  if (step === undefined) return replace(value, at);
  if (!isPlainObject(value)) return value;
  const keys = step === EACH ? Object.keys(value) : Object.hasOwn(value, step) ? [step] : [];
  if (keys.length === 0) return value;
  const copy = new Map(Object.entries(value));
  for (const key of keys) copy.set(key, mapAtPath(value[key], rest, [...at, key], replace));
  return Object.fromEntries(copy);
}

/** Every value at `paths` in `value`, with where it was found, in path order. */
export function valuesAtPaths(value: unknown, paths: readonly SecretPath[]): Array<[unknown, Location]> {
  // A read-only walk: redaction asks for these on every connect and failure, and copying the value per path was most of its cost.
  const found: Array<[unknown, Location]> = [];
  for (const path of paths) collectAtPath(value, path, 0, [], found);
  return found;
}

function collectAtPath(value: unknown, path: SecretPath, depth: number, at: Location, found: Array<[unknown, Location]>): void {
  if (depth === path.length) {
    found.push([value, at]);
    return;
  }
  if (!isPlainObject(value)) return;
  const step = path[depth]!;
  if (step === EACH) {
    for (const key of Object.keys(value)) collectAtPath(value[key], path, depth + 1, [...at, key], found);
  } else if (Object.hasOwn(value, step)) {
    collectAtPath(value[step], path, depth + 1, [...at, step], found);
  }
}

/**
 * One context string for a location, e.g. `server:files:env:API_KEY`. `%` and
 * `:` inside a part are percent-encoded, so two locations never share a
 * context (an issuer URL key has colons of its own).
 */
export function contextOf(parts: readonly string[]): string {
  return parts.map((part) => part.replace(/[%:]/g, (c) => (c === '%' ? '%25' : '%3A'))).join(':');
}

function uniquePaths(paths: readonly SecretPath[]): SecretPath[] {
  const seen = new Set<string>();
  return paths.filter((path) => {
    const key = JSON.stringify(path.map((step) => (step === EACH ? { each: true } : step)));
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
