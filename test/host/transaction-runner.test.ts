// What callers of management changes get when the transactions coordinator
// itself breaks (one of its own actions throws): every change it held fails
// with an error that names its server, instead of waiting for ever, and the
// next change runs on a fresh coordinator. Real coordinator and transaction
// actors; their work held until the test lets it finish.
import { fromPromise } from 'xstate';
import { expect, test } from 'vitest';
import { transactionMachine, type ApplyInput, type ReadInput, type Settled, type TransactionRead } from '../../src/machines/transaction.machine.js';
import { transactionsMachine } from '../../src/machines/transactions.machine.js';
import { createTransactionRunner } from '../../src/host/transaction-runner.js';
import { ServerConfig } from '../../src/config/schema.js';
import type { ServerView } from '../../src/journal/server-view.js';

const config = ServerConfig.parse({ type: 'local', command: ['node', 'server.js'] });

function runner({ breakOnFinish }: { breakOnFinish: number }) {
  const applying = new Map<string, () => void>();
  const transaction = transactionMachine.provide({
    actors: {
      read: fromPromise<TransactionRead, ReadInput>(async () => ({ running: config, stored: config, version: 1, invalid: null })),
      apply: fromPromise<Settled, ApplyInput>(({ input }) => new Promise((resolve) => applying.set(input.name, () => resolve({ failure: null })))),
      view: fromPromise<ServerView, { name: string }>(async ({ input }) => ({ name: input.name, version: 1 }) as unknown as ServerView),
    },
  });
  let coordinators = 0;
  const transactions = createTransactionRunner(() => {
    coordinators += 1;
    // The coordinators asked for up to `breakOnFinish` break when a change finishes; later ones work.
    if (coordinators > breakOnFinish) return transactionsMachine.provide({ actors: { transaction } });
    return transactionsMachine.provide({
      actors: { transaction },
      actions: {
        finish: () => {
          throw new Error('finish broke');
        },
      },
    });
  });
  const release = async (name: string) => {
    await until(() => applying.has(name));
    applying.get(name)!();
    applying.delete(name);
  };
  return { transactions, release, coordinators: () => coordinators };
}

/** Lets the actors' promises run until `done` holds (each step is one turn of the event loop). */
async function until(done: () => boolean): Promise<void> {
  for (let turn = 0; turn < 100 && !done(); turn += 1) await new Promise((resolve) => setImmediate(resolve));
  if (!done()) throw new Error('the awaited step never came');
}

test('a coordinator that breaks fails the running change and the one queued behind it, naming their server', async () => {
  const { transactions, release } = runner({ breakOnFinish: 1 });
  const first = transactions.run({ kind: 'restart', name: 'alpha' });
  const queued = transactions.run({ kind: 'restart', name: 'alpha' });
  const outcomes = Promise.allSettled([first, queued]);
  expect(transactions.busy('alpha')).toBe(true);

  await release('alpha');
  const [a, b] = await outcomes;
  for (const outcome of [a, b]) {
    expect(outcome?.status).toBe('rejected');
    expect(((outcome as PromiseRejectedResult).reason as Error).message).toBe(
      'the change of server "alpha" was lost: management broke (finish broke)',
    );
  }
  // Nothing runs on a broken coordinator: the server is not busy, and waiting for it ends.
  expect(transactions.busy('alpha')).toBe(false);
  await transactions.idle('alpha');
});

test('the change after a breakage runs on a fresh coordinator and gets its view', async () => {
  const { transactions, release, coordinators } = runner({ breakOnFinish: 1 });
  const lost = transactions.run({ kind: 'restart', name: 'alpha' });
  await release('alpha');
  await expect(lost).rejects.toThrow(/was lost/);

  const next = transactions.run({ kind: 'restart', name: 'alpha' });
  expect(coordinators()).toBe(2);
  await release('alpha');
  await expect(next).resolves.toEqual({ name: 'alpha', version: 1 });
  expect(transactions.busy('alpha')).toBe(false);
});

test('a working coordinator is made once, at the first change, and kept for the next', async () => {
  const { transactions, release, coordinators } = runner({ breakOnFinish: 0 });
  expect(coordinators()).toBe(0);
  expect(transactions.busy('alpha')).toBe(false);
  await transactions.idle('alpha');
  for (const name of ['alpha', 'beta']) {
    const change = transactions.run({ kind: 'restart', name });
    await release(name);
    await expect(change).resolves.toEqual({ name, version: 1 });
  }
  expect(coordinators()).toBe(1);
});
