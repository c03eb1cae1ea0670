/**
 * The bounds of a 2026-07-28 call's input rounds. On that era a server asks
 * for input (an elicitation, a sample, the roots) by answering the call with
 * `input_required`; the SDK then runs the host's handler between two requests
 * of the call, where neither the call's timeout nor the connection's end
 * reaches it, and it waits for the handler to settle whatever its signal
 * says. A call runs its requests inside `withinCall`; a handler answers
 * through `answeredInTime`, which gives it a signal that also aborts when the
 * call's timeout passes or the connection ends, and stops waiting for it
 * then, so the call ends as a 2025 call does. Bound by async context:
 * the SDK runs each round in the context of the call it answers
 * (`bindResponseHandlers`, sdk-internals.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { SdkError, SdkErrorCode } from '@modelcontextprotocol/client';

export interface InputRoundBounds {
  /** How long one handler may take: the call's `call_timeout_seconds`. */
  waitMs: number;
  /** Aborts when the connection ends (closed, or gone by itself). */
  ended: AbortSignal;
}

const bounds = new AsyncLocalStorage<InputRoundBounds>();

/** Runs `call` with its input rounds bounded by `within`. */
export function withinCall<T>(within: InputRoundBounds, call: () => Promise<T>): Promise<T> {
  return bounds.run(within, call);
}

/**
 * `answer` run with a signal that also aborts at the bounds of the call it
 * answers (none outside a call: the SDK's own signal), and rejected as soon as
 * that signal aborts, with its reason, whether or not the handler honours it.
 */
export function answeredInTime<T>(signal: AbortSignal, answer: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const within = bounds.getStore();
  if (within === undefined) return answer(signal);
  const timeout = new AbortController();
  const timer = setTimeout(
    () => timeout.abort(new SdkError(SdkErrorCode.RequestTimeout, `the server's request for input got no answer within ${within.waitMs / 1000}s`)),
    within.waitMs,
  );
  const bound = AbortSignal.any([signal, within.ended, timeout.signal]);
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(bound.reason);
    if (bound.aborted) stop();
    else bound.addEventListener('abort', stop, { once: true });
    answer(bound)
      .then(resolve, reject)
      .finally(() => {
        clearTimeout(timer);
        bound.removeEventListener('abort', stop);
      });
  });
}
