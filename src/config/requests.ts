/**
 * The bodies of `POST` and `PATCH /api/mcp/servers`, derived from the config
 * schemas (schema.ts): a field added there is accepted here with no change,
 * and no field can be refused because a copy of the schema forgot it.
 */
import { z } from 'zod';
import { isSecret, LocalServerConfig, RemoteServerConfig, ServerConfig, ServerName } from './schema.js';

/** `POST /api/mcp/servers`: every field of a server, plus its `name`. */
export const ServerCreate = z.discriminatedUnion('type', [
  LocalServerConfig.extend({ name: ServerName }),
  RemoteServerConfig.extend({ name: ServerName }),
]);
export type ServerCreate = z.infer<typeof ServerCreate>;

/**
 * `PATCH /api/mcp/servers/:name` (docs/credentials.md): any subset of the fields of
 * either server type. It checks shapes only; `mergePatch` applies the patch
 * and validates the result against the config schema.
 */
export const ServerPatch = patchOf(ServerConfig) as z.ZodType<Record<string, unknown>>;

/**
 * The schema of a patch of `schema`'s values:
 * - an object's fields are all optional and none has a default (a default
 *   would become a field the client never sent); unknown keys are refused;
 * - a union of objects (server `type`, `auth.kind`) becomes one object with
 *   the fields of all of them, so a patch may leave the discriminator out;
 * - a secret also takes `null` (delete it); a map of secrets, per key;
 * - anything else (arrays, enums, numbers, other maps) is replaced whole and
 *   keeps its own schema.
 */
function patchOf(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodPrefault || schema instanceof z.ZodOptional) {
    return patchOf(schema.unwrap() as z.ZodType);
  }
  if (schema instanceof z.ZodNullable) {
    const inner = patchOf(schema.unwrap() as z.ZodType);
    return inner instanceof z.ZodNullable ? inner : inner.nullable();
  }
  if (isSecret(schema)) return schema.nullable();
  if (schema instanceof z.ZodRecord && isSecret(schema.valueType)) {
    return z.record(schema.keyType, (schema.valueType as z.ZodType).nullable());
  }
  if (schema instanceof z.ZodObject) return patchOfObjects([schema]);
  if (schema instanceof z.ZodUnion && schema.options.every((option) => option instanceof z.ZodObject)) {
    return patchOfObjects(schema.options as z.ZodObject[]);
  }
  return schema;
}

/** One strict object with every field of `objects`, each optional and patchable. */
function patchOfObjects(objects: readonly z.ZodObject[]): z.ZodObject {
  // Per field name, its distinct schemas: the fields every server type shares are one schema, seen once.
  const fields = new Map<string, Set<z.ZodType>>();
  for (const object of objects) {
    for (const [key, field] of Object.entries(object.shape)) {
      fields.set(key, (fields.get(key) ?? new Set()).add(field as z.ZodType));
    }
  }
  const shape = Object.fromEntries(
    [...fields].map(([key, variants]) => [key, oneOf([...variants].map(patchOf)).optional()]),
  );
  return z.strictObject(shape);
}

/** A field that differs between variants: any of them (literals merged, so the message lists the allowed values). */
function oneOf(schemas: z.ZodType[]): z.ZodType {
  const [first, ...rest] = schemas;
  if (rest.length === 0) return first!;
  if (schemas.every((schema) => schema instanceof z.ZodLiteral)) {
    return z.literal(schemas.flatMap((schema) => [...(schema as z.ZodLiteral).values]) as [z.core.util.Literal]);
  }
  return z.union(schemas as [z.ZodType, z.ZodType, ...z.ZodType[]]);
}
