/**
 * Options objects checked where they are given (`createMcpHost`,
 * `createManagementApp`): a misspelled name or a value of the wrong kind is
 * refused at once, naming the option, instead of running on a default or
 * failing later, far from the mistake.
 */
import { z } from 'zod';
import { describeZodError } from './config/zod-errors.js';

/** A function (what it must be, said in the message). */
export const fn = (what: string) => z.custom<(...args: never[]) => unknown>((value) => typeof value === 'function', { message: `must be ${what}` });
/** An object that has each of `methods` as a function. */
export const withMethods = (what: string, ...methods: string[]) =>
  z.custom<object>(
    (value) =>
      value !== null &&
      typeof value === 'object' &&
      methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function'),
    { message: `must be ${what}` },
  );
export const anObject = (what: string) => z.custom<object>((value) => value !== null && typeof value === 'object', { message: `must be ${what}` });
export const webUrl = z.string().refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), {
  message: 'must be an http:// or https:// URL',
});

/**
 * Throws naming the options of `options` that are unknown (with the name
 * meant, when only its case differs) or of the wrong kind: a RangeError for a
 * number out of range, else a TypeError, each starting `<owner>: `.
 * `undefined` counts as not given. `required`: options is not optional.
 */
export function checkOptions(owner: string, schema: z.ZodObject, options: unknown, required = false): void {
  if (options === undefined && !required) return;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${owner}: options must be an object${required ? '' : ' (or nothing)'}`);
  }
  const given = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const parsed = schema.safeParse(given);
  if (parsed.success) return;
  const strays = parsed.error.issues.find((issue) => issue.code === 'unrecognized_keys');
  if (strays !== undefined) {
    // An option's own fields (`userQuota.callsPerMinute`) are named with their path and the option's fields.
    const path = strays.path.map(String);
    const names = Object.keys(shapeAt(schema, path));
    const near = (key: string) => names.find((name) => squashed(name) === squashed(key));
    const named = strays.keys.map((key) => (near(key) === undefined ? key : `${key} (did you mean ${near(key)}?)`));
    const plural = named.length > 1 ? 's' : '';
    throw new TypeError(
      path.length === 0
        ? `${owner}: unknown option${plural} ${named.join(', ')}; the options are ${names.join(', ')}`
        : `${owner}: ${path.join('.')}: unknown field${plural} ${named.join(', ')}; its fields are ${names.join(', ')}`,
    );
  }
  const first = parsed.error.issues[0];
  const numeric = (first?.code === 'too_small' || first?.code === 'too_big') && (first.origin === 'number' || first.origin === 'int');
  const outOfRange = numeric || (first?.code === 'invalid_type' && first.expected === 'int');
  const message = `${owner}: ${describeZodError(parsed.error).message}`;
  throw outOfRange ? new RangeError(message) : new TypeError(message);
}

/** A name as a near miss is compared: case and `_` ignored (`callsPerMinute` is `calls_per_minute`). */
const squashed = (name: string) => name.toLowerCase().replaceAll('_', '');

/** The fields of the object schema at `path` inside `schema` (optional wrappers looked through). */
function shapeAt(schema: z.ZodType, path: readonly string[]): Record<string, unknown> {
  let at: z.ZodType | undefined = schema;
  for (const key of ['', ...path]) {
    while (at instanceof z.ZodOptional || at instanceof z.ZodNullable) at = at.unwrap() as z.ZodType;
    if (key === '') continue;
    at = at instanceof z.ZodObject ? (at.shape[key] as z.ZodType | undefined) : undefined;
  }
  while (at instanceof z.ZodOptional || at instanceof z.ZodNullable) at = at.unwrap() as z.ZodType;
  return at instanceof z.ZodObject ? at.shape : {};
}
