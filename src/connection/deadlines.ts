/**
 * Time bounds shared by the steps of a connection: the deadline of a whole
 * connect, and bounded waits for things a dead server may never finish
 * (its stderr, the end of its session).
 */
import type { RequestBound } from './remote-transport.js';

/** The deadline and the caller's signal, as one signal for every request of a connect. */
export interface ConnectBound extends RequestBound {
  timedOut(): boolean;
  dispose(): void;
}

/** Aborts after `seconds` or when `callerSignal` aborts, whichever comes first. */
export function connectBound(seconds: number, callerSignal: AbortSignal | undefined): ConnectBound {
  const controller = new AbortController();
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    controller.abort(new Error('connect timed out'));
  }, seconds * 1000);
  const onCallerAbort = (): void => controller.abort(callerSignal?.reason);
  callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
  return {
    signal: controller.signal,
    // The SDK's own per-request timeout must never win over the deadline.
    timeout: seconds * 1000 + 1000,
    timedOut: () => timedOut,
    dispose() {
      clearTimeout(deadline);
      callerSignal?.removeEventListener('abort', onCallerAbort);
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** A signal that follows `source` until `dispose()` detaches it. */
export function linkedSignal(source: AbortSignal): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const forward = (): void => controller.abort(source.reason);
  if (source.aborted) forward();
  else source.addEventListener('abort', forward, { once: true });
  return { signal: controller.signal, dispose: () => source.removeEventListener('abort', forward) };
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as `signal` aborts. */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Waits for `promise`, but at most `ms`. */
export function settle(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(() => undefined),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]).finally(() => clearTimeout(timer));
}
