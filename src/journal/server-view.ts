import { z } from 'zod';
import { ServerConfigResponse } from '../config/masking.js';
import { AuthKind } from '../config/schema.js';
import { ErrorKind } from '../errors.js';
import { ServerState } from './events.js';

/** How a server ended the previous run of the worker: its last known state then. */
export const LastRun = z.object({
  state: ServerState,
  error: z.string().nullable(),
  error_kind: ErrorKind.nullable(),
  tool_count: z.number().int(),
  /** ISO time the server entered that state. */
  at: z.string(),
});
export type LastRun = z.infer<typeof LastRun>;

/** How a server is seen by every API: `ServerView` (docs/contract.md, API shapes). */
/**
 * Where a server's credentials stand: `none` (no auth), `configured` (given,
 * not proven in this state), `authorized` (a ready connection uses them),
 * `needs_reauth` (refused: a person must sign in or give a new token),
 * `authenticating` (a refresh or consent under way).
 */
export const AuthStatus = z.enum(['none', 'configured', 'authorized', 'needs_reauth', 'authenticating']);
export type AuthStatus = z.infer<typeof AuthStatus>;

export const ServerView = z.object({
  name: z.string(),
  /** The masked config (`toResponse()`); never a secret. */
  config: ServerConfigResponse,
  state: ServerState,
  ready: z.boolean(),
  error: z.string().nullable(),
  error_kind: ErrorKind.nullable(),
  auth: z.object({
    kind: AuthKind,
    status: AuthStatus,
  }),
  tool_count: z.number().int(),
  /** ISO time the server entered its current state. */
  since: z.string(),
  /** The previous run's end, or `null` (a fresh state dir, or a server first configured in this run). */
  last_run: LastRun.nullable(),
  /** Tools of this server that another server's tool of the same name replaced. */
  shadowed_tools: z.array(z.string()),
  /**
   * The stored config's version: it moves whenever the server's stored config
   * changes, and only grows (a global counter in PostgreSQL; on the file, one kept in
   * `<state_dir>/config_versions.json`).
   * Send it back as `If-Match` to change only what you saw. `null` when not stored.
   */
  version: z.number().int().nullable(),
});
export type ServerView = z.infer<typeof ServerView>;
