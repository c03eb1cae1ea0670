/**
 * What mcp-fleet has learned about each server's protocol era, so a connect
 * can skip the `server/discover` probe (on stdio, probing costs a process a
 * legacy server may exit on). A verdict belongs to a server's transport
 * identity (its command or URL): a changed command or URL is a new server.
 * The store is an interface; the state dir keeps `eras.json`, tests and
 * one-shot clients use memory.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { DiscoverResult } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { writeOwnerOnly } from '../files/owner-only-file.js';
import { createSerialQueue } from '../files/serial-queue.js';

/** A server's era as last seen: modern with its advertisement, or legacy. */
export const EraVerdict = z.discriminatedUnion('era', [
  z.object({ era: z.literal('modern'), discover: z.custom<DiscoverResult>((value) => typeof value === 'object' && value !== null), learned_at: z.string() }),
  z.object({ era: z.literal('legacy'), learned_at: z.string() }),
]);
export type EraVerdict = z.infer<typeof EraVerdict>;

const VerdictFile = z.object({ version: z.literal(1), servers: z.record(z.string(), EraVerdict) });

export interface EraVerdicts {
  recall(key: string): EraVerdict | undefined;
  /** Keeps `verdict` for `key`; persisted in the background (a lost write costs one probe). */
  learn(key: string, verdict: EraVerdict): void;
  forget(key: string): void;
  /** Resolves once every write so far is on disk. */
  flushed(): Promise<void>;
}

/** Verdicts in memory only. */
export function memoryEraVerdicts(): EraVerdicts {
  const verdicts = new Map<string, EraVerdict>();
  return {
    recall: (key) => verdicts.get(key),
    learn: (key, verdict) => void verdicts.set(key, verdict),
    forget: (key) => void verdicts.delete(key),
    flushed: () => Promise.resolve(),
  };
}

/** `<stateDir>/eras.json`: the verdicts of a worker's state dir. */
export function eraVerdictsPath(stateDir: string): string {
  return path.join(stateDir, 'eras.json');
}

/**
 * How long a learnt verdict waits to be written with the ones learnt after
 * it: a startup of fifty servers writes the file a few times, not fifty
 * (each write is the whole file, an fsync and a rename). `flushed()` writes
 * at once; a worker that dies in between loses at most one probe per server.
 */
export const VERDICT_WRITE_DELAY_MS = 1000;

/**
 * Verdicts kept in `file`, written whole (atomically) after changes. A
 * file that is missing or unreadable starts empty: it is a cache, and the
 * worst a lost verdict costs is one probe.
 */
export function fileEraVerdicts(file: string, onError: (error: unknown) => void = () => {}): EraVerdicts {
  const verdicts = new Map<string, EraVerdict>(Object.entries(readVerdicts(file)));
  const writes = createSerialQueue();
  let pending = Promise.resolve();
  // A write not begun yet takes every verdict learnt until it begins.
  let queued = false;
  let timer: NodeJS.Timeout | undefined;
  const write = (): void => {
    clearTimeout(timer);
    timer = undefined;
    queued = true;
    pending = writes
      .run(file, () => {
        queued = false;
        return writeOwnerOnly(file, `${JSON.stringify({ version: 1, servers: Object.fromEntries(verdicts) }, null, 2)}\n`);
      })
      .catch(onError);
  };
  const save = (): void => {
    if (queued || timer !== undefined) return;
    timer = setTimeout(write, VERDICT_WRITE_DELAY_MS);
    // A cache write must not keep an embedding process alive; `flushed()` is how it is waited for.
    timer.unref();
  };
  return {
    recall: (key) => verdicts.get(key),
    learn(key, verdict) {
      verdicts.set(key, verdict);
      save();
    },
    forget(key) {
      if (verdicts.delete(key)) save();
    },
    flushed() {
      if (timer !== undefined) write();
      return pending;
    },
  };
}

function readVerdicts(file: string): Record<string, EraVerdict> {
  try {
    const parsed = VerdictFile.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data.servers : {};
  } catch {
    return {};
  }
}
