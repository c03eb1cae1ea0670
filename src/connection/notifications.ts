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
   * function (or {@link unsubscribe}) is called. The first subscriber of a method also gets the ones
   * that arrived while it had none (at most {@link HELD_PER_METHOD}, oldest dropped).
   */
  subscribe<M extends NotificationMethod>(method: M, listener: (notification: ServerNotifications[M]) => void): () => void;
  /** Stops calling `listener` for `method`. */
  unsubscribe<M extends NotificationMethod>(method: M, listener: (notification: ServerNotifications[M]) => void): void;
}

type Notification = ServerNotifications[NotificationMethod];
type Listener = (notification: Notification) => void;

// Keyed by the SDK client, which one connection of one host owns.
const dispatchers = new WeakMap<Client, NotificationDispatcher>();

/**
 * The dispatcher of `client`, installed on first use. Call it before
 * `client.connect` so nothing the server sends right after initialize is lost.
 */
export function notificationsOf(client: Client): NotificationDispatcher {
  let dispatcher = dispatchers.get(client);
  if (dispatcher === undefined) {
    dispatcher = new Dispatcher(client);
    dispatchers.set(client, dispatcher);
  }
  return dispatcher;
}

/** Per method, its listeners or held notifications: five fields of one object cost less than a map. */
type PerMethod<T> = Partial<Record<NotificationMethod, T>>;

/** One per connection, so its tables are made on first use and one handler serves every method. */
class Dispatcher implements NotificationDispatcher {
  // Arrays, not Sets: a method has one or two listeners, and an array of them costs a fraction of a Set.
  private listeners: PerMethod<Listener[]> | null = null;
  private held: PerMethod<Notification[]> | null = null;

  constructor(client: Client) {
    // The notification names its method: one handler for all of them.
    const deliver = (notification: unknown): void => this.deliver(notification as Notification);
    for (const method of METHODS) client.setNotificationHandler(method, deliver);
  }

  subscribe<M extends NotificationMethod>(method: M, listener: (notification: ServerNotifications[M]) => void): () => void {
    const listeners = (this.listeners ??= {});
    const subscribed = listeners[method];
    if (subscribed === undefined) listeners[method] = [listener as Listener];
    else if (!subscribed.includes(listener as Listener)) subscribed.push(listener as Listener);
    const backlog = this.held?.[method];
    if (backlog !== undefined) {
      this.held![method] = undefined;
      for (const notification of backlog) (listener as Listener)(notification);
    }
    return () => this.unsubscribe(method, listener);
  }

  unsubscribe<M extends NotificationMethod>(method: M, listener: (notification: ServerNotifications[M]) => void): void {
    const subscribed = this.listeners?.[method];
    const at = subscribed?.indexOf(listener as Listener) ?? -1;
    if (at !== -1) subscribed!.splice(at, 1);
  }

  private deliver(notification: Notification): void {
    const method = notification.method as NotificationMethod;
    const subscribed = this.listeners?.[method];
    if (subscribed === undefined || subscribed.length === 0) {
      const held = (this.held ??= {});
      const queue = (held[method] ??= []);
      queue.push(notification);
      if (queue.length > HELD_PER_METHOD) queue.shift();
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
}
