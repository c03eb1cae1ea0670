// The reference model of one management change (docs/lifecycle.md,
// Management), written as the steps a change takes in order, independently
// of the transaction machine: given the change asked for and what each piece
// of work answered (model events, in order), which work is done with what,
// what is stored in the end, and what the caller gets.
import { isDeepStrictEqual } from 'node:util';
import { mergePatch } from '../../../src/config/merge-patch.js';
import { ServerConfig } from '../../../src/config/schema.js';
import { ConfigEntryInvalidError } from '../../../src/config/store.js';
import { ConflictError, NotFoundError, PreconditionFailedError, StartFailedError } from '../../../src/errors.js';
import type { TransactionInput } from '../../../src/machines/transaction.machine.js';

export const NAME = 'files';

const make = (extra: Record<string, unknown>) => ServerConfig.parse({ type: 'local', command: ['node', 'server.js'], ping_interval_seconds: 0, ...extra });

/** The configs of the paths: what runs, what a hand edit stored, what an add brings. */
export const configs = {
  running: make({}),
  edited: make({ command: ['node', 'edited.js'] }),
  added: make({ command: ['node', 'added.js'] }),
};

/** A change of a field the patches never touch: what another worker writes meanwhile. */
export const otherWrite = { ping_interval_seconds: 5 };

/** Why a hand-edited entry of the server does not validate. */
export const INVALID_ENTRY = 'servers.files.timeout_seconds: expected number, received string';

/** What the read finds: what runs, what is stored (and its version), and an entry that does not validate. */
export const reads = {
  'read.none': { running: null, stored: null, version: null, invalid: null },
  'read.running': { running: configs.running, stored: null, version: null, invalid: null },
  'read.stored': { running: null, stored: configs.edited, version: 1, invalid: null },
  'read.same': { running: configs.running, stored: configs.running, version: 1, invalid: null },
  'read.edited': { running: configs.running, stored: configs.edited, version: 2, invalid: null },
  'read.invalid': { running: null, stored: null, version: null, invalid: INVALID_ENTRY },
  'read.running_invalid': { running: configs.running, stored: null, version: null, invalid: INVALID_ENTRY },
} as const;
export type ReadEvent = keyof typeof reads;

export type ModelEvent =
  | { type: ReadEvent }
  /** The server's actor settled outside `error`, or in `error`. */
  | { type: 'settles.ready' }
  | { type: 'settles.error' }
  /** The write went through: over the entry as read, or after another worker changed another field of it. */
  | { type: 'stores' }
  | { type: 'stores.after_other_write' }
  /** Work that answers nothing (uninstall, forget credentials) or the view. */
  | { type: 'done' }
  /** The patch is merged (no work outside the machine: it merges itself). */
  | { type: 'merges' }
  /** The work failed. */
  | { type: 'throws' };

/** The failure of the server's actor the world reports, and the model expects. */
export const startFailure = () => new StartFailedError(NAME, 'spawn_failed', 'process exited with code 3 before initialize completed');
/** What a piece of work that fails throws. */
export const broke = (work: string) => new Error(`${work} broke`);

/** A config as the paths print it. */
export function labelOf(config: ServerConfig | null): string {
  if (config === null) return 'none';
  const known: Array<[string, ServerConfig]> = Object.entries(configs);
  for (const [label, base] of Object.entries(configs)) {
    known.push([`${label}+other`, mergePatch(base, otherWrite)]);
  }
  const found = known.find(([, candidate]) => isDeepStrictEqual(candidate, config));
  if (found) return found[0];
  // A patched config: by what differs from the one it came from.
  for (const [label, base] of known) {
    const changed = Object.keys(config).filter((key) => !isDeepStrictEqual(config[key as keyof ServerConfig], base[key as keyof ServerConfig]));
    if (changed.length === 1) return `${label}~${changed[0]}=${JSON.stringify(config[changed[0] as keyof ServerConfig])}`;
  }
  return JSON.stringify(config);
}

/** What a run did: the work in order, the store at the end, what the caller got. */
export interface Observation {
  work: string[];
  stored: { config: string; version: number } | null;
  /** The entry that does not validate is still in the store. */
  invalid: boolean;
  /** `version` of the view returned; the error's class and message. */
  outcome: { ok: true; view: null | { version: number | null } } | { ok: false; error: string } | 'running';
}

export const describeError = (error: unknown): string =>
  error instanceof Error ? `${error.constructor.name}: ${error.message}` : `not an Error: ${String(error)}`;

/** Events ran out before the change ended: the path stops mid-way. */
const PENDING = Symbol('pending');

/** What the model promises for `input` after `events`. */
export function expected(input: TransactionInput, events: readonly ModelEvent[]): Observation {
  const work: string[] = [];
  const queue = [...events];
  let stored: { config: ServerConfig; version: number } | null = null;
  let invalid = false;
  let version = 0;
  const observation = (outcome: Observation['outcome']): Observation => ({
    work,
    stored: stored && { config: labelOf(stored.config), version: stored.version },
    invalid,
    outcome,
  });
  const next = (): ModelEvent => {
    const event = queue.shift();
    if (!event) throw PENDING;
    return event;
  };
  /** Does `label`; the answer. */
  const does = (label: string): ModelEvent => {
    work.push(label);
    return next();
  };
  const fail = (error: unknown) => observation({ ok: false, error: describeError(error) });
  const write = (config: ServerConfig) => {
    version += 1;
    stored = { config, version };
  };

  try {
    const read = does('read');
    if (read.type === 'throws') return fail(broke('read'));
    const facts = reads[read.type as ReadEvent];
    invalid = facts.invalid !== null;
    if (facts.stored) {
      stored = { config: facts.stored, version: facts.version! };
      version = facts.version!;
    }
    const view = () => {
      // The view shows the version of the write the change made (a restart writes none: the one stored).
      const answer = does('view');
      if (answer.type === 'throws') return fail(broke('view'));
      return observation({ ok: true, view: { version: stored?.version ?? null } });
    };

    switch (input.kind) {
      case 'add': {
        // A hand-edited entry of that name that does not validate is the user's: in the way, and named.
        if (facts.running || facts.stored || facts.invalid) return fail(new ConflictError(NAME, facts.invalid ?? undefined));
        // Undone: the actor gone, then what the attempt stored (its credentials).
        const undo = (error: unknown) => {
          if (does('uninstall').type === 'throws') return fail(broke('uninstall'));
          return does('forget').type === 'throws' ? fail(broke('forget')) : fail(error);
        };
        const installed = does(`install ${labelOf(input.config)}`);
        if (installed.type === 'throws') return fail(broke('install'));
        if (installed.type === 'settles.error') return undo(startFailure());
        if (does('persist add').type === 'throws') return undo(broke('persist'));
        write(input.config);
        return view();
      }
      case 'update': {
        // Never replaced unseen: the user fixes the text, or removes the server.
        if (facts.invalid) return fail(new ConfigEntryInvalidError(NAME, facts.invalid));
        if (!facts.running) return fail(new NotFoundError(NAME));
        if (input.ifMatch !== undefined && facts.version !== input.ifMatch) {
          return fail(new PreconditionFailedError(NAME, input.ifMatch, facts.version));
        }
        const base = facts.stored ?? facts.running;
        next();
        let merged: ServerConfig;
        try {
          merged = mergePatch(base, input.patch);
        } catch (refused) {
          return fail(refused);
        }
        // Undone: back on what ran before, nothing stored.
        const undo = (error: unknown) => (does(`apply ${labelOf(facts.running)}`).type === 'throws' ? fail(broke('apply')) : fail(error));
        const applied = does(`apply ${labelOf(merged)}`);
        if (applied.type === 'throws') return fail(broke('apply'));
        if (applied.type === 'settles.error') return undo(startFailure());
        const persisted = does('persist update');
        if (persisted.type === 'throws') return undo(broke('persist'));
        let current = stored?.config ?? base;
        if (persisted.type === 'stores.after_other_write') {
          current = mergePatch(current, otherWrite);
          write(current);
        }
        const written = mergePatch(current, input.patch);
        write(written);
        if (!isDeepStrictEqual(written, merged) && does(`apply ${labelOf(written)}`).type === 'throws') return fail(broke('apply'));
        return view();
      }
      case 'remove': {
        if (!facts.running && !facts.stored && !facts.invalid) return fail(new NotFoundError(NAME));
        // Only what the caller saw is removed: an entry changed since (or one that does not validate, which has no version) stays.
        if (input.ifMatch !== undefined && facts.version !== input.ifMatch) {
          return fail(new PreconditionFailedError(NAME, input.ifMatch, facts.version));
        }
        if (does('uninstall').type === 'throws') return fail(broke('uninstall'));
        // Whatever of it is stored goes, an entry that does not validate included.
        if (facts.stored || facts.invalid) {
          if (does('persist remove').type === 'throws') return fail(broke('persist'));
          stored = null;
          invalid = false;
        }
        if (does('forget').type === 'throws') return fail(broke('forget'));
        return observation({ ok: true, view: null });
      }
      case 'restart': {
        if (!facts.running) return fail(new NotFoundError(NAME));
        // A hand edit stored but not applied yet is applied by the restart; whether it settles in error does not matter.
        if (does(`apply ${labelOf(facts.stored ?? facts.running)} (restart)`).type === 'throws') return fail(broke('apply'));
        return view();
      }
    }
  } catch (pending) {
    if (pending !== PENDING) throw pending;
    return observation('running');
  }
}
