/**
 * Runs a host's management changes on the transactions coordinator
 * (src/machines/transactions.machine.ts) and gives each caller its change's
 * outcome. A coordinator that breaks (one of its own actions threw: a bug, not
 * a refused change) fails every change it held, instead of leaving their
 * callers waiting for an outcome that will never come, and the next change
 * starts a fresh one.
 */
import { createActor, waitFor } from 'xstate';
import type { TransactionInput } from '../machines/transaction.machine.js';
import { isBusy, transactionsMachine } from '../machines/transactions.machine.js';
import type { ServerView } from '../journal/index.js';

export interface TransactionRunner {
  /** Runs the change once every earlier change of its server finished; the view, or why it failed. */
  run(input: TransactionInput): Promise<ServerView | null>;
  /** Whether a change of `name` is queued or running. */
  busy(name: string): boolean;
  /** Resolves once no change of `name` is queued or running. */
  idle(name: string): Promise<void>;
}

interface Caller {
  name: string;
  resolve(view: ServerView | null): void;
  reject(error: unknown): void;
}

/**
 * `coordinatorLogic` is asked for at the first change and again after a
 * coordinator broke: most hosts never get a change, and providing the
 * machines costs garbage that a host that only starts its servers should not
 * pay.
 */
export function createTransactionRunner(coordinatorLogic: () => typeof transactionsMachine): TransactionRunner {
  const startCoordinator = () => {
    const callers = new Map<string, Caller>();
    const actor = createActor(coordinatorLogic());
    actor.on('transaction.finished', ({ id, output }) => {
      const caller = callers.get(id);
      if (caller === undefined) return;
      callers.delete(id);
      if (output.ok) caller.resolve(output.view);
      else caller.reject(output.error);
    });
    actor.subscribe({
      error: (cause) => {
        for (const caller of callers.values()) {
          caller.reject(new Error(`the change of server "${caller.name}" was lost: management broke (${messageOf(cause)})`, { cause }));
        }
        callers.clear();
      },
    });
    return { actor: actor.start(), callers };
  };
  let coordinator: ReturnType<typeof startCoordinator> | null = null;
  /** The coordinator's actor while it works; null before the first change and after it broke. */
  const working = () => (coordinator?.actor.getSnapshot().status === 'active' ? coordinator.actor : null);
  let requests = 0;

  return {
    run(input) {
      if (working() === null) coordinator = startCoordinator();
      const { actor, callers } = coordinator!;
      const id = String(requests++);
      return new Promise((resolve, reject) => {
        callers.set(id, { name: input.name, resolve, reject });
        actor.send({ type: 'transaction.request', id, input });
      });
    },
    busy: (name) => {
      const actor = working();
      return actor !== null && isBusy(actor.getSnapshot().context, name);
    },
    async idle(name) {
      const actor = working();
      // A coordinator that broke runs nothing any more: its changes were failed.
      if (actor !== null) await waitFor(actor, (snapshot) => snapshot.status !== 'active' || !isBusy(snapshot.context, name), { timeout: Infinity }).catch(() => undefined);
    },
  };
}

const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause));
