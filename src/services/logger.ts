import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

/** Values shorter than this are not redacted: `"1"` or `"on"` would blank out every line. */
export const MIN_REDACTED_LENGTH = 4;
export const REDACTED = '[REDACTED]';

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
 * `[REDACTED]`. Redacting the final string (not chosen paths) also catches a
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
      redact: { paths: ['authorization', '*.authorization', '*.headers.authorization'], censor: REDACTED },
      hooks: { streamWrite: (line) => redactSecrets(line, secrets()) },
    },
    destination,
  );
}

/**
 * Replaces every occurrence of every secret in `text`, in its raw and its
 * JSON-escaped form (a log line is JSON). Longest first, so a secret that
 * contains another is replaced whole.
 */
export function redactSecrets(text: string, secrets: Iterable<string>): string {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_REDACTED_LENGTH) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
  }
  let out = text;
  for (const form of [...forms].sort((a, b) => b.length - a.length)) {
    if (out.includes(form)) out = out.split(form).join(REDACTED);
  }
  return out;
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
