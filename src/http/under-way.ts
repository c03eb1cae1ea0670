import type { Response } from 'express';
import { SHUTTING_DOWN } from '../gateway/web-exchange.js';
import { HttpError } from './errors.js';
import { KILL_GRACE_MS } from '../connection/child-transport.js';

/**
 * How long the stop waits for the answers of the requests it cancelled: the grace
 * a server's process gets between SIGTERM and SIGKILL, as a request's work that
 * ignores its cancel is as stuck as a process that ignores its SIGTERM.
 */
export const ANSWER_GRACE_MS = KILL_GRACE_MS;

/**
 * The management API's requests whose work runs on after the request arrived
 * (a tool call, a prompt render): each has a signal that aborts when its client
 * hangs up before the answer, and the worker's stop aborts the ones still under
 * way, {@link STOPPING} their reason, so that each is answered (saying the
 * worker is shutting down) before the port closes rather than cut with its socket.
 */
export interface RequestsUnderWay {
  /**
   * A request's work begins: its signal aborts when `res` closes unanswered or
   * when the stop begins. Once the stop began, throws `503 shutting_down`.
   */
  begin(res: Response): AbortSignal;
  /**
   * The stop: aborts each request under way with {@link STOPPING}, and resolves
   * once each answer is written (or its socket closed), or once `graceMs` is out:
   * work that ignores its cancel does not hold the stop up, its request is then
   * cut with the port. A request beginning from then on is refused.
   */
  close(graceMs?: number): Promise<void>;
  /**
   * A change (any request but a GET) arrives: the stop waits for its answer
   * after the host began to stop, so a change the stop cut short (a server
   * still starting to be added) is answered with how it ended. Once the stop
   * began, throws `503 shutting_down`.
   */
  change(res: Response): void;
  /** Whether a change is still unanswered. */
  changing(): boolean;
  /** Resolves once every change under way is answered (or its socket closed), or once `graceMs` is out. */
  changesAnswered(graceMs?: number): Promise<void>;
}

/** The reason a request's work is aborted with when the worker stops: its answer then says so. */
export const STOPPING = new Error(SHUTTING_DOWN);

/** Whether `signal` was aborted by the worker's stop (not by the client hanging up). */
export function stoppedBy(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason === STOPPING;
}

/** What a request the stop cut short is answered when it has no answer of its own. */
export function shuttingDown(): HttpError {
  return new HttpError(503, 'shutting_down', SHUTTING_DOWN);
}

export function requestsUnderWay(): RequestsUnderWay {
  /** Each request under way: its abort, and its response's end (written, or cut). */
  const requests = new Map<AbortController, Promise<void>>();
  /** Each change under way: its response's end. */
  const changes = new Map<Response, Promise<void>>();
  let closing = false;
  return {
    begin(res) {
      if (closing) throw shuttingDown();
      const controller = new AbortController();
      requests.set(controller, new Promise((ended) => res.once('close', ended)));
      res.on('close', function abortIfUnanswered() {
        requests.delete(controller);
        if (!res.writableFinished) controller.abort(new Error('HTTP client disconnected'));
      });
      return controller.signal;
    },
    async close(graceMs = ANSWER_GRACE_MS) {
      closing = true;
      const ended = [...requests.values()];
      for (const controller of requests.keys()) controller.abort(STOPPING);
      await within(ended, graceMs);
    },
    change(res) {
      if (closing) throw shuttingDown();
      changes.set(res, new Promise((ended) => res.once('close', ended)));
      res.once('close', () => changes.delete(res));
    },
    changing: () => changes.size > 0,
    changesAnswered: (graceMs = ANSWER_GRACE_MS) => within([...changes.values()], graceMs),
  };
}

/** Resolves once every one of `ended` has, or once `graceMs` is out. */
async function within(ended: Array<Promise<void>>, graceMs: number): Promise<void> {
  if (ended.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const graceOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
  try {
    await Promise.race([Promise.all(ended), graceOut]);
  } finally {
    clearTimeout(timer);
  }
}
