// A live connection whose process dies: the calls the crash broke answer only
// once the connection's watcher (the server actor's) has taken the loss in, so
// no caller hears "process exited" from a server still shown ready.
import { afterEach, describe, expect, it } from 'vitest';
import { openLiveConnection, watchLiveConnection, type LiveConnection } from '../../src/connection/live-connection.js';
import { fixtureConfig, isAlive } from './helpers.js';

let live: LiveConnection | undefined;
afterEach(async () => {
  await live?.connection.close();
  if (live?.connection.pid != null) expect(isAlive(live.connection.pid)).toBe(false);
  live = undefined;
});

const unwatched = { pingIntervalMs: 0, pingTimeoutMs: 1000 };

describe('a call broken by the loss of its connection', () => {
  it('answers after the watcher was told, never before', async () => {
    live = await openLiveConnection('crashy', fixtureConfig('crash-mid-call'), new AbortController().signal);
    const order: string[] = [];
    const call = live.connection.callTool('crash', {}).then(
      () => new Error('the call resolved but its server crashed'),
      (error: unknown) => error,
    );
    void call.then(() => order.push('call answered'));
    expect((await live.lost).message).toMatch(/process exited with code 7/);
    // Every microtask the failure path could take has run: with nobody watching, the call waits.
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual([]);

    watchLiveConnection(live, unwatched, () => order.push('watcher told'));
    const error = await call;
    expect(order).toEqual(['watcher told', 'call answered']);
    expect(error).toMatchObject({ kind: 'transport_closed', message: expect.stringContaining('process exited with code 7') });
  });

  it('answers once the watcher stopped watching (the actor left ready on its own account)', async () => {
    live = await openLiveConnection('crashy', fixtureConfig('crash-mid-call'), new AbortController().signal);
    const stopWatching = watchLiveConnection(live, unwatched, () => {
      throw new Error('a stopped watcher is told nothing');
    });
    stopWatching();
    const error = await live.connection.callTool('crash', {}).then(
      () => new Error('the call resolved but its server crashed'),
      (failure: unknown) => failure,
    );
    expect(error).toMatchObject({ kind: 'transport_closed', message: expect.stringContaining('process exited with code 7') });
  });
});
