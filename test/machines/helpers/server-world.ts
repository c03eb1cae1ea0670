// The world a server actor acts on, scripted: every piece of work the machine
// invokes (connect, token check, refresh, consent) is a stand-in the test
// settles by hand, the catalog session is the world's host's, and every
// connection is a fake "process" that counts its close() calls. The
// connection watcher (which runs the host's catalog session) and
// closeConnection stay the machine's own: they act on the fake connection.
// Nothing here settles by itself and nothing uses a timer.
import type { Tool } from '@modelcontextprotocol/client';
import { fromCallback, fromPromise, type AnyActorRef } from 'xstate';
import type { AuthCheck, ServerHost, ServerWork } from '../../../src/machines/server.machine.js';
import type { ServerMachineEvent } from '../../../src/machines/server.events.js';
import type { ServerConnection } from '../../../src/connection/connection.js';
import type { LiveConnection } from '../../../src/connection/live-connection.js';
import { AuthorizationServerAwayError } from '../../../src/auth/away.js';
import { FleetError } from '../../../src/errors.js';

/** The failures a scripted world produces; the model expects the same kinds. */
export const failures = {
  spawn: () => new FleetError('spawn_failed', 'process exited with code 3 before initialize completed'),
  auth: () => new FleetError('auth', 'no usable token'),
  lost: () => new FleetError('transport_closed', 'process exited with code 7'),
  refresh: () => new FleetError('transport_closed', 'token endpoint unreachable'),
  consent: () => new FleetError('auth', 'consent refused'),
  away: () => new AuthorizationServerAwayError('could not reach the authorization server https://as.example.com (of https://mcp.example.com): connection refused (ECONNREFUSED)'),
};

/** The tools every fake server lists. */
export const FAKE_TOOLS: Tool[] = [
  { name: 'echo', description: 'Returns its text', inputSchema: { type: 'object' } },
  { name: 'add', description: 'Adds two numbers', inputSchema: { type: 'object' } },
];

/** One fake child process with its MCP connection: what the tool mount and closeConnection use of it. */
export class FakeConnection {
  readonly allTools = FAKE_TOOLS;
  readonly client = { getServerCapabilities: () => ({}) };
  closeCalls = 0;
  /** Settles the close in flight (the process is gone, or close() reported a failure). */
  private closing: { resolve(): void; reject(error: unknown): void } | null = null;

  constructor(
    readonly id: number,
    /** Who opened it (the actor's id). */
    readonly owner: string,
    /** close() resolves at once instead of waiting for the test. */
    private readonly closesAtOnce: boolean,
  ) {}

  close(): Promise<void> {
    this.closeCalls += 1;
    if (this.closesAtOnce) return Promise.resolve();
    return new Promise<void>((resolve, reject) => (this.closing = { resolve, reject }));
  }

  /** Whether a close is waiting for the test. */
  get closeInFlight(): boolean {
    return this.closing !== null;
  }

  finishClose(error?: unknown): void {
    const closing = this.closing;
    if (!closing) throw new Error(`connection ${this.id}: the path settles a close, but none is in flight`);
    this.closing = null;
    if (error === undefined) closing.resolve();
    else closing.reject(error);
  }
}

/** What XState hands a promise actor's creator (the parts the world uses). */
interface Invocation<TInput> {
  input: TInput;
  signal: AbortSignal;
  self: AnyActorRef;
}

/** One invocation of a promise actor, waiting for the test. */
interface Call<T> {
  owner: string;
  name: string;
  resolve(value: T): void;
  reject(error: unknown): void;
  /** Settled by the test, or abandoned by the machine (the state was left). */
  done: boolean;
}

/** Invocations of one promise actor: the running ones are those neither settled nor abandoned. */
class Calls<T> {
  readonly all: Call<T>[] = [];

  /** One invocation, recorded until the test settles it or the machine abandons it. */
  invoke({ input, signal, self }: Invocation<ServerWork>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const owner = self._parent?.id ?? '?';
      const call: Call<T> = { owner, name: input.name, resolve, reject, done: false };
      this.all.push(call);
      signal.addEventListener('abort', () => (call.done = true), { once: true });
    });
  }

  running(owner?: string): Call<T>[] {
    return this.all.filter((call) => !call.done && (owner === undefined || call.owner === owner));
  }

  /** The one running invocation (of `owner`'s actor); the path says it settles, so there must be one. */
  take(what: string, owner?: string): Call<T> {
    const running = this.running(owner);
    if (running.length !== 1) throw new Error(`the path settles a ${what}, but ${running.length} are running`);
    running[0]!.done = true;
    return running[0]!;
  }
}

/** Callback actors that live as long as their state: started and stopped ones are counted. */
class Sessions {
  readonly all: Array<{ owner: string; sendBack(event: ServerMachineEvent): void; stopped: boolean }> = [];

  /** One session of `owner`'s actor, running until the machine stops it; the returned function is its cleanup. */
  open(owner: string, sendBack: (event: ServerMachineEvent) => void): () => void {
    const session = { owner, sendBack, stopped: false };
    this.all.push(session);
    return () => {
      session.stopped = true;
    };
  }

  running(owner?: string) {
    return this.all.filter((session) => !session.stopped && (owner === undefined || session.owner === owner));
  }

  take(what: string, owner?: string) {
    const running = this.running(owner);
    if (running.length !== 1) throw new Error(`the path acts through a ${what}, but ${running.length} are running`);
    return running[0]!;
  }
}

export interface ServerWorldOptions {
  /** Connections close at once (the registry tests), instead of when the test says. */
  closesAtOnce?: boolean;
}

/**
 * The scripted implementations to provide to the server machine, and the
 * handles that settle them. `owner` picks the actor when several share the
 * world (the registry tests); with one actor it may be left out.
 */
export function createServerWorld(options: ServerWorldOptions = {}) {
  const connects = new Calls<LiveConnection>();
  const checks = new Calls<AuthCheck>();
  const refreshes = new Calls<void>();
  const consents = new Sessions();
  const catalogs = new Sessions();
  const connections: FakeConnection[] = [];
  /** Each established connection's `lost` trigger. */
  const losers = new Map<FakeConnection, (error: FleetError) => void>();

  const work: WorldWork = { connects, checks, refreshes, consents, catalogs };
  const world = {
    actors: worldActors(() => work),
    host: worldHost(() => work),
    connects,
    checks,
    refreshes,
    consents,
    catalogs,
    /** Every connection ever established, in order. */
    connections: connections as readonly FakeConnection[],

    succeedConnect(owner?: string): void {
      const call = connects.take('connect', owner);
      const connection = new FakeConnection(connections.length + 1, call.owner, options.closesAtOnce ?? false);
      connections.push(connection);
      let markLost: (error: FleetError) => void = () => {};
      const lost = new Promise<FleetError>((resolve) => (markLost = resolve));
      losers.set(connection, markLost);
      call.resolve({ connection: connection as unknown as ServerConnection, lost, lossHandled: () => {} });
    },
    failConnect(error: FleetError, owner?: string): void {
      connects.take('connect', owner).reject(error);
    },
    answerCheck(answer: AuthCheck): void {
      checks.take('token check').resolve(answer);
    },
    failCheck(): void {
      checks.take('token check').reject(new Error('credentials file unreadable'));
    },
    succeedRefresh(): void {
      refreshes.take('refresh').resolve();
    },
    failRefresh(error: FleetError): void {
      refreshes.take('refresh').reject(error);
    },
    consentSends(event: ServerMachineEvent): void {
      consents.take('consent').sendBack(event);
    },
    catalogChanged(): void {
      catalogs.take('catalog session').sendBack({ type: 'catalog.tools_changed' });
    },
    /** The newest established connection ends by itself (its process dies, or `error` says why). */
    lose(error: FleetError): void {
      const connection = connections.at(-1);
      const markLost = connection && losers.get(connection);
      if (!connection || !markLost) throw new Error('the path loses a connection, but none was established');
      losers.delete(connection);
      markLost(error);
    },
    /** Settles the close in flight. */
    finishClose(error?: unknown): void {
      const closing = connections.filter((connection) => connection.closeInFlight);
      if (closing.length !== 1) throw new Error(`the path settles a close, but ${closing.length} are in flight`);
      closing[0]!.finishClose(error);
    },
  };
  return world;
}

export type ServerWorld = ReturnType<typeof createServerWorld>;

/** The invocations of a world's work. */
interface WorldWork {
  connects: Calls<LiveConnection>;
  checks: Calls<AuthCheck>;
  refreshes: Calls<void>;
  consents: Sessions;
  catalogs: Sessions;
}

/**
 * The scripted implementations acting on whichever world `current` returns
 * when the machine invokes them. A machine provided with these serves one
 * fresh world after another: `provide` rebuilds the whole machine, which
 * costs several times what running a short path does.
 */
export function worldActors(current: () => WorldWork) {
  return {
    connect: fromPromise<LiveConnection, ServerWork>((invocation) => current().connects.invoke(invocation)),
    checkAuth: fromPromise<AuthCheck, ServerWork>((invocation) => current().checks.invoke(invocation)),
    refreshToken: fromPromise<void, ServerWork>((invocation) => current().refreshes.invoke(invocation)),
    consent: fromCallback<ServerMachineEvent, ServerWork>(({ self, sendBack }) => current().consents.open(self._parent?.id ?? '?', sendBack)),
  };
}

/**
 * The host handed to the actors in their input, for what the machine's own
 * actors ask of it: the catalog session beside a ready connection (its owner
 * is the server's name). The rest of its work is provided as actors (`worldActors`).
 */
export function worldHost(current: () => WorldWork): ServerHost {
  const provided = (): never => {
    throw new Error('provided as an actor by the world');
  };
  return {
    connect: provided,
    checkAuth: provided,
    refreshToken: provided,
    consent: provided,
    catalogSession: (work, sendBack) => current().catalogs.open(work.name, sendBack),
    knowsCatalog: () => true,
  };
}

/** A fresh world per run, behind one set of implementations (`worldActors`) to provide once. */
export function createWorldSlot(options: ServerWorldOptions = {}) {
  let world = createServerWorld(options);
  return {
    actors: worldActors(() => world),
    host: worldHost(() => world),
    /** Starts a new world: the actors invoked from now on act on it. */
    next(): ServerWorld {
      world = createServerWorld(options);
      return world;
    },
  };
}
