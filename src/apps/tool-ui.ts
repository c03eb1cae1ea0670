/**
 * A tool's app: the HTML of the `ui://` resource its `_meta.ui` names, with
 * what the resource's own `_meta.ui` declares (CSP domains, permissions,
 * border, domain). Read through the server's live connection on first use and
 * kept with the catalog: dropped when the server announces a tool or resource
 * list change, when `notifications/resources/updated` names the resource, and
 * when the server leaves `ready` (or registers its tools again).
 */
import { z } from 'zod';
import { McpUiResourceMetaSchema } from '@modelcontextprotocol/ext-apps/app-bridge';
import type { Client, ReadResourceResult } from '@modelcontextprotocol/client';
import { notificationsOf } from '../connection/notifications.js';
import { holdSubscription, releaseSubscription } from '../connection/resource-subscriptions.js';
import { observeRequest } from '../telemetry/requests.js';
import { ATTR } from '../telemetry/attributes.js';
import { FleetError, NotReadyError, oneLine } from '../errors.js';
import { redact, secretValues } from '../config/masking.js';
import type { JournalEvent, ProjectionContext, Selectors, ToolEntry } from '../journal/index.js';
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { LiveConnection } from '../connection/index.js';
import { topState } from '../machines/server.queries.js';
import { APP_MIME_TYPE, ToolVisibility } from './tool-meta.js';
import { own } from '../records.js';

/** The permissions an app asks for (Permission Policy features): each present key is one asked for. */
export const AppPermissions = z.object({
  camera: z.object({}).optional(),
  microphone: z.object({}).optional(),
  geolocation: z.object({}).optional(),
  clipboardWrite: z.object({}).optional(),
});
export type AppPermissions = z.infer<typeof AppPermissions>;

/** The origins an app declares it needs, by CSP directive; `[]` when it declares none (the host allows none). */
export const AppCsp = z.object({
  connectDomains: z.array(z.string()),
  resourceDomains: z.array(z.string()),
  frameDomains: z.array(z.string()),
  baseUriDomains: z.array(z.string()),
});
export type AppCsp = z.infer<typeof AppCsp>;

/** A tool's app, ready to render. */
export const ToolUi = z.object({
  /** The tool's name as agents see it (`{server}__{tool}`). */
  tool: z.string(),
  server: z.string(),
  /** The tool's name on its server: what its app calls it. */
  original: z.string(),
  resourceUri: z.string(),
  html: z.string(),
  csp: AppCsp,
  permissions: AppPermissions,
  /** The app asks for a visible border (true), none (false), or leaves it to the host (null). */
  prefersBorder: z.boolean().nullable(),
  /** The dedicated origin the app asks for (host-dependent), or null. */
  domain: z.string().nullable(),
  /** Who may call the tool; without `"model"` it is app-only. */
  visibility: z.array(ToolVisibility),
});
export type ToolUi = z.infer<typeof ToolUi>;

/** What the resource read gives, shared by every tool naming that resource. */
export type AppResource = Pick<ToolUi, 'html' | 'csp' | 'permissions' | 'prefersBorder' | 'domain'>;

/** The per-server cache: the connection it was read on, and each resource read (or being read). */
interface ServerCache {
  live: LiveConnection;
  reads: Map<string, Promise<AppResource>>;
  /** Resources this cache subscribed to (`resources/subscribe`), so each is asked once. */
  subscribed: Set<string>;
  stop: () => void;
}

export interface ToolUisOptions {
  projected(): ProjectionContext;
  selectors: Pick<Selectors, 'toolOwner'>;
  current(name: string): ServerActorRef | undefined;
  /** The live journal: a server leaving `ready`, registering its tools or removed drops what was read from it. */
  subscribe(listener: (event: JournalEvent) => void): () => void;
}

export interface ToolUis {
  /** The tool's app; null when no tool of that name names a UI resource. Rejects with NotReadyError while its server is not ready. */
  toolUi(name: string): Promise<ToolUi | null>;
  /** The registered tool of that name, and its server, or undefined. */
  locate(name: string): { server: string; entry: ToolEntry } | undefined;
  /** Stops listening to the journal and forgets every resource. */
  close(): void;
}

/** Whether a content's MIME type is the app profile (case and spaces aside). */
function isAppMimeType(mimeType: string | undefined): boolean {
  return mimeType !== undefined && mimeType.replace(/\s+/g, '').toLowerCase() === APP_MIME_TYPE;
}

/** The app resource out of a `resources/read` result: its HTML and its `_meta.ui`. */
export function appResource(server: string, uri: string, result: ReadResourceResult): AppResource {
  const content = result.contents.find((item) => item.uri === uri) ?? result.contents[0];
  if (content === undefined) throw new FleetError('protocol', `server ${server}: resource ${uri} came back empty`);
  if (!isAppMimeType(content.mimeType)) {
    throw new FleetError(
      'protocol',
      `server ${server}: resource ${uri} is not an MCP App (mimeType ${JSON.stringify(content.mimeType ?? null)}, expected ${APP_MIME_TYPE})`,
    );
  }
  const html = 'text' in content ? content.text : Buffer.from(content.blob, 'base64').toString('utf8');
  const parsed = McpUiResourceMetaSchema.safeParse((content._meta as { ui?: unknown } | undefined)?.ui ?? {});
  if (!parsed.success) {
    throw new FleetError('protocol', `server ${server}: resource ${uri} has malformed _meta.ui: ${oneLine(parsed.error.message)}`);
  }
  const meta = parsed.data;
  return {
    html,
    csp: {
      connectDomains: meta.csp?.connectDomains ?? [],
      resourceDomains: meta.csp?.resourceDomains ?? [],
      frameDomains: meta.csp?.frameDomains ?? [],
      baseUriDomains: meta.csp?.baseUriDomains ?? [],
    },
    permissions: AppPermissions.parse(meta.permissions ?? {}),
    prefersBorder: meta.prefersBorder ?? null,
    domain: meta.domain ?? null,
  };
}

/** Reads the app resource `uri` of `server` through `client`; a failure is said without `secrets`. */
export async function readAppResource(server: string, client: Client, uri: string, timeoutMs: number, secrets: readonly string[]): Promise<AppResource> {
  let result: ReadResourceResult;
  try {
    result = await observeRequest(client, 'resources/read', { detail: { [ATTR.resourceUri]: uri } }, () => client.readResource({ uri }, { timeout: timeoutMs }));
  } catch (error) {
    // Said as any failed read of a server is (`protocol`, redacted): the page and the API show why the app cannot open.
    const why = `server ${server}: resource ${uri} could not be read: ${oneLine(error instanceof Error ? error.message : String(error))}`;
    throw new FleetError('protocol', redact(why, secrets));
  }
  return appResource(server, uri, result);
}

/** The live connection of a ready server, or NotReadyError. */
export function readyConnection(current: ToolUisOptions['current'], server: string): LiveConnection {
  const snapshot = current(server)?.getSnapshot();
  const live = snapshot?.context.live;
  if (snapshot === undefined || !snapshot.hasTag('callable') || live == null) {
    throw new NotReadyError(server, snapshot === undefined ? 'stopped' : topState(snapshot));
  }
  return live;
}

export function createToolUis(options: ToolUisOptions): ToolUis {
  const { projected, selectors, current } = options;
  const caches = new Map<string, ServerCache>();

  function drop(server: string): void {
    const cache = caches.get(server);
    if (cache === undefined) return;
    caches.delete(server);
    cache.stop();
  }

  const unsubscribe = options.subscribe((event) => {
    if (event.type === 'worker.started' || !caches.has(event.server)) return;
    if (
      event.type === 'server.removed' ||
      event.type === 'tools.registered' ||
      event.type === 'tools.unregistered' ||
      (event.type === 'server.transitioned' && event.to !== 'ready')
    ) {
      drop(event.server);
    }
  });

  /** The cache of `server` for `live`: a new connection starts empty. */
  function cacheOf(server: string, live: LiveConnection): ServerCache {
    const known = caches.get(server);
    if (known?.live === live) return known;
    if (known !== undefined) drop(server);
    const dispatcher = notificationsOf(live.connection.client);
    const cache: ServerCache = { live, reads: new Map(), subscribed: new Set(), stop: () => {} };
    const forgetAll = () => {
      if (caches.get(server) === cache) drop(server);
    };
    const stops = [
      dispatcher.subscribe('notifications/tools/list_changed', forgetAll),
      dispatcher.subscribe('notifications/resources/list_changed', forgetAll),
      dispatcher.subscribe('notifications/resources/updated', (notification) => {
        cache.reads.delete(notification.params.uri);
      }),
    ];
    cache.stop = () => {
      for (const stop of stops) stop();
      // Let go of what it held: the server stays subscribed while a gateway client holds the resource too.
      for (const uri of cache.subscribed) void releaseSubscription(live.connection.client, uri, cache).catch(() => {});
    };
    caches.set(server, cache);
    return cache;
  }

  function read(server: string, client: Client, uri: string, timeoutMs: number): Promise<AppResource> {
    const config = current(server)?.getSnapshot().context.config;
    return readAppResource(server, client, uri, timeoutMs, config === undefined ? [] : secretValues(config));
  }

  /**
   * Asks a server that offers subscriptions to tell when the resource changes (2025 era); best
   * effort. Held like a gateway client's subscription, so neither lets go of the other's.
   */
  function subscribeTo(cache: ServerCache, client: Client, uri: string): void {
    if (cache.subscribed.has(uri)) return;
    if (client.getProtocolEra() === 'modern' || client.getServerCapabilities()?.resources?.subscribe !== true) return;
    cache.subscribed.add(uri);
    holdSubscription(client, uri, cache).catch(() => cache.subscribed.delete(uri));
  }

  function locate(name: string): { server: string; entry: ToolEntry } | undefined {
    const context = projected();
    const owner = selectors.toolOwner(context, name);
    const server = owner === undefined ? undefined : own(context.servers, owner);
    if (owner === undefined || server === undefined) return undefined;
    const entry = server.tools.find((tool) => tool.name === name) ?? server.known_tools?.find((tool) => tool.name === name);
    return entry === undefined ? undefined : { server: owner, entry };
  }

  return {
    locate,
    async toolUi(name) {
      const found = locate(name);
      const uri = found?.entry.ui?.resource_uri;
      if (found === undefined || uri == null) return null;
      const { server, entry } = found;
      const live = readyConnection(current, server);
      const cache = cacheOf(server, live);
      let reading = cache.reads.get(uri);
      if (reading === undefined) {
        const client = live.connection.client;
        const timeoutMs = (current(server)?.getSnapshot().context.config.call_timeout_seconds ?? 60) * 1000;
        reading = read(server, client, uri, timeoutMs);
        cache.reads.set(uri, reading);
        // A failed read is not kept: the next use asks again.
        reading.catch(() => {
          if (cache.reads.get(uri) === reading) cache.reads.delete(uri);
        });
        subscribeTo(cache, client, uri);
      }
      const resource = await reading;
      return {
        tool: entry.name,
        server,
        original: entry.original,
        resourceUri: uri,
        ...resource,
        visibility: entry.ui?.visibility ?? [],
      };
    },
    close() {
      unsubscribe();
      for (const server of [...caches.keys()]) drop(server);
    },
  };
}
