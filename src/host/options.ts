/**
 * `createMcpHost`'s options (and the arguments of host methods that take
 * numbers) checked where they are given: a misspelled name
 * or a value of the wrong kind is refused at once, naming the option, instead
 * of running on a default (a misspelled `stateDir` would run on
 * `~/.mcp-fleet`) or failing later, far from the mistake.
 */
import { z } from 'zod';
import { checkOptions, fn, webUrl, withMethods } from '../checked-options.js';
import { Quota } from '../users/quota.js';
import type { McpHostOptions } from './api.js';

/** Each option and what it must be; `roots` is checked by its own parser (which names the entry). */
const McpHostOptionsSchema = z.strictObject({
  stateDir: z.string().min(1),
  logger: withMethods('an object with info(message) and warn(message) functions', 'info', 'warn'),
  persistJournal: z.boolean(),
  eventStore: withMethods('an EventStore (e.g. from openSharedStores)', 'load', 'append', 'read', 'subscribe', 'saveSnapshot', 'close'),
  configStore: withMethods('a ConfigStore (e.g. from openSharedStores)', 'file', 'load', 'save', 'update', 'stored', 'watch'),
  credentialsStore: withMethods('a CredentialsStore (e.g. from openSharedStores)', 'load', 'save', 'delete'),
  workerId: z.string().min(1),
  watchConfig: z.boolean(),
  startupConcurrency: z.number().int('must be an integer').min(1),
  consentTimeoutMs: z.number().int('must be an integer (milliseconds)').min(1),
  publicUrl: webUrl,
  pendingConsents: withMethods('a PendingConsents (e.g. from openSharedStores)', 'add', 'take', 'drop'),
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
  presence: withMethods('a Presence (e.g. from openSharedStores)', 'start', 'changed', 'view', 'stop'),
  userQuota: Quota,
  userInputs: withMethods('a UserInputsStore', 'get', 'set', 'forget'),
} satisfies Record<keyof McpHostOptions, z.ZodType>).partial();

/** Throws naming the options that are unknown or of the wrong kind (a RangeError for a number out of range); `undefined` counts as not given. */
export function checkHostOptions(options: unknown): void {
  checkOptions('createMcpHost', McpHostOptionsSchema, options);
}

/**
 * `readEvents(since, limit)`: a seq is a whole number from 0. Unchecked, a
 * negative `since` read as a gap (`{ gone: 1 }`) and a fraction as the seq
 * below it, answers a caller would act on rather than see its mistake.
 */
const ReadEventsArguments = z.strictObject({
  since: z.number().int('must be an integer (a seq)').min(0),
  limit: z.number().int('must be an integer').min(0).optional(),
});

/** Throws naming the argument of `readEvents` that is not a whole number from 0 (a RangeError, or a TypeError for no number). */
export function checkReadEvents(since: unknown, limit: unknown): void {
  checkOptions('readEvents', ReadEventsArguments, { since, limit }, true);
}
