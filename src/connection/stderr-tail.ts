/**
 * The last lines of a child's stderr, kept for error messages and status.
 * Every configured secret is redacted on the way out, and text cut off at the
 * front of the window is dropped so no fragment of a secret can survive.
 */
import { redact } from '../config/masking.js';

/** Lines kept by a tail. */
export const TAIL_LINES = 20;
/** Characters kept by a tail, after redaction. */
export const TAIL_CHARS = 4096;
// Raw text kept before redaction: generous, so redaction sees whole lines.
const RAW_CHARS = 64 * 1024;

/**
 * The needles to redact from stderr: each secret, and each line of a
 * multi-line secret on its own, because a tail may start inside one.
 */
export function tailSecrets(secrets: Iterable<string>): string[] {
  const needles = new Set<string>();
  for (const secret of secrets) {
    if (secret === '') continue;
    needles.add(secret);
    if (!secret.includes('\n')) continue;
    for (const line of secret.split(/\r?\n/)) if (line.trim() !== '') needles.add(line.trim());
  }
  return [...needles];
}

export interface StderrTail {
  /** Appends a decoded chunk of stderr. */
  append(chunk: string): void;
  /** The last {@link TAIL_LINES} lines (at most {@link TAIL_CHARS} characters), secrets redacted. */
  read(): string;
}

/** Creates an empty tail that redacts `secrets` whenever it is read. */
export function createStderrTail(secrets: Iterable<string>): StderrTail {
  const needles = tailSecrets(secrets);
  let raw = '';
  // Set once text was cut at the front, so the first line may be partial.
  let clipped = false;

  return {
    append(chunk: string): void {
      raw += chunk;
      if (raw.length > RAW_CHARS) {
        raw = raw.slice(-RAW_CHARS);
        clipped = true;
      }
    },
    read(): string {
      let text = raw;
      if (clipped) {
        // The first line may begin inside a secret; drop it rather than show a fragment.
        const newline = text.indexOf('\n');
        text = newline === -1 ? '' : text.slice(newline + 1);
      }
      const lines = redact(text, needles)
        .split(/\r?\n/)
        .map((line) => line.trimEnd())
        .filter((line) => line !== '');
      const tail = lines.slice(-TAIL_LINES).join('\n');
      return tail.length > TAIL_CHARS ? `…${tail.slice(-TAIL_CHARS)}` : tail;
    },
  };
}
