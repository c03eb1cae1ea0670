import { assign, fromCallback, fromPromise, sendTo, setup, type ActorRefFrom } from 'xstate';
import { watchIdle } from './idle-watch.js';

/**
 * The life of one principal's session of a `per_user` server:
 * `connecting → ready → closing → closed`, or `failed` when the connect or
 * the connection fails. It ends by itself after `idleMs` with no call in
 * flight; the host ends it to make room (`session.evict`), when the
 * principal's inputs change or the server goes (`session.stop`).
 *
 * The machine is built once per process: what a session does (connect with
 * the principal's resolved config, close) is the host's, handed in the input
 * as {@link SessionWork}.
 */

/** What a connected session offers the machine: a way to end it. */
export interface SessionLink {
  /** Ends the connection (an HTTP session with `DELETE`, a process exits); resolves once it has. */
  close(): Promise<void>;
}

/** The host's work for one session. */
export interface SessionWork<Link extends SessionLink = SessionLink> {
  /** Opens the connection; rejects with a one-line error. Aborted when the session is stopped first. */
  connect(signal: AbortSignal): Promise<Link>;
  /** Calls this once the connection ends on its own (a crash, an exit): the session fails. */
  onLost?(listener: (error: string) => void): void;
}

export interface SessionInput<Link extends SessionLink = SessionLink> {
  server: string;
  principal: string;
  /** Milliseconds with no call in flight before the session ends. */
  idleMs: number;
  work: SessionWork<Link>;
}

export type SessionEvent =
  | { type: 'call.started' }
  | { type: 'call.finished' }
  | { type: 'session.idle' }
  | { type: 'session.evict' }
  | { type: 'session.stop' }
  | { type: 'connection.lost'; error: string };

export interface SessionContext {
  server: string;
  principal: string;
  idleMs: number;
  work: SessionWork;
  link: SessionLink | null;
  error: string | null;
  /** Why it closed: `idle`, `evicted` or `stopped` (null while open or after a failure). */
  reason: 'idle' | 'evicted' | 'stopped' | null;
}

/** The states a session is shown in (`GET /api/mcp/sessions`, `session.changed` events). */
export type SessionState = 'connecting' | 'ready' | 'closing' | 'closed' | 'failed';

export const sessionMachine = setup({
  types: {
    input: {} as SessionInput,
    context: {} as SessionContext,
    events: {} as SessionEvent,
  },
  actors: {
    /** The host's connect for this principal (work.connect); aborted when the state is left. */
    connect: fromPromise<SessionLink, SessionWork>(({ input, signal }) => input.connect(signal)),
    /** Tells the session when its connection ended on its own. */
    watchLoss: fromCallback<SessionEvent, SessionWork>(({ input, sendBack }) => {
      input.onLost?.((error) => sendBack({ type: 'connection.lost', error }));
    }),
    /** Sends `session.idle` once no call ran for `idleMs`; a call in flight holds it off. */
    idleWatch: fromCallback<SessionEvent, { idleMs: number }>(({ input, sendBack, receive }) => {
      return watchIdle(input.idleMs, () => sendBack({ type: 'session.idle' }), receive);
    }),
    /** Ends the connection; resolves once it has. */
    close: fromPromise<void, { link: SessionLink | null }>(async ({ input }) => {
      await input.link?.close();
    }),
  },
  actions: {
    keepLink: assign({ link: (_, link: SessionLink) => link }),
    recordError: assign({ error: (_, params: { error: unknown }) => oneLineOf(params.error) }),
    recordLoss: assign({ error: (_, error: string) => error }),
    closeFor: assign({ reason: (_, reason: 'idle' | 'evicted' | 'stopped') => reason }),
    forwardToIdleWatch: sendTo('idle', ({ event }) => event),
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => ({
    server: input.server,
    principal: input.principal,
    idleMs: input.idleMs,
    work: input.work as SessionWork,
    link: null,
    error: null,
    reason: null,
  }),
  initial: 'connecting',
  states: {
    connecting: {
      description: "connecting with the principal's own inputs (a process of their own for a local server)",
      invoke: {
        src: 'connect',
        input: ({ context }) => context.work,
        onDone: { target: 'ready', actions: { type: 'keepLink', params: ({ event }) => event.output } },
        onError: { target: 'failed', actions: { type: 'recordError', params: ({ event }) => ({ error: event.error }) } },
      },
      on: {
        // Nothing to close yet: leaving aborts the connect, which ends what it started.
        'session.stop': { target: 'closed', actions: { type: 'closeFor', params: 'stopped' } },
        'session.evict': { target: 'closed', actions: { type: 'closeFor', params: 'evicted' } },
      },
    },
    ready: {
      description: "the principal's calls go through it; it ends after idle_timeout_seconds with no call",
      invoke: [
        { id: 'idle', src: 'idleWatch', input: ({ context }) => ({ idleMs: context.idleMs }) },
        { src: 'watchLoss', input: ({ context }) => context.work },
      ],
      on: {
        'call.started': { actions: 'forwardToIdleWatch' },
        'call.finished': { actions: 'forwardToIdleWatch' },
        'session.idle': { target: 'closing', actions: { type: 'closeFor', params: 'idle' } },
        'session.evict': { target: 'closing', actions: { type: 'closeFor', params: 'evicted' } },
        'session.stop': { target: 'closing', actions: { type: 'closeFor', params: 'stopped' } },
        'connection.lost': { target: 'failed', actions: { type: 'recordLoss', params: ({ event }) => event.error } },
      },
    },
    closing: {
      description: 'ending the connection: an HTTP session is deleted, a process exits',
      invoke: {
        src: 'close',
        input: ({ context }) => ({ link: context.link }),
        onDone: { target: 'closed' },
        // A close that fails has still let go of the connection.
        onError: { target: 'closed' },
      },
    },
    closed: { type: 'final', description: 'ended: idle, evicted or stopped; the next call starts a new session' },
    failed: { type: 'final', description: 'the connect or the connection failed; the next call starts a new session' },
  },
});

export type SessionActorRef = ActorRefFrom<typeof sessionMachine>;

function oneLineOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}
