/**
 * `createManagementApp`'s options checked where they are given, as
 * `createMcpHost`'s are: a missing or empty `token` (which would lock every
 * `/api` route shut, or fail deep in a hash), a misspelled name, a value of
 * the wrong kind is refused at once, naming it.
 */
import { z } from 'zod';
import { anObject, checkOptions, fn, webUrl, withMethods } from '../checked-options.js';
import type { ManagementAppOptions } from './app.js';

const positiveInt = z.number().int('must be an integer').min(1);

const ManagementAppOptionsSchema = z.strictObject({
  token: z.string({ error: 'required: the bearer token every /api route requires (a string)' }).min(1, 'must not be empty: every /api request would be refused'),
  bindHost: z.string().min(1).optional(),
  allowedHosts: z.array(z.string().min(1)).optional(),
  bodyLimit: positiveInt.optional(),
  heartbeatMs: positiveInt.optional(),
  logger: withMethods('a pino-style logger (error, warn and info functions)', 'error', 'warn', 'info').optional(),
  onSecrets: fn('a function (values) called with the secret values of each accepted body').optional(),
  notReady: fn('a function returning why the worker cannot serve yet, or null').optional(),
  fleet: anObject('a Presence (e.g. from openSharedStores)').optional(),
  registryUrl: webUrl.optional(),
  users: anObject('a UsersStore').optional(),
  oidc: anObject('OidcOptions').optional(),
  publicUrl: webUrl.optional(),
  apps: anObject('AppFrames (from createAppFrames)').optional(),
  gatewaySessions: anObject('GatewaySessionLimits').optional(),
  gatewayRounds: anObject('RoundLimits').optional(),
} satisfies Record<keyof ManagementAppOptions, z.ZodType>);

/** Throws naming the option that is missing, unknown or of the wrong kind (a RangeError for a number out of range). */
export function checkManagementAppOptions(options: unknown): void {
  checkOptions('createManagementApp', ManagementAppOptionsSchema, options, true);
}
