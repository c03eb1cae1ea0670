/**
 * `createMcpHost`'s options checked where they are given: a misspelled name
 * or a value of the wrong kind is refused at once, naming the option, instead
 * of running on a default (a misspelled `stateDir` would run on
 * `~/.mcp-fleet`) or failing later, far from the mistake.
 */
import { z } from 'zod';
import { describeZodError } from '../config/zod-errors.js';
import { Quota } from '../users/quota.js';
import type { McpHostOptions } from './api.js';

const fn = (what: string) => z.custom<(...args: never[]) => unknown>((value) => typeof value === 'function', { message: `must be ${what}` });
/** An object that has each of `methods` as a function. */
const withMethods = (what: string, ...methods: string[]) =>
  z.custom<object>(
    (value) =>
      value !== null &&
      typeof value === 'object' &&
      methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function'),
    { message: `must be ${what}` },
  );
const anObject = (what: string) => z.custom<object>((value) => value !== null && typeof value === 'object', { message: `must be ${what}` });
const webUrl = z.string().refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), {
  message: 'must be an http:// or https:// URL',
});

/** Each option and what it must be; `roots` is checked by its own parser (which names the entry). */
const McpHostOptionsSchema = z.strictObject({
  stateDir: z.string().min(1),
  logger: withMethods('an object with info(message) and warn(message) functions', 'info', 'warn'),
  persistJournal: z.boolean(),
  eventStore: anObject('an EventStore (e.g. from openSharedStores)'),
  configStore: anObject('a ConfigStore (e.g. from openSharedStores)'),
  credentialsStore: anObject('a CredentialsStore (e.g. from openSharedStores)'),
  workerId: z.string().min(1),
  watchConfig: z.boolean(),
  startupConcurrency: z.number().int('must be an integer').min(1),
  consentTimeoutMs: z.number().int('must be an integer (milliseconds)').min(1),
  publicUrl: webUrl,
  pendingConsents: anObject('a PendingConsents (e.g. from openSharedStores)'),
  hostModel: z.custom<object>(
    (value) =>
      value !== null &&
      typeof value === 'object' &&
      typeof (value as { model?: unknown }).model === 'string' &&
      typeof (value as { complete?: unknown }).complete === 'function',
    { message: 'must be a HostModel: an object with a model name and a complete(request) function' },
  ),
  samplingForCallers: z.boolean(),
  elicitation: fn('a function (request, { signal }) returning the answer'),
  roots: z.unknown(),
  approve: fn("a function (request, { signal }) returning 'allow' or 'deny'"),
  presence: anObject('a Presence (e.g. from openSharedStores)'),
  userQuota: Quota,
  userInputs: anObject('a UserInputsStore'),
} satisfies Record<keyof McpHostOptions, z.ZodType>).partial();

const OPTION_NAMES = Object.keys(McpHostOptionsSchema.shape);

/** Throws naming the options that are unknown or of the wrong kind (a RangeError for a number out of range); `undefined` counts as not given. */
export function checkHostOptions(options: unknown): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError('createMcpHost: options must be an object (or nothing)');
  }
  const given = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const parsed = McpHostOptionsSchema.safeParse(given);
  if (parsed.success) return;
  const unknown = parsed.error.issues.flatMap((issue) => (issue.code === 'unrecognized_keys' ? issue.keys : []));
  if (unknown.length > 0) {
    const named = unknown.map((key) => {
      const near = OPTION_NAMES.find((name) => name.toLowerCase() === key.toLowerCase());
      return near === undefined ? key : `${key} (did you mean ${near}?)`;
    });
    throw new TypeError(`createMcpHost: unknown option${named.length > 1 ? 's' : ''} ${named.join(', ')}; the options are ${OPTION_NAMES.join(', ')}`);
  }
  const first = parsed.error.issues[0];
  const outOfRange = first?.code === 'too_small' || first?.code === 'too_big' || (first?.code === 'invalid_type' && first.expected === 'int');
  const message = `createMcpHost: ${describeZodError(parsed.error).message}`;
  throw outOfRange ? new RangeError(message) : new TypeError(message);
}
