import { enqueueActions, setup } from 'xstate';
import { transactionMachine, type TransactionInput, type TransactionOutput } from './transaction.machine.js';
import { own } from '../records.js';

/** A change asked for; `id` names its transaction actor and its outcome. */
export interface TransactionRequest {
  id: string;
  input: TransactionInput;
}

export type TransactionsEvent =
  | ({ type: 'transaction.request' } & TransactionRequest)
  | { type: `xstate.done.actor.${string}`; actorId: string; output: TransactionOutput }
  | { type: `xstate.error.actor.${string}`; actorId: string; error: unknown };

/** A transaction ended: its outcome, for whoever asked for it. */
export interface TransactionFinished {
  type: 'transaction.finished';
  id: string;
  output: TransactionOutput;
}

export interface TransactionsContext {
  /** Per server, the transactions not finished yet in the order asked: the first one runs, the others wait. */
  queues: Record<string, TransactionRequest[]>;
}

/** Whether a transaction on `name` runs or waits. */
export function isBusy(context: TransactionsContext, name: string): boolean {
  return (own(context.queues, name)?.length ?? 0) > 0;
}

/**
 * The order of management changes (docs/lifecycle.md, Management): one
 * transaction actor per change, spawned once every earlier change of that
 * server finished (either way); changes of different servers run side by
 * side. Each outcome is emitted as `transaction.finished`.
 */
export const transactionsMachine = setup({
  types: {
    context: {} as TransactionsContext,
    events: {} as TransactionsEvent,
    emitted: {} as TransactionFinished,
  },
  actors: { transaction: transactionMachine },
  actions: {
    enqueue: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'transaction.request') return;
      const { id, input } = event;
      const waiting = own(context.queues, input.name) ?? [];
      enqueue.assign({ queues: { ...context.queues, [input.name]: [...waiting, { id, input }] } });
      if (waiting.length === 0) enqueue.spawnChild('transaction', { id, input });
    }),
    /** The running transaction of a server ended: its outcome told, the next one of that server started. */
    finish: enqueueActions(({ context, event, enqueue }) => {
      if (event.type === 'transaction.request') return;
      const output: TransactionOutput = 'output' in event ? event.output : { ok: false, error: event.error };
      const name = Object.keys(context.queues).find((candidate) => own(context.queues, candidate)![0]?.id === event.actorId);
      if (name === undefined) return;
      const [, ...rest] = own(context.queues, name)!;
      const { [name]: _finished, ...others } = context.queues;
      enqueue.assign({ queues: rest.length > 0 ? { ...others, [name]: rest } : others });
      enqueue.stopChild(event.actorId);
      enqueue.emit({ type: 'transaction.finished', id: event.actorId, output });
      const next = rest[0];
      if (next) enqueue.spawnChild('transaction', { id: next.id, input: next.input });
    }),
  },
}).createMachine({
  id: 'transactions',
  context: { queues: {} },
  on: {
    'transaction.request': { actions: 'enqueue' },
    'xstate.done.actor.*': { actions: 'finish' },
    // A transaction that broke (a bug, not a refused change) still lets the next one run.
    'xstate.error.actor.*': { actions: 'finish' },
  },
});
