// The order of management changes: one transaction per server at a time, in
// the order asked, servers side by side. Real transaction actors, their work
// held until the test lets it finish.
import { createActor, fromPromise } from 'xstate';
import { expect, test } from 'vitest';
import { transactionMachine, type ApplyInput, type ReadInput, type Settled, type TransactionRead } from '../../src/machines/transaction.machine.js';
import { isBusy, transactionsMachine, type TransactionFinished } from '../../src/machines/transactions.machine.js';
import { ServerConfig } from '../../src/config/schema.js';
import type { ServerView } from '../../src/journal/server-view.js';

const config = ServerConfig.parse({ type: 'local', command: ['node', 'server.js'] });
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function coordinator() {
  /** Work under way, by server: its restart waits until the test finishes it. */
  const applying = new Map<string, () => void>();
  const started: string[] = [];
  const transaction = transactionMachine.provide({
    actors: {
      read: fromPromise<TransactionRead, ReadInput>(async ({ input }) => {
        started.push(input.name);
        if (input.name === 'broken') throw new Error('store unreadable');
        return { running: config, stored: config, version: 1, invalid: null };
      }),
      apply: fromPromise<Settled, ApplyInput>(
        ({ input }) => new Promise((resolve) => applying.set(input.name, () => resolve({ failure: null }))),
      ),
      view: fromPromise<ServerView, { name: string }>(async ({ input }) => ({ name: input.name, version: 1 }) as unknown as ServerView),
    },
  });
  const actor = createActor(transactionsMachine.provide({ actors: { transaction } })).start();
  const finished: TransactionFinished[] = [];
  actor.on('transaction.finished', (event) => finished.push(event));
  const finish = async (name: string) => {
    const release = applying.get(name);
    if (!release) throw new Error(`no transaction of ${name} is applying`);
    applying.delete(name);
    release();
    await settle();
  };
  const busy = (name: string) => isBusy(actor.getSnapshot().context, name);
  return { actor, started, finished, finish, busy, applying };
}

test('changes of one server run one after another in the order asked; other servers run meanwhile', async () => {
  const { actor, started, finished, finish, busy, applying } = coordinator();
  actor.send({ type: 'transaction.request', id: 'a1', input: { kind: 'restart', name: 'a' } });
  actor.send({ type: 'transaction.request', id: 'a2', input: { kind: 'restart', name: 'a' } });
  actor.send({ type: 'transaction.request', id: 'b1', input: { kind: 'restart', name: 'b' } });
  await settle();
  expect(started).toEqual(['a', 'b']);
  expect([...applying.keys()].sort()).toEqual(['a', 'b']);
  expect([busy('a'), busy('b'), busy('c')]).toEqual([true, true, false]);

  await finish('b');
  expect(finished.map((event) => event.id)).toEqual(['b1']);
  expect(busy('b')).toBe(false);

  await finish('a');
  expect(finished.map((event) => event.id)).toEqual(['b1', 'a1']);
  // a2 began only now, and the server stays busy until it ends.
  expect(started).toEqual(['a', 'b', 'a']);
  expect(busy('a')).toBe(true);
  await finish('a');
  expect(finished.map((event) => event.id)).toEqual(['b1', 'a1', 'a2']);
  expect(finished.every((event) => event.output.ok)).toBe(true);
  expect(busy('a')).toBe(false);
  // Each finished transaction actor is gone.
  expect(Object.keys(actor.getSnapshot().children)).toEqual([]);
});

test('a failed change does not hold back the next one of its server, and its caller sees the server idle', async () => {
  const { actor, finished, finish, busy } = coordinator();
  const busyWhenTold: boolean[] = [];
  actor.on('transaction.finished', () => queueMicrotask(() => busyWhenTold.push(busy('broken'))));
  actor.send({ type: 'transaction.request', id: 'x1', input: { kind: 'restart', name: 'broken' } });
  actor.send({ type: 'transaction.request', id: 'x2', input: { kind: 'remove', name: 'broken' } });
  await settle();
  expect(finished.map((event) => [event.id, event.output.ok])).toEqual([
    ['x1', false],
    ['x2', false],
  ]);
  expect(busyWhenTold).toEqual([true, false]);
  expect(busy('broken')).toBe(false);
  await expect(finish('broken')).rejects.toThrow(/no transaction/);
});
