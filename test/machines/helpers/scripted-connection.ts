// A scripted stand-in for `openLiveConnection`: every connect attempt is a
// deferred the test settles by hand, and every connection is a fake "process"
// that records close() and whether it is still alive. Real processes are
// covered by the registry, host and connection tests; this is about the machine.
import { fromPromise } from 'xstate';
import type { ServerConfig } from '../../../src/services/config/schema.js';
import type { ServerConnection } from '../../../src/services/connection/connection.js';
import { FleetError } from '../../../src/services/support/errors.js';
import type { LiveConnection } from '../../../src/services/connection/live-connection.js';

/** The errors a scripted world produces; the model uses the same ones so states compare exactly. */
export const failures = {
  connect: () => new FleetError('spawn_failed', 'process exited with code 3 before initialize completed'),
  auth: () => new FleetError('auth', 'no usable token'),
  lost: () => new FleetError('transport_closed', 'process exited with code 7'),
  consent: () => new FleetError('auth', 'consent refused'),
};

/** One fake child process with its MCP connection. */
export class FakeConnection {
  readonly tools = [{ name: 'echo', description: 'Returns its text', inputSchema: { type: 'object' as const } }];
  closeCalls = 0;
  /** The process died on its own. */
  crashed = false;

  constructor(readonly id: number) {}

  /** Not closed and not crashed: a process that would still be running. */
  get alive(): boolean {
    return this.closeCalls === 0 && !this.crashed;
  }

  close(): Promise<void> {
    this.closeCalls += 1;
    return Promise.resolve();
  }
}

interface Attempt {
  connection: FakeConnection;
  resolve(live: LiveConnection): void;
  reject(error: unknown): void;
}

/** The connect actor to provide, plus the handles that settle it. */
export interface ScriptedConnections {
  connect: ReturnType<typeof fromPromise<LiveConnection, { name: string; config: ServerConfig }>>;
  /** Every connection ever opened, in order. */
  readonly all: readonly FakeConnection[];
  /** Completes the connect in flight. */
  succeed(): void;
  /** Fails the connect in flight; the attempt's process is gone (as `connect` closes its transport). */
  fail(error: FleetError): void;
  /** The established connection is lost (its process dies, or `error` says why): its `lost` promise resolves. */
  crash(error?: FleetError): void;
}

export function createScriptedConnections(): ScriptedConnections {
  const all: FakeConnection[] = [];
  let inFlight: Attempt | null = null;
  let established: { connection: FakeConnection; markLost: (error: FleetError) => void } | null = null;

  const connect = fromPromise<LiveConnection, { name: string; config: ServerConfig }>(
    ({ signal }) =>
      new Promise<LiveConnection>((resolve, reject) => {
        const connection = new FakeConnection(all.length + 1);
        all.push(connection);
        const attempt: Attempt = { connection, resolve, reject };
        inFlight = attempt;
        // As openLiveConnection does: an abandoned handshake ends its child.
        signal.addEventListener(
          'abort',
          () => {
            if (inFlight === attempt) inFlight = null;
            void connection.close();
            reject(new FleetError('transport_closed', 'connection abandoned'));
          },
          { once: true },
        );
      }),
  );

  function takeInFlight(): Attempt {
    const attempt = inFlight;
    if (!attempt) throw new Error('the path settles a connect, but none is in flight');
    inFlight = null;
    return attempt;
  }

  return {
    connect,
    all,
    succeed() {
      const { connection, resolve } = takeInFlight();
      let markLost: (error: FleetError) => void = () => {};
      const lost = new Promise<FleetError>((settle) => (markLost = settle));
      established = { connection, markLost };
      resolve({ connection: connection as unknown as ServerConnection, lost });
    },
    fail(error) {
      const { connection, reject } = takeInFlight();
      void connection.close();
      reject(error);
    },
    crash(error = failures.lost()) {
      if (!established) throw new Error('the path loses a connection, but none was established');
      established.connection.crashed = true;
      established.markLost(error);
      established = null;
    },
  };
}
