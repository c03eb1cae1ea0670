/**
 * One dispatcher per SDK client for the server's notifications. The SDK keeps
 * a single handler per method (`setNotificationHandler` replaces the previous
 * one, including its own `listChanged` handling), so the dispatcher owns each
 * method and fans every notification out to all of its subscribers: catalog
 * sync, journal, worker log. No two consumers compete for one message.
 *
 * `notifications/progress` stays with the SDK's Protocol, which routes it to
 * the call it belongs to (`onprogress`), and `notifications/cancelled` to the
 * request handler it cancels.
 */
import type {
  Client,
  LoggingMessageNotification,
  PromptListChangedNotification,
  ResourceListChangedNotification,
  ResourceUpdatedNotification,
  ToolListChangedNotification,
} from '@modelcontextprotocol/client';

/** The notifications the dispatcher owns, by method. */
export interface ServerNotifications {
  'notifications/tools/list_changed': ToolListChangedNotification;
  'notifications/resources/list_changed': ResourceListChangedNotification;
  'notifications/prompts/list_changed': PromptListChangedNotification;
  'notifications/resources/updated': ResourceUpdatedNotification;
  'notifications/message': LoggingMessageNotification;
}
export type NotificationMethod = keyof ServerNotifications;

const METHODS: readonly NotificationMethod[] = [
  'notifications/tools/list_changed',
  'notifications/resources/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/updated',
  'notifications/message',
];

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

// Keyed by the SDK client, which one connection of one host owns.
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

  for (const method of METHODS) {
    client.setNotificationHandler(method, (notification) => deliver(method, notification as ServerNotifications[NotificationMethod]));
  }

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
