import { isDeepStrictEqual } from 'node:util';
import { and, assign, fromPromise, setup } from 'xstate';
import { mergePatch } from '../config/merge-patch.js';
import { ConfigEntryInvalidError, type ServerConfig } from '../config/index.js';
import type { ServerView } from '../journal/index.js';
import { ConflictError, NotFoundError, PreconditionFailedError } from '../errors.js';

/** One management change of one server. */
export type TransactionInput =
  | { kind: 'add'; name: string; config: ServerConfig }
  | { kind: 'update'; name: string; patch: Record<string, unknown>; ifMatch?: number }
  | { kind: 'remove'; name: string; ifMatch?: number }
  | { kind: 'restart'; name: string };

export type TransactionKind = TransactionInput['kind'];

/** What a transaction found before it acted. */
/** What `read` is given: a change that writes is refused there while the file does not parse. */
export interface ReadInput {
  name: string;
  kind: TransactionKind;
}

export interface TransactionRead {
  /** The config the server's actor runs; null when it has none. */
  running: ServerConfig | null;
  /** The server's entry in the store; null when none is stored. */
  stored: ServerConfig | null;
  /** The stored entry's version; null when none is stored. */
  version: number | null;
  /**
   * Why the store's entry of that name does not validate (a hand edit), when
   * it does not: the user's text, which a change must not replace unseen and
   * a removal deletes. Null when there is no such entry.
   */
  invalid: string | null;
  /** The dotted path of that entry's first problem (`servers.<name>.<field>`), when known. */
  invalidField?: string | undefined;
}

/** How a server's actor settled after an event: `failure` when it ended in `error`. */
export interface Settled {
  failure: Error | null;
}

/** What the write stored for the server (null for a removal), and its version. */
export interface Written {
  config: ServerConfig | null;
  version: number | null;
}

/** What the store write is asked to do, under the store's lock. */
export type PersistInput =
  | { kind: 'add'; name: string; config: ServerConfig }
  /** The patch merged into the entry as stored at write time (`previous` when it is gone), if still at `ifMatch`. */
  | { kind: 'update'; name: string; patch: Record<string, unknown>; previous: ServerConfig; ifMatch: number | null }
  | { kind: 'remove'; name: string };

/** Moves the server's actor to `config` and waits for it to settle; `restart` reconnects even when nothing changed. */
export interface ApplyInput {
  name: string;
  config: ServerConfig;
  restart: boolean;
}

export type TransactionOutput = { ok: true; view: ServerView | null } | { ok: false; error: unknown };

export interface TransactionContext {
  kind: TransactionKind;
  name: string;
  /** add: the config to install; update: the patch merged into the config read (once merged). */
  config: ServerConfig | null;
  patch: Record<string, unknown> | null;
  ifMatch: number | null;
  read: TransactionRead | null;
  written: Written | null;
  view: ServerView | null;
  /** Why the transaction failed, once it did (the first error, or the one its undoing ran into). */
  failure: { error: unknown } | null;
}

const notRead = (): never => {
  throw new Error('the transaction acts before it read the server');
};

/** Work the host provides (`machine.provide`); a machine without it fails at that step. */
function provided<TOutput, TInput>(work: string) {
  return fromPromise<TOutput, TInput>(async () => {
    throw new Error(`the host did not provide the transaction's ${work}`);
  });
}

const readOf = ({ context }: { context: TransactionContext }): TransactionRead => context.read ?? notRead();
/** The config a change starts from: the stored one (a hand edit not applied yet counts), else the running one. */
const baseOf = (read: TransactionRead): ServerConfig => read.stored ?? read.running ?? notRead();

const readParams = ({ event }: { event: { output: TransactionRead } }) => event.output;
const withRead = { type: 'keepRead', params: readParams } as const;
/** The output of the work that just finished, for a guard combined with `and` (which takes no computed params). */
const outputOf = <T>(event: unknown): T => (event as { output: T }).output;
const keepError = { type: 'keepError', params: ({ event }: { event: { error: unknown } }) => event.error } as const;
const startFailed = { type: 'startFailed', params: ({ event }: { event: { output: Settled } }) => event.output } as const;
const keepFailure = { type: 'keepError', params: ({ event }: { event: { output: Settled } }) => event.output.failure } as const;
const failedOnError = { target: 'failed', actions: keepError } as const;

/**
 * One management change of one server (docs/lifecycle.md, Management): it
 * reads what runs and what is stored, applies the change to the server's
 * actor and waits for the outcome, stores only a change that did not end in
 * `error`, and puts back what it changed when it cannot be kept. The work
 * (events to the server's actor, the store, credentials, the view) is
 * invoked; the host provides it. The output is the view, or why it failed.
 */
export const transactionMachine = setup({
  types: {
    input: {} as TransactionInput,
    context: {} as TransactionContext,
    output: {} as TransactionOutput,
  },
  actors: {
    /** Throws when the host is not running. */
    read: provided<TransactionRead, ReadInput>('read'),
    /** Installs a new server's actor and waits for it to settle. */
    install: provided<Settled, { name: string; config: ServerConfig }>('install'),
    apply: provided<Settled, ApplyInput>('apply'),
    /** Stops and forgets the server's actor; resolves once its process is gone. */
    uninstall: provided<void, { name: string }>('uninstall'),
    /** Refused (ConflictError, PreconditionFailedError, the host stopping…) when the change cannot be kept. */
    persist: provided<Written, PersistInput>('persist'),
    /** Deletes a removed server's credentials: a later server of that name is a new one. */
    forget: provided<void, { name: string }>('forget'),
    /** The server's view once every event so far is projected. */
    view: provided<ServerView, { name: string }>('view'),
    /** The patch merged into the config read; refused (ConfigError) when the result is not a valid config. */
    merge: fromPromise<ServerConfig, { base: ServerConfig; patch: Record<string, unknown> }>(async ({ input }) =>
      mergePatch(input.base, input.patch),
    ),
  },
  guards: {
    isAdd: ({ context }) => context.kind === 'add',
    isUpdate: ({ context }) => context.kind === 'update',
    isRemove: ({ context }) => context.kind === 'remove',
    /** A server of that name runs or is stored (an entry that does not validate counts). */
    exists: ({ event }) => {
      const read = outputOf<TransactionRead>(event);
      return read.running !== null || read.stored !== null || read.invalid !== null;
    },
    /** Neither runs nor is stored, not even as an entry that does not validate. */
    unknown: ({ event }) => {
      const read = outputOf<TransactionRead>(event);
      return read.running === null && read.stored === null && read.invalid === null;
    },
    /** The store's entry of that name does not validate. */
    entryInvalid: ({ event }) => outputOf<TransactionRead>(event).invalid !== null,
    notRunning: ({ event }) => outputOf<TransactionRead>(event).running === null,
    /** The stored version is not the one the change was asked for (HTTP `If-Match`). */
    versionMoved: ({ context, event }) => context.ifMatch !== null && outputOf<TransactionRead>(event).version !== context.ifMatch,
    /** Something of it is stored: a valid entry, or one that does not validate. */
    hasStored: ({ context }) => readOf({ context }).stored !== null || readOf({ context }).invalid !== null,
    startFailed: (_, settled: Settled) => settled.failure !== null,
    /** Another worker changed other fields meanwhile: what was stored is not what runs. */
    storedDiffers: ({ context, event }) => {
      const written = outputOf<Written>(event);
      return written.config !== null && !isDeepStrictEqual(written.config, context.config);
    },
  },
  actions: {
    keepRead: assign({ read: (_, read: TransactionRead) => read }),
    keepConfig: assign({ config: (_, config: ServerConfig) => config }),
    keepWritten: assign({ written: (_, written: Written) => written }),
    keepView: assign({ view: (_, view: ServerView) => view }),
    keepError: assign({ failure: (_, error: unknown) => ({ error }) }),
    refuseConflict: assign({
      failure: ({ context }, read: TransactionRead) => ({ error: new ConflictError(context.name, read.invalid ?? undefined) }),
    }),
    refuseInvalidEntry: assign({
      failure: ({ context }, read: TransactionRead) => ({ error: new ConfigEntryInvalidError(context.name, read.invalid ?? '', read.invalidField) }),
    }),
    refuseNotFound: assign({ failure: ({ context }) => ({ error: new NotFoundError(context.name) }) }),
    refuseVersion: assign({
      failure: ({ context }, read: TransactionRead) => ({ error: new PreconditionFailedError(context.name, context.ifMatch ?? 0, read.version) }),
    }),
  },
}).createMachine({
  id: 'transaction',
  context: ({ input }) => ({
    kind: input.kind,
    name: input.name,
    config: input.kind === 'add' ? input.config : null,
    patch: input.kind === 'update' ? input.patch : null,
    ifMatch: input.kind === 'update' || input.kind === 'remove' ? (input.ifMatch ?? null) : null,
    read: null,
    written: null,
    view: null,
    failure: null,
  }),
  initial: 'checking',
  states: {
    checking: {
      description: 'reads the config the server runs and the one stored',
      invoke: {
        src: 'read',
        input: ({ context }) => ({ name: context.name, kind: context.kind }),
        onDone: [
          { guard: and(['isAdd', 'exists']), target: 'failed', actions: { type: 'refuseConflict', params: readParams } },
          { guard: 'isAdd', target: 'installing', actions: withRead },
          { guard: and(['isRemove', 'unknown']), target: 'failed', actions: 'refuseNotFound' },
          { guard: and(['isRemove', 'versionMoved']), target: 'failed', actions: { type: 'refuseVersion', params: readParams } },
          { guard: 'isRemove', target: 'removing', actions: withRead },
          { guard: and(['isUpdate', 'entryInvalid']), target: 'failed', actions: { type: 'refuseInvalidEntry', params: readParams } },
          { guard: 'notRunning', target: 'failed', actions: 'refuseNotFound' },
          {
            guard: and(['isUpdate', 'versionMoved']),
            target: 'failed',
            actions: { type: 'refuseVersion', params: readParams },
          },
          { guard: 'isUpdate', target: 'merging', actions: withRead },
          { target: 'restarting', actions: withRead },
        ],
        onError: failedOnError,
      },
    },
    installing: {
      description: 'add: a new actor for the server, until it settles',
      invoke: {
        src: 'install',
        input: ({ context }) => ({ name: context.name, config: context.config! }),
        onDone: [{ guard: startFailed, target: 'uninstalling', actions: keepFailure }, { target: 'persisting' }],
        onError: failedOnError,
      },
    },
    uninstalling: {
      description: 'add undone: the new actor stopped and forgotten, nothing stored',
      invoke: {
        src: 'uninstall',
        input: ({ context }) => ({ name: context.name }),
        onDone: { target: 'discarding' },
        onError: failedOnError,
      },
    },
    discarding: {
      description: 'add undone: what its attempt stored (OAuth credentials) deleted, so no trace of it is left',
      invoke: {
        src: 'forget',
        input: ({ context }) => ({ name: context.name }),
        onDone: { target: 'failed' },
        onError: failedOnError,
      },
    },
    merging: {
      description: 'update: the patch merged into the stored config (else the running one)',
      invoke: {
        src: 'merge',
        input: ({ context }) => ({ base: baseOf(readOf({ context })), patch: context.patch ?? {} }),
        onDone: {
          target: 'applying',
          actions: { type: 'keepConfig', params: ({ event }: { event: { output: ServerConfig } }) => event.output },
        },
        onError: failedOnError,
      },
    },
    applying: {
      description: 'update: the event that moves the server to the new config, until it settles',
      invoke: {
        src: 'apply',
        input: ({ context }) => ({ name: context.name, config: context.config!, restart: false }),
        onDone: [{ guard: startFailed, target: 'rollingBack', actions: keepFailure }, { target: 'persisting' }],
        onError: failedOnError,
      },
    },
    rollingBack: {
      description: 'update undone: the server back on the config it ran before, the store untouched',
      invoke: {
        src: 'apply',
        input: ({ context }) => ({ name: context.name, config: readOf({ context }).running!, restart: false }),
        onDone: { target: 'failed' },
        onError: failedOnError,
      },
    },
    removing: {
      description: "remove: the server's actor stopped and forgotten",
      invoke: {
        src: 'uninstall',
        input: ({ context }) => ({ name: context.name }),
        onDone: [{ guard: 'hasStored', target: 'persisting' }, { target: 'forgetting' }],
        onError: failedOnError,
      },
    },
    persisting: {
      description: 'the change written under the store lock (refused: conflict, version moved, host stopping)',
      invoke: {
        src: 'persist',
        input: ({ context }): PersistInput => {
          if (context.kind === 'add') return { kind: 'add', name: context.name, config: context.config! };
          if (context.kind === 'remove') return { kind: 'remove', name: context.name };
          return { kind: 'update', name: context.name, patch: context.patch ?? {}, previous: baseOf(readOf({ context })), ifMatch: context.ifMatch };
        },
        onDone: [
          { guard: 'isRemove', target: 'forgetting' },
          {
            guard: and(['isUpdate', 'storedDiffers']),
            target: 'reapplying',
            actions: { type: 'keepWritten', params: ({ event }: { event: { output: Written } }) => event.output },
          },
          { target: 'viewing', actions: { type: 'keepWritten', params: ({ event }: { event: { output: Written } }) => event.output } },
        ],
        onError: [
          { guard: 'isAdd', target: 'uninstalling', actions: keepError },
          { guard: 'isUpdate', target: 'rollingBack', actions: keepError },
          { target: 'failed', actions: keepError },
        ],
      },
    },
    reapplying: {
      description: 'update: the server moved to what was stored (the patch on fields another worker changed meanwhile)',
      invoke: {
        src: 'apply',
        input: ({ context }) => ({ name: context.name, config: context.written!.config!, restart: false }),
        onDone: { target: 'viewing' },
        onError: failedOnError,
      },
    },
    restarting: {
      description: 'restart: reconnects on the stored config (a hand edit not applied yet is applied), until it settles',
      invoke: {
        src: 'apply',
        input: ({ context }) => ({ name: context.name, config: baseOf(readOf({ context })), restart: true }),
        onDone: { target: 'viewing' },
        onError: failedOnError,
      },
    },
    forgetting: {
      description: "remove: the server's OAuth credentials deleted",
      invoke: {
        src: 'forget',
        input: ({ context }) => ({ name: context.name }),
        onDone: { target: 'committed' },
        onError: failedOnError,
      },
    },
    viewing: {
      description: "the server's view, once every event so far is projected",
      invoke: {
        src: 'view',
        input: ({ context }) => ({ name: context.name }),
        onDone: {
          target: 'committed',
          actions: { type: 'keepView', params: ({ event }: { event: { output: ServerView } }) => event.output },
        },
        onError: failedOnError,
      },
    },
    committed: {
      description: 'done: the view (with the version written), or nothing for a removal',
      type: 'final',
    },
    failed: {
      description: 'the caller gets the error; an add or update refused before it was stored is undone',
      type: 'final',
    },
  },
  output: ({ context }): TransactionOutput => {
    if (context.failure) return { ok: false, error: context.failure.error };
    // The version this write committed: read later, it may already be another worker's next one.
    const view = context.view && context.written?.version != null ? { ...context.view, version: context.written.version } : context.view;
    return { ok: true, view };
  },
});
