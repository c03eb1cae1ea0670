/**
 * A 2026-07-28 gateway request whose backend asks its client something
 * (sampling, elicitation, roots) during the call: the request is answered
 * `input_required` with the backend's requests, and the client's retry (its
 * `inputResponses` and our `requestState`) answers them, until the call ends.
 *
 * The call itself stays under way in this worker between the rounds (the
 * backend's request is pending on it, whatever the backend's era: a 2026
 * backend's own rounds are answered inside the call by the host's connection),
 * so one call is one call (approvals, quota, audit) however many rounds it
 * takes. Bounded: a call is held at most `ttlMs` between two rounds, then
 * cancelled; at most `maxPerPrincipal` per principal and `maxHeld` on the
 * worker (over them, the host answers the backend as it did before). The
 * `requestState` is HMAC-sealed with this worker's key and names the call;
 * the call remembers its principal, so another principal's retry, a forged
 * state and a retry that reached another worker are each refused with an
 * error that says which.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import {
  createRequestStateCodec,
  inputRequired,
  ProtocolError,
  ProtocolErrorCode,
  type InputRequest,
  type InputRequiredResult,
  type InputResponse,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { RequestingClient } from '../connection/index.js';
import type { ProgressRoute } from './progress.js';

export interface RoundLimits {
  /** A call waits this long at most for the client's next round, then is cancelled. Default 5 minutes. */
  ttlMs?: number;
  /** Calls one principal may have held on this worker at once. Default 20. */
  maxPerPrincipal?: number;
  /** Calls held on this worker at once. Default 1000. */
  maxHeld?: number;
}

export const DEFAULT_ROUND_LIMITS = { ttlMs: 5 * 60_000, maxPerPrincipal: 20, maxHeld: 1000 } as const;

/** What a 2026-era request's client is, for one call: which of the backend's requests it can answer. */
export interface RoundCaller {
  /** The principal's id (the admin's without one): a held call answers only its own. */
  owner: string;
  /** Whether the client declared what `request` needs. */
  accepts(request: InputRequest): boolean;
}

export interface Rounds {
  /**
   * Runs the call `start` starts (with `client` to forward the backend's requests to and the
   * call's own signal), or continues the one the request's `requestState` names: its result,
   * or `input_required` while the backend waits for the client. The call's `progress` goes to
   * the request of each round in turn, each answer after the progress sent before it.
   */
  run<T>(ctx: ServerContext, caller: RoundCaller, progress: ProgressRoute, start: (client: RequestingClient, signal: AbortSignal) => Promise<T>): Promise<T | InputRequiredResult>;
  /** Calls held now: all, or one principal's. */
  count(owner?: string): number;
  /** Cancels every held call. */
  close(): void;
}

interface Ask {
  request: InputRequest;
  resolve(response: InputResponse): void;
  reject(error: unknown): void;
  /** Sent to the client in a round (and not answered yet). */
  sent: boolean;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

interface Held {
  id: string;
  owner: string;
  method: string;
  asks: Map<string, Ask>;
  outcome: Promise<Outcome<unknown>>;
  /** Wakes the round waiting for the backend's next request. */
  wake: (() => void) | undefined;
  controller: AbortController;
  expiry: NodeJS.Timeout | undefined;
  /** A round is being answered: a second retry with the same state at once is refused. */
  busy: boolean;
  registered: boolean;
  progress: ProgressRoute;
}

interface State {
  id: string;
  worker: string;
  method: string;
}

/** What `createRequestStateCodec` seals: `v1.` base64url(JSON) `.` MAC; the body is readable. */
function unverifiedWorker(state: string): string | undefined {
  try {
    const body = JSON.parse(Buffer.from(state.split('.')[1] ?? '', 'base64url').toString('utf8')) as { p?: { worker?: unknown } };
    return typeof body.p?.worker === 'string' ? body.p.worker : undefined;
  } catch {
    return undefined;
  }
}

const invalidState = (message: string, reason: string) => new ProtocolError(ProtocolErrorCode.InvalidParams, message, { reason });

export function createRounds(limits: RoundLimits = {}, worker = randomUUID()): Rounds {
  const ttlMs = limits.ttlMs ?? DEFAULT_ROUND_LIMITS.ttlMs;
  const maxPerPrincipal = limits.maxPerPrincipal ?? DEFAULT_ROUND_LIMITS.maxPerPrincipal;
  const maxHeld = limits.maxHeld ?? DEFAULT_ROUND_LIMITS.maxHeld;
  // Only this worker holds its calls, so only it needs the key: a fresh one per process.
  const codec = createRequestStateCodec<State>({ key: randomBytes(32), ttlSeconds: Math.ceil(ttlMs / 1000) });
  const held = new Map<string, Held>();

  const count = (owner?: string) => {
    let n = 0;
    for (const call of held.values()) if (owner === undefined || call.owner === owner) n += 1;
    return n;
  };

  function release(call: Held, reason?: Error): void {
    clearTimeout(call.expiry);
    held.delete(call.id);
    call.registered = false;
    if (reason !== undefined) {
      call.controller.abort(reason);
      for (const ask of call.asks.values()) ask.reject(reason);
      call.asks.clear();
    }
  }

  /** Waits for the call's end or its backend's next requests; the latter are a round to the client. */
  async function next<T>(call: Held, ctx: ServerContext): Promise<T | InputRequiredResult> {
    // While a request of the client is open, its cancellation is the call's.
    const cancel = () => release(call, new Error('the client cancelled the call'));
    ctx.mcpReq.signal.addEventListener('abort', cancel);
    call.progress.moveTo(ctx);
    try {
      const unsent = () => [...call.asks.values()].some((ask) => !ask.sent);
      const asked = new Promise<'asked'>((resolve) => {
        call.wake = () => {
          // Requests the backend sends together go in one round.
          setImmediate(() => resolve('asked'));
        };
        if (unsent()) call.wake();
      });
      const first = await Promise.race([call.outcome, asked]);
      call.wake = undefined;
      if (first !== 'asked') {
        release(call);
        await call.progress.flushed();
        if (first.ok) return first.value as T;
        throw first.error;
      }
      const inputRequests: Record<string, InputRequest> = {};
      for (const [key, ask] of call.asks) {
        ask.sent = true;
        inputRequests[key] = ask.request;
      }
      clearTimeout(call.expiry);
      call.expiry = setTimeout(() => release(call, new Error(`the client did not answer within ${ttlMs / 1000} s`)), ttlMs);
      call.expiry.unref();
      const requestState = await codec.mint({ id: call.id, worker, method: call.method });
      await call.progress.flushed();
      return inputRequired({ inputRequests, requestState });
    } finally {
      ctx.mcpReq.signal.removeEventListener('abort', cancel);
    }
  }

  async function resume<T>(state: string, ctx: ServerContext, caller: RoundCaller): Promise<T | InputRequiredResult> {
    let payload: State;
    try {
      payload = await codec.verify(state, ctx);
    } catch (error) {
      const other = unverifiedWorker(state);
      if (other !== undefined && other !== worker) {
        throw invalidState(
          'this requestState names a call held by another worker of the fleet: a call whose backend asks its client something stays on the worker it began on, so every round of it must reach that worker (route by the requestState, or keep the connection to one worker)',
          'other_worker',
        );
      }
      if (error instanceof Error && error.message === 'expired') throw invalidState('this requestState has expired: its call was cancelled; call again', 'expired');
      throw invalidState('this requestState was not issued by this gateway', 'forged');
    }
    const call = held.get(payload.id);
    if (call === undefined || payload.method !== ctx.mcpReq.method) {
      throw invalidState('the call this requestState names is over (answered, cancelled, or not answered in time); call again', 'gone');
    }
    if (call.owner !== caller.owner) throw invalidState("this requestState is another caller's call", 'other_principal');
    if (call.busy) throw invalidState('a round of this call is being answered already', 'busy');
    call.busy = true;
    try {
      clearTimeout(call.expiry);
      const responses = ctx.mcpReq.inputResponses ?? {};
      for (const [key, ask] of [...call.asks]) {
        if (!ask.sent || !(key in responses)) continue;
        call.asks.delete(key);
        // The backend validates the answer as it would any client's.
        ask.resolve(responses[key] as InputResponse);
      }
      // An answer it left out is asked again in the next round.
      for (const ask of call.asks.values()) ask.sent = false;
      return await next<T>(call, ctx);
    } finally {
      call.busy = false;
    }
  }

  return {
    async run<T>(ctx: ServerContext, caller: RoundCaller, progress: ProgressRoute, start: (client: RequestingClient, signal: AbortSignal) => Promise<T>): Promise<T | InputRequiredResult> {
      const state = ctx.mcpReq.requestState<unknown>();
      if (typeof state === 'string') return resume<T>(state, ctx, caller);
      const call: Held = {
        id: randomUUID(),
        owner: caller.owner,
        method: ctx.mcpReq.method,
        asks: new Map(),
        outcome: Promise.resolve({ ok: true, value: undefined }),
        wake: undefined,
        controller: new AbortController(),
        expiry: undefined,
        busy: false,
        registered: false,
        progress,
      };
      let asked = 0;
      const client: RequestingClient = {
        accepts(request) {
          if (!caller.accepts(request) || call.controller.signal.aborted) return false;
          if (call.registered) return true;
          // Over the bounds the call is not held: the host answers its backend as before.
          if (held.size >= maxHeld || count(call.owner) >= maxPerPrincipal) return false;
          // Counted from its first request on, so calls asking at once cannot pass the bounds together.
          held.set(call.id, call);
          call.registered = true;
          return true;
        },
        ask(request, signal) {
          return new Promise<InputResponse>((resolve, reject) => {
            asked += 1;
            const key = `${request.method.replace('/', '_')}_${asked}`;
            const { _meta: _ignored, ...params } = (request.params ?? {}) as Record<string, unknown>;
            const ask: Ask = { request: { method: request.method, params } as InputRequest, resolve, reject, sent: false };
            call.asks.set(key, ask);
            // The backend gave up on it: it is not asked again.
            signal.addEventListener('abort', () => {
              if (call.asks.delete(key)) reject(signal.reason);
            });
            call.wake?.();
          });
        },
      };
      call.outcome = start(client, call.controller.signal).then(
        (value): Outcome<unknown> => ({ ok: true, value }),
        (error: unknown): Outcome<unknown> => ({ ok: false, error }),
      );
      return next<T>(call, ctx);
    },
    count,
    close() {
      for (const call of [...held.values()]) release(call, new Error('the gateway is closing'));
    },
  };
}
