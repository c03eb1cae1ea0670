/**
 * A server's tools: every page of tools/list (the SDK walks the pages, up to
 * the client's `listMaxPages`), the config's include/exclude filter, and the
 * validators of their output schemas (built lazily).
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import { ProtocolError, ProtocolErrorCode, type Client, type JsonSchemaType, type JsonSchemaValidator, type jsonSchemaValidator, type Tool } from '@modelcontextprotocol/client';
import type { ToolFilter } from '../config/index.js';
import { linkedSignal } from './deadlines.js';
import type { RequestBound } from './remote-transport.js';
import { listingScope, type CacheScope } from './cache-scope.js';

/** Where a connect is, for the error it gives if it stops there. */
export interface HandshakeProgress {
  phase: 'initialize' | 'tools/list';
}

/** A tool listing and how long the server said it stays fresh. */
export interface ToolListing {
  tools: Tool[];
  /** The result's `ttlMs` (2026-07-28 era), or null when it gave none (see {@link ttlOf}). */
  ttlMs: number | null;
  /** Its `cacheScope` (2026-07-28 era; one private page makes it private), or null on the 2025 era, which has none. */
  scope: CacheScope | null;
}

/** Every page of the server's tools. */
export async function listAllTools(client: Client, bound: RequestBound, progress: HandshakeProgress): Promise<ToolListing> {
  progress.phase = 'tools/list';
  const scope = listingScope(client, 'tools/list');
  // A server without the capability has none to list (the SDK would say so on the console for every listing).
  if (client.getServerCapabilities()?.tools === undefined) return { tools: [], ttlMs: null, scope: scope() };
  const result = await listEveryPage(bound, (request) => client.listTools(undefined, { ...request, cacheMode: 'bypass' }));
  return { tools: result.tools, ttlMs: ttlOf(client, result), scope: scope() };
}

/** The SDK's own cap on a `ttlMs` (24 h): a server cannot pin a listing forever. */
export const MAX_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * How long a list result stays fresh, in ms, by the server's `ttlMs` on the
 * 2026-07-28 era; null when there is no usable hint. `0` counts as none: both
 * SDKs stamp it on every result whose author set nothing, and it tells a
 * response cache not to reuse the body, while the catalog is kept current by
 * the server's announcements; re-listing it on every read would cost a
 * request per read for every modern server.
 */
export function ttlOf(client: Client, result: object): number | null {
  if (client.getProtocolEra() !== 'modern') return null;
  const ttlMs = (result as { ttlMs?: unknown }).ttlMs;
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs <= 0) return null;
  return Math.min(ttlMs, MAX_TTL_MS);
}

/**
 * One list request with every page (the SDK follows `nextCursor` when no cursor
 * is given), on a signal of its own: the SDK adds an abort listener to the
 * signal of every page it requests and never removes it, so a long-lived
 * signal handed to it directly would collect one per page.
 *
 * Callers ask for `cacheMode: 'bypass'`: a listing always reaches the server,
 * and the SDK's response cache is not written either. mcp-fleet keeps the
 * listing in its own catalog and never reads it back from the SDK's cache,
 * which would otherwise hold every listing a second time, as a JSON string,
 * per server (and stringify it on every re-sync).
 */
export async function listEveryPage<T>(bound: RequestBound, list: (request: RequestBound) => Promise<T>): Promise<T> {
  const link = linkedSignal(bound.signal);
  try {
    return await list({ signal: link.signal, timeout: bound.timeout });
  } finally {
    link.dispose();
  }
}

/**
 * A listing the server has no handler for lists nothing: servers of older SDKs
 * offer `resources` with no resources/templates/list handler and answer
 * "method not found". Any other failure stays one.
 */
export function noneIfUnhandled<T>(listing: Promise<T>, none: T): Promise<T> {
  return listing.catch((error: unknown) => {
    if (error instanceof ProtocolError && error.code === ProtocolErrorCode.MethodNotFound) return none;
    throw error;
  });
}

/** Applies `include` (null = all) and then `exclude`, keeping the server's order. */
export function filterTools<T extends { name: string }>(tools: readonly T[], filter: ToolFilter): T[] {
  const include = filter.include === null ? null : new Set(filter.include);
  const exclude = new Set(filter.exclude);
  return tools.filter((tool) => (include === null || include.has(tool.name)) && !exclude.has(tool.name));
}

/**
 * The SDK's Ajv validator (output schemas of tools), built on first use, and
 * each schema compiled on its first use and kept while its listing lives (the
 * calls hand the SDK the listed tool, the same schema object every time). By
 * default every Client builds its own Ajv instance up front (~1–2 ms of
 * blocking work and tens of KiB per server, also for the many servers whose
 * tools declare no output schema); compiled eagerly, 5,000 output schemas
 * block for seconds on every re-sync. One Ajv per client still, since schema
 * `$id`s of different servers must not meet.
 */
export class LazyValidator implements jsonSchemaValidator {
  #ajv: AjvJsonSchemaValidator | undefined;
  readonly #compiled = new WeakMap<object, JsonSchemaValidator<unknown>>();

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const known = this.#compiled.get(schema);
    if (known !== undefined) return known as JsonSchemaValidator<T>;
    let compiled: JsonSchemaValidator<T> | undefined;
    const validator: JsonSchemaValidator<T> = (input) => {
      this.#ajv ??= new AjvJsonSchemaValidator();
      compiled ??= this.#ajv.getValidator<T>(schema);
      return compiled(input);
    };
    this.#compiled.set(schema, validator as JsonSchemaValidator<unknown>);
    return validator;
  }
}
