import { pino, type DestinationStream, type Logger } from 'pino';
import { MASK, MIN_REDACTED_LENGTH, redact } from '../config/masking.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  /** Current secret values; called for every line, so a newly configured secret is covered at once. */
  secrets?: () => Iterable<string>;
  /** pino level; default `info`. */
  level?: string;
  /** Where lines go; default stderr (synchronous, so nothing is lost on exit). stdout belongs to CLI output. */
  destination?: DestinationStream;
}

/**
 * A pino logger whose every serialized line has each secret value replaced by
 * `••••`. Redacting the final string (not chosen paths) also catches a
 * secret inside an error message or a child process's stderr.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = options.secrets ?? (() => []);
  const destination = options.destination ?? pino.destination({ dest: 2, sync: true });
  return pino(
    {
      level: options.level ?? 'info',
      base: { pid: process.pid },
      // The management API's bearer token must never reach a line, whoever logs a request.
      redact: { paths: ['authorization', '*.authorization', '*.headers.authorization'], censor: MASK },
      hooks: { streamWrite: (line) => redact(line, secrets()) },
    },
    destination,
  );
}

/**
 * A growing set of secret values for `createLogger({ secrets })`. Values are
 * never dropped: a secret removed from the config is still not fit for a log.
 */
export class SecretSet {
  readonly #values = new Set<string>();

  add(values: Iterable<string>): void {
    for (const value of values) if (value.length >= MIN_REDACTED_LENGTH) this.#values.add(value);
  }

  values(): Iterable<string> {
    return this.#values;
  }
}
