// A closed stdio connection lets go of its client, transport and child at
// once: nothing of it waits on a timer after the child has exited and its
// pipes have closed. (A grandchild holding the pipes is the one case that
// waits, bounded; see child-transport.ts.) And an open one keeps nothing of
// its connect: not the caller's signal, nor the steps that awaited the spawn.
import { expect, it } from 'vitest';
import { ChildTransport } from '../../src/connection/child-transport.js';
import { connect } from '../../src/connection/connection.js';
import { collectGarbage } from '../support/gc.js';
import { isAlive } from '../support/processes.js';
import { until } from '../support/wait.js';
import { fixtureConfig } from './helpers.js';

/** Connects, calls once and closes; hands back only weak references to what the connection held. */
async function connectAndClose(): Promise<{ client: WeakRef<object>; connection: WeakRef<object>; pid: number }> {
  const connection = await connect('healthy', fixtureConfig('healthy'));
  await connection.callTool('echo', { text: 'hi' });
  const pid = connection.pid;
  if (pid === null) throw new Error('a stdio connection has a pid');
  await connection.close();
  return { client: new WeakRef(connection.client), connection: new WeakRef(connection), pid };
}

it('is collectable as soon as close() has resolved', async () => {
  const closed = await connectAndClose();
  const closedAt = Date.now();
  expect(isAlive(closed.pid)).toBe(false);
  await collectGarbage();
  // Only conclusive inside the second a grandchild could keep the pipes open for (it was armed at the exit, before close() resolved).
  expect(Date.now() - closedAt, 'collected before the pipes\' drain timer could have fired').toBeLessThan(900);
  expect(closed.connection.deref()).toBeUndefined();
  expect(closed.client.deref()).toBeUndefined();
});

/** Connects with a signal of its own; hands back the connection and only a weak reference to the signal. */
async function connectWithSignal(): Promise<{ connection: Awaited<ReturnType<typeof connect>>; signal: WeakRef<AbortSignal> }> {
  const caller = new AbortController();
  const connection = await connect('healthy', fixtureConfig('healthy'), { signal: caller.signal, onClose: () => {} });
  return { connection, signal: new WeakRef(caller.signal) };
}

it('an open connection keeps nothing of its connect: the caller\'s signal can be collected', async () => {
  const { connection, signal } = await connectWithSignal();
  try {
    await connection.callTool('echo', { text: 'hi' });
    await collectGarbage();
    expect(signal.deref(), 'the connect\'s signal, kept by the open connection').toBeUndefined();
    expect(isAlive(connection.pid!)).toBe(true);
  } finally {
    await connection.close();
  }
});

it('still ends when a grandchild that left its process group keeps the pipes open after the child exited', async () => {
  let stderr = '';
  // The shell leaves a sleeper that moved to a session of its own (it said its pid, then a line the shell
  // waits for) holding the shell's stderr, and exits.
  const script = `{ setsid sh -c 'echo "$$" >&2; echo; exec sleep 30' & } | read _; exit 0`;
  const transport = new ChildTransport({ command: ['sh', '-c', script], env: {}, cwd: null }, (chunk) => {
    stderr += chunk;
  });
  const ended = new Promise<void>((resolve) => (transport.onclose = resolve));
  await transport.start();
  try {
    expect(await transport.exited).toEqual({ code: 0, signal: null });
    await until(() => /^\d+\n/.test(stderr), 'the sleeper to be started');
    expect(isAlive(Number.parseInt(stderr, 10))).toBe(true);
    await ended;
  } finally {
    const sleeper = Number.parseInt(stderr, 10);
    if (Number.isInteger(sleeper) && isAlive(sleeper)) process.kill(sleeper, 'SIGKILL');
  }
});

/** Starts `script` under `sh -c`; hands back the transport and the pid the script writes first to stderr. */
async function startScript(script: string): Promise<{ transport: ChildTransport; grandchild: () => number }> {
  let stderr = '';
  const transport = new ChildTransport({ command: ['sh', '-c', script], env: {}, cwd: null }, (chunk) => {
    stderr += chunk;
  });
  await transport.start();
  await until(() => /^\d+\n/.test(stderr), 'the grandchild to say its pid');
  return { transport, grandchild: () => Number.parseInt(stderr, 10) };
}

// A grandchild that takes its time over SIGTERM, as a real server behind `npx` may.
const SLOW_TO_STOP = `node -e 'process.stderr.write(process.pid + "\\n"); process.on("SIGTERM", () => setTimeout(() => process.exit(0), 300)); setInterval(() => {}, 1000)'`;

it('close() resolves only once what the child started has exited too: a wrapper\'s server does not outlive it', async () => {
  // The shell waits for its server (no exec) and dies at once on SIGTERM; the server takes 300 ms.
  const { transport, grandchild } = await startScript(`${SLOW_TO_STOP}; exit 0`);
  try {
    expect(isAlive(grandchild())).toBe(true);
    await transport.close();
    expect(transport.exitInfo).toEqual({ code: null, signal: 'SIGTERM' });
    expect(isAlive(grandchild()), 'the server behind the wrapper, when close() resolved').toBe(false);
  } finally {
    if (isAlive(grandchild())) process.kill(grandchild(), 'SIGKILL');
  }
});

it('a child that exits on its own takes what it started with it: no orphaned server is left running', async () => {
  const { transport, grandchild } = await startScript(`${SLOW_TO_STOP} & sleep 0.2; exit 3`);
  try {
    expect(await transport.exited).toEqual({ code: 3, signal: null });
    await until(() => !isAlive(grandchild()), 'the orphaned grandchild to be stopped');
    await transport.close();
  } finally {
    if (isAlive(grandchild())) process.kill(grandchild(), 'SIGKILL');
  }
});
