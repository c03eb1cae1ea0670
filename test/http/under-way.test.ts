// The requests under way that a worker's stop answers before its port closes:
// the stop waits for their answers only so long, so a route whose work ignores
// its cancel cannot hold the stop up.
import { afterEach, expect, it } from 'vitest';
import type { Express } from 'express';
import { loadExpress } from '../../src/http/express.js';
import { listen, type Listening } from '../../src/http/bind.js';
import { requestsUnderWay, stoppedBy } from '../../src/http/under-way.js';

let open: Listening | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
});

it("the stop goes on past a request whose work ignores its cancel, once the bound is out; one that answers its cancel is answered", async () => {
  const underWay = requestsUnderWay();
  const express = loadExpress();
  const app: Express = express();
  // Both requests are under way (in their routes) before the stop begins.
  let entered = 0;
  let bothIn!: () => void;
  const both = new Promise<void>((resolve) => (bothIn = resolve));
  const enter = () => ++entered === 2 && bothIn();
  let stubbornSignal: AbortSignal | undefined;
  app.post('/stubborn', async (_req, res) => {
    stubbornSignal = underWay.begin(res);
    enter();
    await new Promise(() => {}); // never ends, cancelled or not
  });
  app.post('/obedient', async (_req, res) => {
    const signal = underWay.begin(res);
    enter();
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    res.json({ stopped: stoppedBy(signal) });
  });
  open = await listen(app, { port: 0 });
  const ask = (path: string) =>
    fetch(`${open!.url}${path.slice(1)}`, { method: 'POST' }).then(
      async (res) => ({ status: res.status, body: await res.text() }),
      () => ({ status: 0, body: 'no answer' }),
    );
  const stubborn = ask('/stubborn');
  const obedient = ask('/obedient');
  await both;

  // A bound far past what the obedient request needs, far short of the test's own timeout.
  const closed = underWay.close(200).then(() => 'closed' as const);
  const outcome = await Promise.race([closed, new Promise<'still waiting'>((resolve) => setTimeout(() => resolve('still waiting'), 10_000).unref())]);
  expect(outcome).toBe('closed');
  expect(stoppedBy(stubbornSignal!)).toBe(true);
  expect(await obedient).toEqual({ status: 200, body: '{"stopped":true}' });

  // The port's close cuts what the bound left unanswered.
  await open.close();
  open = undefined;
  expect((await stubborn).status).toBe(0);
});
