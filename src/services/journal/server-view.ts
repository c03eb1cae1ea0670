import { z } from 'zod';
import { ErrorKind } from '../support/errors.js';
import { ServerState } from './events.js';

/** How a server is seen by every API: SPEC §6 `ServerView`. */
export const ServerView = z.object({
  name: z.string(),
  /** The masked config (`toResponse()`); never a secret. */
  config: z.record(z.string(), z.unknown()),
  state: ServerState,
  ready: z.boolean(),
  error: z.string().nullable(),
  error_kind: ErrorKind.nullable(),
  auth: z.object({
    kind: z.enum(['none', 'bearer', 'oauth']),
    /** `none` | `configured` | `authorized` | `needs_reauth` | `authenticating`. */
    status: z.string(),
  }),
  tool_count: z.number().int(),
  /** ISO time the server entered its current state. */
  since: z.string(),
  /** Tools of this server that another server's tool of the same name replaced. */
  shadowed_tools: z.array(z.string()),
});
export type ServerView = z.infer<typeof ServerView>;
