/**
 * Resource subscriptions of 2026 `subscriptions/listen` streams at `/mcp`. The
 * SDK's listen router answers such a stream itself and filters one event bus
 * by URI alone, so it can tell neither whose stream is whose nor the gateway
 * which URIs a stream names. The gateway therefore reads the filter before the
 * router does: each URI is subscribed at its server for the caller (as a 2025
 * `resources/subscribe` is), a URI it cannot subscribe is taken out of the
 * filter (so the acknowledgement names only what is honored), and each update
 * goes to the listener of the stream that named the URI alone. The bus knows a
 * listener's stream by the request it was registered in (AsyncLocalStorage).
 * The subscriptions are let go when the stream closes; a server that leaves
 * `ready` (or the caller's session of it that closes) ends the stream, so the
 * client listens again. List changes go through {@link ListenSubscriptions.listChanged}
 * to the streams whose caller may see a changed server, by the same
 * knowledge of whose stream is whose.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Response } from 'express';
import type { ServerEvent, ServerEventBus } from '@modelcontextprotocol/server';
import type { McpHost } from '../host.js';
import type { Principal } from '../users/index.js';
import { endsWatches, watchResource, type Watch } from './aggregate.js';

type Listener = (event: ServerEvent) => void;

/** One open listen stream with resource subscriptions. */
interface Stream {
  principal: Principal | undefined;
  watches: Watch[];
  /** The router's listener for it, once it registered. */
  listener?: Listener;
  end(): void;
}

export interface ListenSubscriptions {
  /** The bus of `/mcp`'s handler: resource updates to the streams that named the URI. */
  bus: ServerEventBus;
  /** Tells of a changed list of `kind` the streams whose caller `mayKnow` (a stream of a caller not known yet: told). */
  listChanged(kind: ListKind, mayKnow: (principal: Principal | undefined) => boolean): void;
  /**
   * Runs `serve` (one 2026 request, `body` parsed) as it is, or, for a `subscriptions/listen`
   * naming resources, with them held for the caller while its stream is open (`body`'s filter
   * keeps only those).
   */
  serve(principal: Principal | undefined, body: unknown, res: Response, serve: () => Promise<void>): Promise<void>;
  close(): void;
}

/** The lists whose changes a listen stream is told of. */
export type ListKind = 'tools' | 'resources' | 'prompts';
const LIST_CHANGED = { tools: 'tools_list_changed', resources: 'resources_list_changed', prompts: 'prompts_list_changed' } as const;

function isListen(body: unknown): boolean {
  return typeof body === 'object' && body !== null && (body as { method?: unknown }).method === 'subscriptions/listen';
}

/** The `resourceSubscriptions` of a `subscriptions/listen` request body, to rewrite in place; undefined for any other request. */
function resourceFilter(body: unknown): { notifications: { resourceSubscriptions: unknown[] } } | undefined {
  if (!isListen(body)) return undefined;
  const params = (body as { params?: { notifications?: { resourceSubscriptions?: unknown } } }).params;
  const uris = params?.notifications?.resourceSubscriptions;
  return Array.isArray(uris) && uris.length > 0 ? (params as { notifications: { resourceSubscriptions: unknown[] } }) : undefined;
}

export function listenSubscriptions(host: McpHost): ListenSubscriptions {
  const registering = new AsyncLocalStorage<Stream>();
  /** Each router listener, with the stream (and so the caller) it was registered for. */
  const listeners = new Map<Listener, Stream | undefined>();
  const streams = new Set<Stream>();
  let following: (() => void) | undefined;

  const tell = (listener: Listener, event: ServerEvent) => {
    try {
      listener(event);
    } catch {
      // One stream's failure is not another's.
    }
  };
  const bus: ServerEventBus = {
    publish(event) {
      for (const listener of listeners.keys()) tell(listener, event);
    },
    subscribe(listener) {
      const stream = registering.getStore();
      if (stream !== undefined) stream.listener = listener;
      listeners.set(listener, stream);
      return () => {
        listeners.delete(listener);
        if (stream?.listener === listener) stream.listener = undefined;
      };
    },
  };

  const follow = () =>
    (following ??= host.subscribe((event) => {
      for (const stream of streams) {
        const ends = endsWatches(event, stream.principal);
        if (ends !== undefined && stream.watches.some(ends)) stream.end();
      }
    }));

  return {
    bus,
    listChanged(kind, mayKnow) {
      const event: ServerEvent = { kind: LIST_CHANGED[kind] };
      listeners.forEach((stream, listener) => {
        if (stream === undefined || mayKnow(stream.principal)) tell(listener, event);
      });
    },
    async serve(principal, body, res, serve) {
      if (!isListen(body)) return serve();
      const filter = resourceFilter(body);
      // A stream with no resources named: only whose it is, for the list changes it may be told of.
      if (filter === undefined) return registering.run({ principal, watches: [], end: () => res.destroy() }, serve);
      const signal = AbortSignal.timeout(60_000);
      const stream: Stream = { principal, watches: [], end: () => res.destroy() };
      const asked = [...new Set(filter.notifications.resourceSubscriptions.filter((uri): uri is string => typeof uri === 'string'))];
      const held = await Promise.all(
        asked.map((uri) =>
          watchResource(host, principal, uri, signal, (params) => stream.listener?.({ kind: 'resource_updated', uri, params })).then(
            (watch) => ({ uri, watch }),
            () => undefined,
          ),
        ),
      );
      stream.watches = held.flatMap((each) => (each === undefined ? [] : [each.watch]));
      filter.notifications.resourceSubscriptions = held.flatMap((each) => (each === undefined ? [] : [each.uri]));
      const done = () => {
        if (!streams.delete(stream)) return;
        for (const watch of stream.watches) void watch.release().catch(() => {});
        if (streams.size === 0) {
          following?.();
          following = undefined;
        }
      };
      streams.add(stream);
      follow();
      res.on('close', done);
      // Gone while its subscriptions were made: nothing will close it again.
      if (res.closed) return done();
      await registering.run(stream, serve);
    },
    close() {
      following?.();
      following = undefined;
      for (const stream of [...streams]) stream.end();
    },
  };
}
