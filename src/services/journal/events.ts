import { z } from 'zod';
import { LoggingLevel } from '../config/schema.js';
import { ErrorKind } from '../support/errors.js';

/** The server lifecycle states of SPEC §4. */
export const ServerState = z.enum(['disabled', 'pending', 'authenticating', 'ready', 'needs_reauth', 'error', 'stopped']);
export type ServerState = z.infer<typeof ServerState>;

/** A registered tool as the journal records it: names and description, never a handler. */
export const ToolEntry = z.object({
  name: z.string(),
  original: z.string(),
  description: z.string(),
});
export type ToolEntry = z.infer<typeof ToolEntry>;

const base = {
  seq: z.number().int().positive(),
  at: z.string(),
  server: z.string(),
};

/**
 * Domain events: every lifecycle transition and every (un)registration.
 * Each carries only names, states, masked config and one-line errors, so the
 * journal is safe to show, store and stream.
 */
export const JournalEvent = z.discriminatedUnion('type', [
  /**
   * A server actor was published: a new `actor` id for this server (a restart
   * or config change replaces the actor). `config` is the masked form.
   */
  z.object({ ...base, type: z.literal('server.configured'), actor: z.string(), config: z.record(z.string(), z.unknown()) }),
  z.object({
    ...base,
    type: z.literal('server.transitioned'),
    /** The actor that moved; a replaced actor's last steps do not change the server's view. */
    actor: z.string(),
    from: ServerState.nullable(),
    to: ServerState,
    error: z.string().nullable(),
    error_kind: ErrorKind.nullable(),
  }),
  /** The server's actor is gone (removed from the config). */
  z.object({ ...base, type: z.literal('server.removed') }),
  z.object({ ...base, type: z.literal('tools.registered'), tools: z.array(ToolEntry) }),
  z.object({ ...base, type: z.literal('tools.unregistered'), tools: z.array(z.string()) }),
  /** `tool` of `server` replaced `shadowed_server`'s tool of the same name (last wins). */
  z.object({ ...base, type: z.literal('tool.shadowed'), tool: z.string(), shadowed_server: z.string() }),
  /**
   * A ready server's tools, resources (and templates) or prompts changed after
   * `notifications/…/list_changed`: names (resource URIs, template URI templates)
   * that appeared, went away, or kept their name with a new definition.
   */
  z.object({
    ...base,
    type: z.literal('catalog.changed'),
    kind: z.enum(['tools', 'resources', 'prompts']),
    added: z.array(z.string()),
    removed: z.array(z.string()),
    changed: z.array(z.string()),
  }),
  /** A `notifications/message` of the server; `message` is its data as text, secrets redacted, bounded. */
  z.object({
    ...base,
    type: z.literal('server.log'),
    level: LoggingLevel,
    logger: z.string().nullable(),
    message: z.string(),
  }),
]);
export type JournalEvent = z.infer<typeof JournalEvent>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event before the journal stamps it with `seq` and `at`. */
export type JournalEventInput = DistributiveOmit<JournalEvent, 'seq' | 'at'>;
