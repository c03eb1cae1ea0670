// Canary secrets and the scanner that looks for any trace of them.
//
// A canary is `canary-<label>-<16 random hex><4 letters>`: at least 12
// characters, so toResponse() may show `••••` + its last 4 (SPEC §3) and
// nothing else. The scanner reports the full value (raw or JSON-escaped), any
// 8-character piece of it (a truncated or half-redacted secret), and its last
// 4 characters anywhere they do not follow the mask.
import { randomBytes } from 'node:crypto';
import { MASK } from '../../src/config/masking.js';

/**
 * Consonants outside hex, so a canary's last 4 cannot turn up in ids, hashes
 * or numbers. The tail alternates upper and lower case: four capitals once
 * made `HTTP`, and four small letters could make `http`; no word or acronym a
 * worker prints has that shape.
 */
const TAIL_LETTERS = 'GHJKMNPQRSTVWXYZ';
/** Length of the pieces looked for: shorter than the mask's 4-character tail cannot be told from noise. */
export const PIECE = 8;

export interface Canary {
  /** What it was planted in, for the failure message. */
  label: string;
  value: string;
  /** Length of the fixed `canary-<label>-` part (shared or guessable, so not looked for on its own). */
  prefix: number;
}

/** A set of distinct canaries, created by label. */
export class Canaries {
  readonly all: Canary[] = [];

  /** A new canary; `special` adds a quote and a backslash, so JSON-escaped forms are exercised too. */
  make(label: string, { special = false } = {}): string {
    const tail = Array.from(randomBytes(4), (byte, i) => {
      const letter = TAIL_LETTERS[byte % TAIL_LETTERS.length] ?? 'Z';
      return i % 2 === 0 ? letter : letter.toLowerCase();
    }).join('');
    const prefix = `canary-${label}-${special ? 'q"b\\s-' : ''}`;
    const value = `${prefix}${randomBytes(8).toString('hex')}${tail}`;
    this.all.push({ label, value, prefix: prefix.length });
    return value;
  }

  /** Every trace of a canary in `text`, one line each; `[]` when clean. */
  leaksIn(text: string): string[] {
    const found: string[] = [];
    for (const { label, value, prefix } of this.all) {
      const escaped = JSON.stringify(value).slice(1, -1);
      if (text.includes(value) || text.includes(escaped)) {
        found.push(`${label}: the whole value`);
        continue;
      }
      const piece = pieces(value, prefix).find((p) => text.includes(p));
      if (piece !== undefined) {
        found.push(`${label}: the piece ${JSON.stringify(piece)}`);
        continue;
      }
      const tail = value.slice(-4);
      for (let at = text.indexOf(tail); at !== -1; at = text.indexOf(tail, at + 1)) {
        if (text.slice(Math.max(0, at - MASK.length), at) !== MASK) {
          found.push(`${label}: its last 4 characters outside a mask: ${JSON.stringify(text.slice(Math.max(0, at - 20), at + 4))}`);
          break;
        }
      }
    }
    return found;
  }
}

/** Every {@link PIECE}-character substring of `value` that reaches past its fixed prefix. */
function pieces(value: string, prefix: number): string[] {
  const out: string[] = [];
  for (let at = Math.max(0, prefix - PIECE + 1); at + PIECE <= value.length; at += 1) out.push(value.slice(at, at + PIECE));
  return out;
}

/** Collects every output of a test run under a label, so one check can report them all. */
export class Outputs {
  readonly seen: Array<{ label: string; text: string }> = [];

  add(label: string, text: string): string {
    this.seen.push({ label, text });
    return text;
  }

  /** `label: leak` for every leak of every canary in every output. */
  leaks(canaries: Canaries): string[] {
    return this.seen.flatMap(({ label, text }) => canaries.leaksIn(text).map((leak) => `${label} — ${leak}`));
  }
}
