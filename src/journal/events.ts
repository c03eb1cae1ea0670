import { z } from 'zod';
import { ServerConfigResponse } from '../config/masking.js';
import { LoggingLevel } from '../config/schema.js';
import { ErrorKind } from '../errors.js';
import { ToolUiRef } from '../apps/tool-meta.js';

/** The seven server states views show (docs/contract.md, Lifecycle). */
export const ServerState = z.enum(['disabled', 'pending', 'authenticating', 'ready', 'needs_reauth', 'error', 'stopped']);
export type ServerState = z.infer<typeof ServerState>;

/**
 * A registered tool as the journal records it: names, description and input
 * schema (what search and a server started on demand publish from the last
 * run), never a handler. Journals written before the schema was kept lack it.
 */
export const ToolEntry = z.object({
  name: z.string(),
  original: z.string(),
  title: z.string().optional(),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()).optional(),
  /** The tool's MCP Apps metadata (`_meta.ui`); absent when it names neither a UI resource nor a visibility. */
  ui: ToolUiRef.optional(),
});
export type ToolEntry = z.infer<typeof ToolEntry>;

/** A listed resource as the journal records it: what a reader needs to find it, not its contents. */
export const ListedResource = z.object({
  uri: z.string(),
  name: z.string(),
  description: z.string().optional(),
  mimeType: z.string().optional(),
});
export type ListedResource = z.infer<typeof ListedResource>;

export const ListedTemplate = z.object({
  uriTemplate: z.string(),
  name: z.string(),
  description: z.string().optional(),
  mimeType: z.string().optional(),
});
export type ListedTemplate = z.infer<typeof ListedTemplate>;

export const ListedPrompt = z.object({
  name: z.string(),
  description: z.string().optional(),
  arguments: z
    .array(z.object({ name: z.string(), description: z.string().optional(), required: z.boolean().optional() }))
    .optional(),
});
export type ListedPrompt = z.infer<typeof ListedPrompt>;

/** What a server may offer beside its tools, each listed apart once it is ready. */
export const OfferedKind = z.enum(['resources', 'prompts']);
export type OfferedKind = z.infer<typeof OfferedKind>;

/** Every event has its place (`seq`, growing for the life of the state dir) and time. */
const stamped = {
  seq: z.number().int().positive(),
  at: z.string(),
  /** The worker that wrote it, in a store the fleet shares (PostgreSQL); absent in a worker's own store. */
  worker: z.string().optional(),
};
/** Almost every event is about one server; `worker.started` is the exception. */
const base = { ...stamped, server: z.string() };

/**
 * Domain events: every lifecycle transition and every (un)registration.
 * Each carries only names, states, masked config and one-line errors, so the
 * journal is safe to show, store and stream.
 */
export const JournalEvent = z.discriminatedUnion('type', [
  /**
   * A worker process opened the journal: the boundary between two runs. What
   * the projection knew of each server becomes its `last_run`; nothing is
   * registered until an actor of this run reaches `ready`.
   */
  z.object({ ...stamped, type: z.literal('worker.started'), pid: z.number().int() }),
  /**
   * A server actor was published: a new `actor` id for this server (a restart
   * or config change replaces the actor). `config` is the masked form.
   */
  z.object({ ...base, type: z.literal('server.configured'), actor: z.string(), config: ServerConfigResponse }),
  z.object({
    ...base,
    type: z.literal('server.transitioned'),
    /** The actor that moved; a replaced actor's last steps do not change the server's view. */
    actor: z.string(),
    from: ServerState.nullable(),
    to: ServerState,
    error: z.string().nullable(),
    error_kind: ErrorKind.nullable(),
    /**
     * On an entry into `ready`: which of resources and prompts the server
     * offers. Their listings follow (`resources.listed`, `prompts.listed`); a
     * kind it does not offer is never listed. Absent on other transitions and
     * in journals written before it was recorded.
     */
    offers: z.array(OfferedKind).optional(),
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
  /** A ready server's latest resource listing (its first, and each after a change); replaces the one before. */
  z.object({
    ...base,
    type: z.literal('resources.listed'),
    resources: z.array(ListedResource),
    templates: z.array(ListedTemplate),
  }),
  /** A ready server's latest prompt listing; replaces the one before. */
  z.object({ ...base, type: z.literal('prompts.listed'), prompts: z.array(ListedPrompt) }),
  /** A `notifications/message` of the server; `message` is its data as text, secrets redacted, bounded. */
  z.object({
    ...base,
    type: z.literal('server.log'),
    level: LoggingLevel,
    logger: z.string().nullable(),
    message: z.string(),
  }),
  /**
   * A call of an `ask` tool waits for a decision (`id` names it in the API).
   * `arguments` as the model sent them, every config secret of the server masked.
   */
  z.object({
    ...base,
    type: z.literal('approval.requested'),
    id: z.string(),
    tool: z.string(),
    original: z.string(),
    arguments: z.record(z.string(), z.unknown()),
    /** Whose call waits (absent in journals written before principals). */
    principal: z.string().optional(),
  }),
  /**
   * How the wait of `approval.requested` `id` ended. `by`: the host's
   * `callback`, the management `page`, or an `api` client (bearer token);
   * `null` for `timeout` and `cancelled` (the call's own signal aborted).
   */
  z.object({
    ...base,
    type: z.literal('approval.decided'),
    id: z.string(),
    tool: z.string(),
    decision: z.enum(['allow', 'deny', 'timeout', 'cancelled']),
    by: z.enum(['callback', 'page', 'api']).nullable(),
    /** Whose call it was (absent in journals written before principals). */
    principal: z.string().optional(),
    /** Who decided, for a decision of the `page` or the `api`: `admin` or a user (absent for the callback, a timeout, a cancel). */
    decided_by: z.string().optional(),
  }),
  /**
   * `principal` began an OAuth consent for the server (`POST /api/mcp/servers/:name/auth`,
   * `host.beginAuth`): the authorization URL was handed to them. How it ends is the
   * server's own transitions (`authenticating` → `ready`, or back to `needs_reauth`).
   */
  z.object({ ...base, type: z.literal('consent.begun'), principal: z.string() }),
  /**
   * `principal`'s own consent for a `per_user` server came back and its grant
   * is stored (the callback at `<publicUrl>/oauth/callback`, in the browser
   * that began it).
   */
  z.object({ ...base, type: z.literal('consent.completed'), principal: z.string() }),
  /**
   * A consent's answer came back (the callback at `<publicUrl>/oauth/callback`) but did not authorize: the
   * authorization server refused the code, or the user refused. `error` says why, never the code or a token.
   * `principal`: whose grant it was for (`admin` for a shared server's).
   */
  z.object({ ...base, type: z.literal('consent.failed'), principal: z.string(), error: z.string() }),
  /**
   * `principal` set (`set`) or removed (`removed`) their own values of the server's
   * `user_inputs`: names only, never a value.
   */
  z.object({
    ...base,
    type: z.literal('inputs.changed'),
    principal: z.string(),
    set: z.array(z.string()),
    removed: z.array(z.string()),
  }),
  /**
   * A tool of the server was called, by `principal` (`admin` for the admin
   * token and a library call that names no principal): how it ended and how
   * long it took. Never its arguments or result, which may hold secrets.
   */
  z.object({
    ...base,
    type: z.literal('tool.called'),
    tool: z.string(),
    principal: z.string(),
    outcome: z.enum(['ok', 'error', 'cancelled']),
    duration_ms: z.number().int().min(0),
    /** Set when the principal's quota refused the call (outcome `error`, the server never asked): which limit. */
    refused_by: z.enum(['calls_per_minute', 'max_concurrent_calls']).optional(),
  }),
  /**
   * A `per_user` server's session of `principal` changed state (session.machine.ts):
   * `error` when it failed, `reason` (`idle`, `evicted`, `stopped`) when it closed.
   */
  z.object({
    ...base,
    type: z.literal('session.changed'),
    principal: z.string(),
    state: z.enum(['connecting', 'ready', 'closing', 'closed', 'failed']),
    error: z.string().nullable().optional(),
    reason: z.enum(['idle', 'evicted', 'stopped']).nullable().optional(),
  }),
]);
export type JournalEvent = z.infer<typeof JournalEvent>;
/** The events about one server (all but `worker.started`). */
export type ServerJournalEvent = Exclude<JournalEvent, { type: 'worker.started' }>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event before the store stamps it with `seq`, `at` (and `worker`). */
export type JournalEventInput = DistributiveOmit<JournalEvent, 'seq' | 'at' | 'worker'>;

interface Described {
  name: string;
  description?: string | undefined;
}

/**
 * The `resources.listed` event of a listing (SDK `Resource` / `ResourceTemplate`
 * fit): only the fields the journal records, and no `undefined` member, so
 * the event is the same before and after a trip through JSON.
 */
export function resourcesListed(
  server: string,
  resources: ReadonlyArray<Described & { uri: string; mimeType?: string | undefined }>,
  templates: ReadonlyArray<Described & { uriTemplate: string; mimeType?: string | undefined }>,
): JournalEventInput {
  return {
    type: 'resources.listed',
    server,
    resources: resources.map(({ uri, name, description, mimeType }) => definedOnly({ uri, name, description, mimeType })),
    templates: templates.map(({ uriTemplate, name, description, mimeType }) =>
      definedOnly({ uriTemplate, name, description, mimeType }),
    ),
  };
}

/** The `prompts.listed` event of a listing (SDK `Prompt` fits), as {@link resourcesListed}. */
export function promptsListed(
  server: string,
  prompts: ReadonlyArray<Described & { arguments?: ReadonlyArray<Described & { required?: boolean | undefined }> | undefined }>,
): JournalEventInput {
  return {
    type: 'prompts.listed',
    server,
    prompts: prompts.map(({ name, description, arguments: args }) =>
      definedOnly({
        name,
        description,
        arguments: args?.map((arg) => definedOnly({ name: arg.name, description: arg.description, required: arg.required })),
      }),
    ),
  };
}

type DefinedOnly<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & {
  [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
};

function definedOnly<T extends object>(record: T): DefinedOnly<T> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as DefinedOnly<T>;
}
