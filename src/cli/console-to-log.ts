/**
 * Within `serve`, what a library prints with `console.warn` or
 * `console.error` (the SDK warns so, e.g. of an OAuth client with no issuer
 * pinned) becomes a line of the worker's log: stderr holds pino JSON lines
 * only, each redacted of every secret like any other line. Only the CLI's
 * own process is changed so; an embedding host keeps its console.
 */
import { format } from 'node:util';
import type { Logger } from '../telemetry/logger.js';

export function logConsoleTo(logger: Logger): void {
  console.warn = (...args: unknown[]) => logger.warn({ source: 'console' }, format(...args));
  console.error = (...args: unknown[]) => logger.error({ source: 'console' }, format(...args));
}
