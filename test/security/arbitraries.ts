// fast-check arbitraries for hostile requests: JSON bodies as text (so keys
// like `__proto__` arrive as own keys, as JSON.parse makes them), path
// segments, query values and methods.
import fc from 'fast-check';

/** An object kept as its entries, so duplicate and `__proto__` keys survive until serialized. */
export class JsonObject {
  constructor(readonly entries: Array<[string, Json]>) {}

  /** How fast-check shows a counterexample: the JSON text, cut short. */
  [fc.toStringMethod](): string {
    return shorten(toJsonText(this));
  }
}

/** A body kept as text, shown cut short in counterexamples (a 200 000-deep body is 400 KB). */
export class BodyText {
  constructor(readonly text: string) {}

  [fc.toStringMethod](): string {
    return shorten(this.text);
  }
}

function shorten(text: string): string {
  return text.length <= 200 ? text : `${text.slice(0, 100)}…(${text.length} chars)…${text.slice(-60)}`;
}
export type Json = null | boolean | number | string | Json[] | JsonObject;

/** The config's own field names, and the nested ones, so bodies get past the first checks. */
const FIELD_NAMES = [
  'name', 'type', 'command', 'env', 'cwd', 'enabled', 'timeout_seconds', 'call_timeout_seconds', 'max_concurrent_calls',
  'tools', 'include', 'exclude', 'url', 'transport', 'headers', 'auth', 'kind', 'token', 'client_id', 'client_secret',
  'scopes', 'callback_port', 'reconnect', 'max_attempts', 'ping_interval_seconds', 'arguments', 'text', 'a', 'b',
];
/** Keys that pollute a prototype when a parser or merge assigns them naively. */
export const POISON_KEYS = ['__proto__', 'constructor', 'prototype', 'polluted', 'toString', 'hasOwnProperty', 'valueOf'];
/** Values the schema accepts somewhere, so some bodies are valid and do real work. */
const FIELD_VALUES = ['local', 'remote', 'none', 'bearer', 'oauth', 'auto', 'sse', 'streamable_http', 'ok', 'off', 'echo', 'fuzzed'];

const anyString = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.constantFrom(...FIELD_VALUES, '', '\u0000', '\ud800', '${HOME}', '../../etc/passwd', '%00'),
);

/** Now and then a string near the 1 MiB body limit (a repeated multi-byte character). */
const hugeString = fc
  .tuple(fc.integer({ min: 10_000, max: 700_000 }), fc.constantFrom('a', 'é', '€', '😀', '\\', '"'))
  .map(([length, char]) => char.repeat(Math.floor(length / char.length)));

const key = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...FIELD_NAMES) },
  { weight: 2, arbitrary: fc.constantFrom(...POISON_KEYS) },
  { weight: 2, arbitrary: anyString },
);

const leaf: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1, 1e308, -0, 65_536, 3600.5),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  anyString,
);

/** Arbitrary JSON, biased toward config-shaped objects with hostile keys. */
export const json: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.array(fc.tuple(key, tie('value')), { maxLength: 6 }).map((entries) => new JsonObject(entries)),
  ),
})).value;

/** A top-level body: mostly objects with config field names; sometimes one huge string. */
export const bodyValue: fc.Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: fc.array(fc.tuple(key, json), { maxLength: 8 }).map((entries) => new JsonObject(entries)) },
  { weight: 2, arbitrary: json },
  { weight: 1, arbitrary: fc.tuple(key, hugeString).map(([k, text]) => new JsonObject([[k, text]])) },
);

/** `{"<key>": [[[[…]]]]}` nested `depth` deep, or the same with objects: stresses every recursive walk. */
export const deepBody = fc
  .tuple(fc.constantFrom('env', 'headers', 'auth', 'arguments', 'tools', 'command', 'name', '__proto__'), fc.integer({ min: 1_000, max: 200_000 }), fc.boolean())
  .map(([field, depth, objects]) => {
    const open = objects ? '{"k":' : '[';
    const close = objects ? '}' : ']';
    const inner = field === 'auth' ? `{"kind":"bearer","token":${open.repeat(depth)}1${close.repeat(depth)}}` : `${open.repeat(depth)}1${close.repeat(depth)}`;
    return new BodyText(field === 'env' || field === 'headers' ? `{"${field}":{"K":${inner}}}` : `{"${field}":${inner}}`);
  });

/** A plain JSON value as a {@link Json} tree. */
export function fromPlain(value: unknown): Json {
  if (Array.isArray(value)) return value.map(fromPlain);
  if (value !== null && typeof value === 'object') {
    return new JsonObject(Object.entries(value).map(([k, v]): [string, Json] => [k, fromPlain(v)]));
  }
  return value as Json;
}

/** Sets `key` in a tree object (replacing an entry of that name, else appending); a non-object becomes one. */
function withEntry(target: Json | undefined, key: string, value: Json): JsonObject {
  const entries = target instanceof JsonObject ? target.entries.filter(([k]) => k !== key) : [];
  return new JsonObject([...entries, [key, value]]);
}

/**
 * A valid body with a few fields replaced or added at the top level and one
 * level down (`env`, `headers`, `auth`, `tools`, `arguments`): it gets past
 * the first checks, so the host really adds, patches and calls.
 */
export function nearValid(bases: readonly unknown[]): fc.Arbitrary<Json> {
  const nested = fc.constantFrom('env', 'headers', 'auth', 'tools', 'arguments');
  return fc
    .tuple(
      fc.constantFrom(...bases),
      fc.array(fc.tuple(key, json), { maxLength: 2 }),
      fc.array(fc.tuple(nested, key, json), { maxLength: 2 }),
    )
    .map(([base, top, inner]) => {
      let body = fromPlain(base) as JsonObject;
      for (const [k, v] of top) body = withEntry(body, k, v);
      for (const [field, k, v] of inner) {
        const current = body.entries.find(([name]) => name === field)?.[1];
        body = withEntry(body, field, withEntry(current, k, v));
      }
      return body;
    });
}

/** Bodies that are not JSON, or barely. */
export const garbageBody = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constantFrom('', '{', '}', '[', 'null', '"text"', '123', 'true', '{"a":1}{"b":2}', '{"a":1,}', '\ufeff{}', '{"__proto__":', '\u0000'),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
);

/**
 * Never runs an arbitrary program or contacts an arbitrary host: a `command`
 * starts with a path that does not exist, an http(s) `url` points at `deadUrl`.
 */
export function defuse(value: Json, deadUrl: string): Json {
  if (Array.isArray(value)) return value.map((item) => defuse(item, deadUrl));
  if (!(value instanceof JsonObject)) return value;
  return new JsonObject(
    value.entries.map(([k, v]): [string, Json] => {
      if (k === 'command' && Array.isArray(v) && v.length > 0) return [k, ['/nonexistent/mcp-fleet-fuzz', ...v.slice(1)]];
      if (k === 'command' && typeof v === 'string') return [k, '/nonexistent/mcp-fleet-fuzz'];
      if (k === 'url' && typeof v === 'string' && URL.canParse(v)) return [k, deadUrl];
      return [k, defuse(v, deadUrl)];
    }),
  );
}

/** JSON text of `value`; object entries in order, duplicates and `__proto__` kept. */
export function toJsonText(value: Json): string {
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (value instanceof JsonObject) return `{${value.entries.map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`).join(',')}}`;
  return JSON.stringify(value);
}

const SPECIAL_SEGMENTS = [
  '..', '.', '%2e%2e', '%2E%2E%2F', '%00', 'ok%00', '%', '%zz', '%E2%82', '%ff', '%c0%ae', '%2F', '%5C', '..%2F..%2Fetc%2Fpasswd',
  '__proto__', 'constructor', 'prototype', ';', '%3B', '~', '*', '%20', '+', 'ok%2Frestart', 'OK', 'ok.', 'ok%0Aok', '%u0000',
];

/** A path segment: encoded unicode, raw ASCII garbage, traversal and encoding tricks, very long names. */
export const segment = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }).map(encodeURIComponent),
  // Raw ASCII as a client might send it; characters Node would refuse to put in a request line are encoded.
  fc.string({ unit: 'grapheme-ascii', maxLength: 30 }).map((s) => s.replace(/[^\u0021-\u007e]|[#?]/g, encodeURIComponent)),
  fc.constantFrom(...SPECIAL_SEGMENTS),
  fc.integer({ min: 65, max: 6_000 }).map((length) => 'n'.repeat(length)),
  fc.integer({ min: 65, max: 2_000 }).map((length) => '%C3%A9'.repeat(length)),
);

export const method = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS');

/** A `since` value: numbers right and wrong, and garbage, URL-encoded or not. */
export const sinceValue = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom('', '-1', '1e400', '1e3', 'NaN', 'Infinity', '0x10', '1.5', '%20%203', '99999999999999999999999', '[]', '%00', '%', '%zz', '0'),
  fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent),
  fc.string({ unit: 'grapheme-ascii', maxLength: 20 }).map((s) => s.replace(/[^\u0021-\u007e]|#/g, encodeURIComponent)),
);

/** A header value Node will send: printable ASCII only. */
export const headerValue = fc.string({ unit: 'grapheme-ascii', maxLength: 40 }).map((s) => s.replace(/[^\u0020-\u007e]/g, ''));
