/**
 * A ready server's log: `logging/setLevel` from the config's `log_level`, and
 * every `notifications/message` into the journal (`server.log`) and the worker
 * log, with the server's secrets redacted.
 */
import type { Client, LoggingMessageNotification } from '@modelcontextprotocol/client';
import { redact } from '../../config/masking.js';
import type { LoggingLevel } from '../../config/index.js';
import { notificationsOf } from '../notifications.js';

/** Longest message kept, in characters; a server can log a whole payload. */
export const MAX_LOG_MESSAGE_CHARS = 4096;
/** Messages per second journaled per server; the rest are counted and reported once the second is over. */
export const MAX_LOGS_PER_SECOND = 50;

/** One server log line as the journal keeps it. */
export interface ServerLogEntry {
  level: LoggingLevel;
  logger: string | null;
  message: string;
}

export interface ServerLogOptions {
  server: string;
  client: Client;
  /** `log_level` of the config; absent or null: no `logging/setLevel` is sent. */
  level: LoggingLevel | null | undefined;
  /** Bound on `logging/setLevel`, in ms. */
  timeoutMs: number;
  secrets: readonly string[];
  /** Every configured server's secrets, asked per message: a server may log another's (a shared key). */
  fleetSecrets?: () => readonly string[];
  /** Each message (redacted, bounded), for the journal. */
  onLog(entry: ServerLogEntry): void;
  /** The worker log. */
  logger: { info(message: string): void; warn(message: string): void };
}

const WARNING_OR_WORSE: ReadonlySet<LoggingLevel> = new Set(['warning', 'error', 'critical', 'alert', 'emergency']);

/** Starts forwarding `server`'s log messages (and sets its level); `stop()` ends it. */
export function forwardServerLog(options: ServerLogOptions): ServerLog {
  return new ServerLog(options);
}

/** One ready connection's log forwarding: a class, so a host keeps its rate window as fields, not closures. */
export class ServerLog {
  private windowStart = Date.now();
  private inWindow = 0;
  private dropped = 0;
  private report: NodeJS.Timeout | undefined;
  private readonly onMessage = (notification: LoggingMessageNotification): void => {
    if (!this.admit()) return;
    const { secrets, fleetSecrets } = this.options;
    this.emit(toEntry(notification, fleetSecrets === undefined ? secrets : [...secrets, ...fleetSecrets()]));
  };

  constructor(private readonly options: ServerLogOptions) {
    notificationsOf(options.client).subscribe('notifications/message', this.onMessage);
    // On 2026-07-28 the level travels with each request instead (connection/request-meta.ts).
    if (options.level && options.client.getProtocolEra() !== 'modern') this.setLevel(options.level);
  }

  /** Sends the configured `logging/setLevel`, or says why it cannot. */
  private setLevel(level: LoggingLevel): void {
    const { server, client, logger } = this.options;
    if (client.getServerCapabilities()?.logging) {
      client
        .setLoggingLevel(level, { timeout: this.options.timeoutMs })
        .catch((error: Error) => logger.warn(`server ${server}: logging/setLevel failed: ${redact(error.message, this.options.secrets)}`));
    } else {
      logger.warn(`server ${server}: log_level "${level}" ignored: the server has no logging capability`);
    }
  }

  stop(): void {
    notificationsOf(this.options.client).unsubscribe('notifications/message', this.onMessage);
    this.reportDropped();
  }

  private emit(entry: ServerLogEntry): void {
    const { server, logger } = this.options;
    this.options.onLog(entry);
    const line = `server ${server} [${entry.level}]${entry.logger === null ? '' : ` ${entry.logger}`}: ${entry.message}`;
    if (WARNING_OR_WORSE.has(entry.level)) logger.warn(line);
    else logger.info(line);
  }

  private reportDropped(): void {
    clearTimeout(this.report);
    this.report = undefined;
    if (this.dropped === 0) return;
    const message = `dropped ${this.dropped} log message(s): more than ${MAX_LOGS_PER_SECOND} per second`;
    this.dropped = 0;
    this.emit({ level: 'warning', logger: 'mcp-fleet', message });
  }

  private admit(): boolean {
    const now = Date.now();
    if (now - this.windowStart >= 1000) {
      this.windowStart = now;
      this.inWindow = 0;
    }
    this.inWindow += 1;
    if (this.inWindow <= MAX_LOGS_PER_SECOND) return true;
    this.dropped += 1;
    // One report when the second is over, however many were dropped.
    this.report ??= setTimeout(() => this.reportDropped(), 1000 - (now - this.windowStart));
    return false;
  }
}

function toEntry(notification: LoggingMessageNotification, secrets: readonly string[]): ServerLogEntry {
  const { level, logger, data } = notification.params;
  // Redacted before it is cut, so no secret survives half-shown at the cut.
  let text = redact(typeof data === 'string' ? data : safeJson(data), secrets);
  if (text.length > MAX_LOG_MESSAGE_CHARS) {
    text = `${text.slice(0, MAX_LOG_MESSAGE_CHARS)} [truncated: ${text.length} characters]`;
  }
  return { level, logger: logger === undefined ? null : redact(logger, secrets), message: text };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
