/**
 * `LISTEN` on a connection of its own, kept open across outages: a pooled
 * connection would be handed to other queries and lose the subscription.
 * Notifications sent while the connection was down are lost by PostgreSQL,
 * so every reconnect is reported: the listener catches up from the tables.
 */
import pg from 'pg';
import type { Database } from './database.js';

export interface ListenOptions {
  /** Called once LISTEN is back after the connection was lost or refused (not after a first connect that worked). */
  onReconnect?: () => void;
  /** Told each time the connection fails or drops (once per failure; the listener retries). */
  onError?: (error: Error) => void;
  /** First retry delay; doubles up to 5 s. */
  retryMs?: number;
}

const MAX_RETRY_MS = 5_000;

/** Listens on `channel` until the returned function is called; `onNotify` gets each payload. */
export function listen(db: Database, channel: string, onNotify: (payload: string) => void, options: ListenOptions = {}): () => void {
  const firstRetry = options.retryMs ?? 250;
  let stopped = false;
  let client: pg.Client | null = null;
  let timer: NodeJS.Timeout | undefined;
  let retry = firstRetry;
  /** Whether a connection was lost or refused before: then the next LISTEN may have missed notifications. */
  let missed = false;

  async function connect(): Promise<void> {
    if (stopped) return;
    const next = new pg.Client({ connectionString: db.url, connectionTimeoutMillis: 10_000, application_name: `mcp-fleet listen ${channel}` });
    client = next;
    next.on('notification', (message) => {
      if (message.channel === channel) onNotify(message.payload ?? '');
    });
    // A dropped connection emits 'error' and/or 'end': both lead to one retry.
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost || stopped) return;
      lost = true;
      missed = true;
      options.onError?.(error ?? new Error('the connection ended'));
      next.end().catch(() => {});
      schedule();
    };
    next.on('error', onLost);
    next.on('end', () => onLost());
    try {
      await next.connect();
      await next.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (error) {
      onLost(error as Error);
      return;
    }
    if (stopped) {
      await next.end().catch(() => {});
      return;
    }
    retry = firstRetry;
    if (missed) options.onReconnect?.();
    missed = false;
  }

  function schedule(): void {
    clearTimeout(timer);
    timer = setTimeout(() => void connect(), retry);
    retry = Math.min(retry * 2, MAX_RETRY_MS);
  }

  void connect();
  return () => {
    stopped = true;
    clearTimeout(timer);
    client?.end().catch(() => {});
  };
}
