// The kind a server actor records for a failure that reached it unclassified
// (not a FleetError): a request that got no answer at all is `unreachable`,
// anything else stays `protocol`. The failures are real: fetch() to a port
// nothing listens on, and an error thrown by code.
import { createActor, fromPromise, waitFor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { serverMachine, type ServerWork } from '../../src/machines/server.machine.js';
import { ServerConfig } from '../../src/config/schema.js';
import type { LiveConnection } from '../../src/connection/live-connection.js';
import { freePort } from '../support/ports.js';

const config = ServerConfig.parse({ type: 'remote', url: 'http://127.0.0.1:9/mcp', reconnect: { max_attempts: 0 } });

async function failWith(connect: () => Promise<unknown>): Promise<{ error: string | null; errorKind: string | null }> {
  const machine = serverMachine.provide({ actors: { connect: fromPromise<LiveConnection, ServerWork>(async () => (await connect()) as LiveConnection) } });
  const actor = createActor(machine, { input: { name: 'x', config, queued: false } }).start();
  try {
    const snapshot = await waitFor(actor, (s) => s.matches('error'), { timeout: 10_000 });
    return { error: snapshot.context.error, errorKind: snapshot.context.errorKind };
  } finally {
    actor.stop();
  }
}

describe('a failure the connect did not classify', () => {
  it('a fetch that got no answer is unreachable, with its reason', async () => {
    const port = await freePort();
    const failed = await failWith(() => fetch(`http://127.0.0.1:${port}/`));
    expect(failed).toEqual({ errorKind: 'unreachable', error: 'fetch failed: connection refused (ECONNREFUSED)' });
  });

  it('any other error is protocol', async () => {
    const failed = await failWith(() => Promise.reject(new Error('the answer had no result')));
    expect(failed).toEqual({ errorKind: 'protocol', error: 'the answer had no result' });
  });
});
