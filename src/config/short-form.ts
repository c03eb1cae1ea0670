/**
 * A server config as every write stores it (the file's changed and new
 * entries, the database's rows): what was set, without what the schema
 * fills in.
 */
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import { toStorage } from './masking.js';
import { CONFIG_PARSE, ServerConfig, type ServerConfigInput } from './schema.js';

/**
 * `config` without the fields that hold their default, at every depth: a
 * nested object (`tools`, `reconnect`, `auth`, an entry of `user_inputs`…)
 * keeps only its fields that differ, and goes altogether when all of them
 * hold their default. So an entry the API wrote reads like one written by
 * hand, and a PATCH of `tools.approval` writes that and not `tools.include:
 * null` beside it. A field is left out only if the whole entry without it
 * still reads back as the same config: a default may depend on another field
 * (`scope: "per_user"` stays beside a `${user.…}` reference), and a value
 * that means what its absence means but parses differently stays (an empty
 * `tools.approval` map parses to `{}`, its absence to nothing: left out, the
 * config read back would differ from the one written, and look changed).
 */
export function shortForm(config: ServerConfig): ServerConfigInput {
  const readsBack = (form: Record<string, unknown>) => {
    const read = ServerConfig.safeParse(form, CONFIG_PARSE);
    return read.success && isDeepStrictEqual(read.data, config);
  };
  const full = toStorage(config) as Record<string, unknown>;
  // Each field left out whose own schema gives its value when it is absent, checked by one parse of
  // the whole entry: trying each field by a parse of the whole entry made a save of a hundred servers
  // take a few hundred parses. Should the entry not read back so, every field is tried that way.
  const guess = withoutAbsentValues(full, ServerConfig);
  // What is left parses back to `config`: an input form of it.
  return (readsBack(guess) ? guess : withoutDefaults(full, (object) => object, readsBack)) as ServerConfigInput;
}

/**
 * `value` less every field, at any depth, that `schema` (an object, a
 * record, a discriminated union of objects, each maybe defaulted, optional
 * or nullable) gives the same value for when it is absent.
 */
function withoutAbsentValues(value: Record<string, unknown>, schema: z.ZodType): Record<string, unknown> {
  const inner = unwrapped(schema);
  const fields = (key: string): z.ZodType | undefined => {
    if (inner instanceof z.ZodObject) return Object.hasOwn(inner.shape, key) ? (inner.shape[key] as z.ZodType) : undefined;
    if (inner instanceof z.ZodRecord) return inner.valueType as z.ZodType;
    if (inner instanceof z.ZodDiscriminatedUnion) {
      const { discriminator } = inner._zod.def;
      // The option whose tag takes the value's.
      const option = (inner.options as z.ZodType[]).find(
        (candidate) => candidate instanceof z.ZodObject && (candidate.shape[discriminator] as z.ZodType | undefined)?.safeParse(value[discriminator]).success === true,
      );
      return option instanceof z.ZodObject && Object.hasOwn(option.shape, key) ? (option.shape[key] as z.ZodType) : undefined;
    }
    return undefined;
  };
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    const fieldSchema = fields(key);
    // A record's entries have no default: only what is inside them may.
    if (fieldSchema !== undefined && !(inner instanceof z.ZodRecord) && absentGives(fieldSchema, field)) continue;
    out[key] = fieldSchema !== undefined && isObject(field) ? withoutAbsentValues(field, fieldSchema) : field;
  }
  return out;
}

/** The schema inside any default, optional or nullable wrapping. */
function unwrapped(schema: z.ZodType): z.ZodType {
  let inner = schema;
  while (inner instanceof z.ZodDefault || inner instanceof z.ZodOptional || inner instanceof z.ZodNullable) inner = inner.unwrap() as z.ZodType;
  return inner;
}

/** What each field schema gives for a field left out (`undefined` for a required one): the same every time. */
const absentValues = new WeakMap<z.ZodType, { given: boolean; value: unknown }>();

/** Whether `schema` gives `value` for a field left out. */
function absentGives(schema: z.ZodType, value: unknown): boolean {
  let absent = absentValues.get(schema);
  if (absent === undefined) {
    const read = schema.safeParse(undefined, CONFIG_PARSE);
    absent = read.success ? { given: true, value: read.data } : { given: false, value: undefined };
    absentValues.set(schema, absent);
  }
  return absent.given && isDeepStrictEqual(absent.value, value);
}

/**
 * `object` less each field the entry reads back the same without; a field
 * that must stay and holds an object is shortened in turn. `entryWith` puts
 * an object in `object`'s place in the whole entry, for `readsBack` to judge.
 * Fields keep their order (each step copies rather than deletes and re-adds).
 */
function withoutDefaults(
  object: Record<string, unknown>,
  entryWith: (replacement: Record<string, unknown>) => Record<string, unknown>,
  readsBack: (entry: Record<string, unknown>) => boolean,
): Record<string, unknown> {
  let form = object;
  for (const key of Object.keys(object)) {
    const { [key]: value, ...without } = form;
    if (readsBack(entryWith(without))) {
      form = without;
      continue;
    }
    if (!isObject(value)) continue;
    const outer = form;
    const inner = withoutDefaults(value, (replacement) => entryWith({ ...outer, [key]: replacement }), readsBack);
    if (inner !== value) form = { ...outer, [key]: inner };
  }
  return form;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
