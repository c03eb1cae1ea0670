/**
 * One dispatcher per SDK client for the server's notifications. The SDK keeps
 * a single handler per method (`setNotificationHandler` replaces the previous
 * one, including its own `listChanged` handling), so the dispatcher owns each
 * method and fans every notification out to all of its subscribers: catalog
 * sync, journal, worker log. No two consumers compete for one message.
 *
 * `notifications/progress` stays with the SDK's Protocol, which routes it to
 * the call it belongs to (`onprogress`). `notifications/cancelled` is routed
 * to the request handler it cancels (`extra.signal`) here, see {@link abortServedRequest}.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CancelledNotificationSchema,
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CancelledNotification,
  type LoggingMessageNotification,
  type RequestId,
  type PromptListChangedNotification,
  type ResourceListChangedNotification,
  type ToolListChangedNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { requestAbortControllers } from './sdk-internals.js';

/** The notifications the dispatcher owns, by method. */
export interface ServerNotifications {
  'notifications/tools/list_changed': ToolListChangedNotification;
  'notifications/resources/list_changed': ResourceListChangedNotification;
  'notifications/prompts/list_changed': PromptListChangedNotification;
  'notifications/message': LoggingMessageNotification;
}
export type NotificationMethod = keyof ServerNotifications;

const SCHEMAS = [
  ToolListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  PromptListChangedNotificationSchema,
  LoggingMessageNotificationSchema,
] as const;

/** Notifications kept per method while nobody listens yet (a server may speak before the host subscribes). */
export const HELD_PER_METHOD = 64;

export interface NotificationDispatcher {
  /**
   * Calls `listener` for every notification of `method` until the returned
   * function is called. The first subscriber of a method also gets the ones
   * that arrived while it had none (at most {@link HELD_PER_METHOD}, oldest dropped).
   */
  subscribe<M extends NotificationMethod>(method: M, listener: (notification: ServerNotifications[M]) => void): () => void;
}

type Listener = (notification: ServerNotifications[NotificationMethod]) => void;

const dispatchers = new WeakMap<Client, NotificationDispatcher>();

/**
 * The dispatcher of `client`, installed on first use. Call it before
 * `client.connect` so nothing the server sends right after initialize is lost.
 */
export function notificationsOf(client: Client): NotificationDispatcher {
  let dispatcher = dispatchers.get(client);
  if (dispatcher === undefined) {
    dispatcher = createDispatcher(client);
    dispatchers.set(client, dispatcher);
  }
  return dispatcher;
}

function createDispatcher(client: Client): NotificationDispatcher {
  const listeners = new Map<NotificationMethod, Set<Listener>>();
  const held = new Map<NotificationMethod, Array<ServerNotifications[NotificationMethod]>>();

  function deliver(method: NotificationMethod, notification: ServerNotifications[NotificationMethod]): void {
    const subscribed = listeners.get(method);
    if (subscribed === undefined || subscribed.size === 0) {
      const queue = held.get(method) ?? [];
      queue.push(notification);
      if (queue.length > HELD_PER_METHOD) queue.shift();
      held.set(method, queue);
      return;
    }
    // Every subscriber runs even if one throws; the first error then reaches the SDK's `onerror`.
    let failure: unknown;
    for (const listener of [...subscribed]) {
      try {
        listener(notification);
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  }

  for (const schema of SCHEMAS) {
    const method = schema.shape.method.value as NotificationMethod;
    client.setNotificationHandler(schema, (notification) => deliver(method, notification));
  }
  const served = requestAbortControllers(client);
  client.setNotificationHandler(CancelledNotificationSchema, (notification) => abortServedRequest(served, notification));

  return {
    subscribe(method, listener) {
      const subscribed = listeners.get(method) ?? new Set<Listener>();
      listeners.set(method, subscribed);
      subscribed.add(listener as Listener);
      const backlog = held.get(method) ?? [];
      held.delete(method);
      for (const notification of backlog) (listener as Listener)(notification);
      return () => {
        subscribed.delete(listener as Listener);
      };
    },
  };
}

/**
 * Aborts the handler serving the request a server cancelled. The SDK's own
 * handling (1.32) skips request id 0 — a falsy check — and 0 is the id of the
 * first request a server sends (its first sampling or elicitation).
 */
function abortServedRequest(served: Map<RequestId, AbortController>, notification: CancelledNotification): void {
  const { requestId, reason } = notification.params;
  if (requestId === undefined) return;
  served.get(requestId)?.abort(reason);
}
