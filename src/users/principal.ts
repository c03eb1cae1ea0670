/**
 * Who a request or a call acts for. The admin token (and a library call that
 * names no principal) acts as the admin, who sees everything; a user key acts
 * as that user, with their groups.
 */
import { z } from 'zod';
import { SERVER_NAME_PATTERN, SERVER_NAME_RULE } from '../config/schema.js';
import { describeZodError } from '../config/zod-errors.js';
import { ConfigError } from '../errors.js';
import { Quota } from './quota.js';

/** The principal of the admin token, in `GET /api/mcp/me` and in call events. */
export const ADMIN_PRINCIPAL = 'admin';

/** A group name: any non-empty text without control characters (an identity provider's groups may hold spaces or `/`). */
export const GroupName = z
  .string()
  .min(1, 'must not be empty')
  .max(256, 'must be at most 256 characters')
  // `*`: the empty name is `min(1)`'s to refuse, said once.
  .regex(/^[^\p{Cc}]*$/u, 'must not contain control characters');

/** A user's name: the rule of server names (`admin` is the admin token's). */
export const UserName = z
  .string()
  .regex(SERVER_NAME_PATTERN, SERVER_NAME_RULE)
  .refine((name) => name !== ADMIN_PRINCIPAL, { message: `"${ADMIN_PRINCIPAL}" is the admin token's principal` });

/** `host.tools({ principal })`, `host.callTool(name, args, { principal })`, `host.searchTools(q, { principal })`. */
export const Principal = z.strictObject({
  // `__proto__` cannot key a user's records (a JSON object drops it), as a server name cannot.
  id: z
    .string()
    .min(1)
    .refine((id) => id !== '__proto__', { message: 'must not be "__proto__"' })
    // A user named so would be journaled as the admin while given a user's access.
    .refine((id) => id !== ADMIN_PRINCIPAL, { message: `"${ADMIN_PRINCIPAL}" is the admin's: pass no principal to act as the admin` }),
  groups: z.array(z.string()).default([]),
  /** The user's own quota over the host's `userQuota` (a stored user's values); absent: the host's. */
  quota: Quota.optional(),
});
export type Principal = z.infer<typeof Principal>;
/** A principal as a caller may write it (groups optional). */
export type PrincipalInput = z.input<typeof Principal>;

/** `input` checked; a bad one throws a ConfigError naming the field (`principal.id: …`), never zod's JSON. */
export function parsePrincipal(input: PrincipalInput): Principal {
  const parsed = Principal.safeParse(input);
  if (parsed.success) return parsed.data;
  const { message, field } = describeZodError(parsed.error, 'principal');
  throw new ConfigError(message, field);
}

/** `GET /api/mcp/me`: the caller as the API sees it. */
export const Me = z.object({ principal: z.string(), groups: z.array(z.string()), admin: z.boolean() });
export type Me = z.infer<typeof Me>;
