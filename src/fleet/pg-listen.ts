/**
 * `LISTEN` on a connection of its own, kept open across outages: a pooled
 * connection would be handed to other queries and lose the subscription.
 * Notifications sent while the connection was down are lost by PostgreSQL,
 * so every reconnect is reported: the listener catches up from the tables.
 * The one implementation of it: the config, the tokens and the journal all
 * listen through here, so a dropped connection has one error path; its
 * backoff (`createRetry`) is the one every wait for the database uses.
 */
import type pg from 'pg';
import { loadPg, type Database } from './database.js';

export interface ListenOptions {
  /** Called once LISTEN is back after the connection was lost or refused (not after a first connect that worked). */
  onReconnect?: () => void;
  /** Told when the connection fails or drops: once per outage, not per retry (the listener retries until it is back). */
  onError?: (error: Error) => void;
  /** First retry delay; doubles up to 5 s. */
  retryMs?: number;
  /** Shown in `pg_stat_activity.application_name` (default: `mcp-fleet listen CHANNEL`). */
  applicationName?: string;
}

/** Stops listening: resolves once the connection is ended. */
export interface Listening {
  (): Promise<void>;
  /** Resolves once the first attempt is over, LISTEN on or not (a failed one was told to `onError`, and is retried). */
  readonly started: Promise<void>;
}

const FIRST_RETRY_MS = 250;
const MAX_RETRY_MS = 5_000;
/** How long a connect may take: without it an unreachable host hangs the listener forever. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Listens on `channel` until the returned function is called; `onNotify` gets each payload. */
export function listen(db: Database, channel: string, onNotify: (payload: string) => void, options: ListenOptions = {}): Listening {
  let stopped = false;
  let client: pg.Client | null = null;
  const retry = createRetry(() => void connect(), options.retryMs);
  /** Whether a connection was lost or refused before: then the next LISTEN may have missed notifications. */
  let missed = false;

  async function connect(): Promise<void> {
    if (stopped) return;
    const next = new (loadPg().Client)({
      connectionString: db.url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      // A peer gone without a word (a host that died) is noticed, not waited on forever.
      keepAlive: true,
      application_name: options.applicationName ?? `mcp-fleet listen ${channel}`,
    });
    client = next;
    next.on('notification', (message) => {
      if (message.channel === channel && !stopped) onNotify(message.payload ?? '');
    });
    // A dropped connection emits 'error' and/or 'end': both lead to one retry. The listener
    // stays for the client's whole life: an 'error' nobody hears ends the process.
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost || stopped) return;
      lost = true;
      if (!missed) options.onError?.(error ?? new Error('Connection terminated: the listening connection ended'));
      missed = true;
      next.end().catch(() => {});
      retry.schedule();
    };
    next.on('error', onLost);
    next.on('end', () => onLost());
    try {
      await next.connect();
      await next.query(`LISTEN ${loadPg().escapeIdentifier(channel)}`);
    } catch (error) {
      onLost(error as Error);
      return;
    }
    if (stopped) {
      await next.end().catch(() => {});
      return;
    }
    retry.succeeded();
    if (missed) options.onReconnect?.();
    missed = false;
  }

  const started = connect();
  const stop = async function stopListening(): Promise<void> {
    stopped = true;
    retry.cancel();
    await client?.end().catch(() => {});
  };
  return Object.assign(stop, { started });
}

/** An attempt run again after a failure: the delay doubles from `firstMs` up to 5 s, and starts over once one succeeds. */
export interface Retry {
  /** Runs the attempt after the next delay (one waits at a time: a later call replaces it). */
  schedule(): void;
  /** Whether an attempt is waiting for its delay. */
  readonly waiting: boolean;
  /** An attempt worked: the next failure waits the first delay again. */
  succeeded(): void;
  /** No more attempts. */
  cancel(): void;
}

/** The backoff of everything that waits for the database to come back: the listening connection, the event store's catch-up. */
export function createRetry(attempt: () => void, firstMs = FIRST_RETRY_MS): Retry {
  let delay = firstMs;
  let timer: NodeJS.Timeout | undefined;
  return {
    schedule() {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timer = undefined;
        attempt();
      }, delay);
      timer.unref();
      delay = Math.min(delay * 2, MAX_RETRY_MS);
    },
    get waiting() {
      return timer !== undefined;
    },
    succeeded() {
      delay = firstMs;
    },
    cancel() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
