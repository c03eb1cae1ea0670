/**
 * The approval gate for `ask` tools (docs/people-in-the-loop.md): each call waiting for a
 * decision is journaled (`approval.requested`), decided by the host's
 * `approve` callback or — without one — by a person through the API or the
 * page, and the decision journaled (`approval.decided`). A call is never
 * made on a timeout, a denial or an abort of its own signal.
 */
import { randomUUID } from 'node:crypto';
import type { JournalEventInput } from '../journal/index.js';
import { maskArguments } from './mask-arguments.js';
import { ADMIN_PRINCIPAL } from '../users/principal.js';

export type ApprovalDecision = 'allow' | 'deny';
/** Who decided: the host's callback, a person on the management page, or a client of the API (its bearer token). */
export type ApprovalDecider = 'callback' | 'page' | 'api';

/** What the `approve` callback is asked about. */
export interface ApprovalRequest {
  id: string;
  server: string;
  /** The agent-facing name, `{server}__{tool}`. */
  tool: string;
  /** The server's own name of the tool. */
  original: string;
  /** As the model sent them. */
  arguments: Record<string, unknown>;
  requested_at: string;
  /** Whose call it is (`admin` for the admin token and a call naming no principal); only they (and admins) see and decide it. */
  principal: string;
}

/** `createMcpHost({ approve })`: decides an `ask` call; `signal` aborts when the call no longer waits (its own abort, the timeout). */
export type ApproveCallback = (
  request: ApprovalRequest,
  options: { signal: AbortSignal },
) => ApprovalDecision | Promise<ApprovalDecision>;

/** A call waiting for a person: its arguments masked (config secrets), as the API and the page show it. */
export interface PendingApproval extends ApprovalRequest {
  /** When it fails as timed out if nobody decides. */
  expires_at: string;
}

/** How a wait ended: allowed, or the text the model reads instead of a result. */
export type ApprovalVerdict = { allowed: true } | { allowed: false; message: string };

export interface ApprovalAsk {
  server: string;
  tool: string;
  original: string;
  arguments: Record<string, unknown>;
  /** The server's config secrets: masked in what is journaled and shown. */
  secrets: readonly string[];
  timeoutSeconds: number;
  /** Whose call waits; default `admin`. */
  principal?: string | undefined;
  signal?: AbortSignal | undefined;
  /** Told when the call starts waiting for a person (not when the `approve` callback decides). */
  onWaiting?: ((pending: PendingApproval) => void) | undefined;
}

export interface Approvals {
  /** Waits for the decision on one call; rejects with the signal's reason when the call is aborted. */
  ask(request: ApprovalAsk): Promise<ApprovalVerdict>;
  /** The calls waiting for a person, oldest first. */
  pending(): PendingApproval[];
  /**
   * Decides a waiting call, by `decider` (the principal who decided; default `admin`);
   * false when no call with that id waits (unknown, decided, timed out).
   */
  decide(id: string, decision: ApprovalDecision, by: Exclude<ApprovalDecider, 'callback'>, decider?: string): boolean;
  /** Ends every wait as `cancelled` (the host shuts down): those calls are not made. */
  close(): void;
}

/** The most bytes of arguments an `approval.requested` event carries; bigger ones are cut to a note. */
export const MAX_JOURNALED_ARGUMENT_BYTES = 16 * 1024;

interface Waiting {
  /** What the API shows; null while the callback decides (nobody else may). */
  shown: PendingApproval | null;
  settle(decision: ApprovalDecision, by: ApprovalDecider, decider?: string): void;
  /** Ends the wait as `cancelled`: the host shuts down. */
  cancel(): void;
}

export function createApprovals(options: {
  append(event: JournalEventInput): void;
  approve?: ApproveCallback | undefined;
}): Approvals {
  const waiting = new Map<string, Waiting>();

  function journaledArguments(masked: Record<string, unknown>): Record<string, unknown> {
    const text = JSON.stringify(masked);
    if (Buffer.byteLength(text) <= MAX_JOURNALED_ARGUMENT_BYTES) return masked;
    return { _truncated: `${Buffer.byteLength(text)} bytes of arguments, not journaled` };
  }

  return {
    ask(request) {
      const id = randomUUID();
      const now = Date.now();
      const requested_at = new Date(now).toISOString();
      const { server, tool, original } = request;
      const principal = request.principal ?? ADMIN_PRINCIPAL;
      const masked = maskArguments(request.arguments, request.secrets);
      options.append({ type: 'approval.requested', server, id, tool, original, arguments: journaledArguments(masked), principal });
      const decided = (decision: 'allow' | 'deny' | 'timeout' | 'cancelled', by: ApprovalDecider | null, decider?: string): void =>
        options.append({ type: 'approval.decided', server, id, tool, decision, by, principal, ...(decider !== undefined && { decided_by: decider }) });

      return new Promise<ApprovalVerdict>((resolve, reject) => {
        const stop = new AbortController();
        let done = false;
        const finish = (): boolean => {
          if (done) return false;
          done = true;
          clearTimeout(timer);
          request.signal?.removeEventListener('abort', onAbort);
          waiting.delete(id);
          stop.abort();
          return true;
        };
        const settle = (decision: ApprovalDecision, by: ApprovalDecider, decider?: string): void => {
          if (!finish()) return;
          decided(decision, by, decider);
          resolve(decision === 'allow' ? { allowed: true } : { allowed: false, message: `approval denied (by ${by}): the call to ${tool} was not made` });
        };
        const timer = setTimeout(function approvalTimedOut() {
          if (!finish()) return;
          decided('timeout', null);
          resolve({
            allowed: false,
            message: `approval timed out after ${request.timeoutSeconds} s with no decision: the call to ${tool} was not made`,
          });
        }, request.timeoutSeconds * 1000);
        const onAbort = (): void => {
          if (!finish()) return;
          decided('cancelled', null);
          reject(request.signal?.reason ?? new Error('aborted'));
        };
        const cancel = (): void => {
          if (!finish()) return;
          decided('cancelled', null);
          resolve({ allowed: false, message: `approval cancelled: the host shut down before a decision; the call to ${tool} was not made` });
        };
        if (request.signal?.aborted) {
          onAbort();
          return;
        }
        request.signal?.addEventListener('abort', onAbort, { once: true });

        if (options.approve !== undefined) {
          waiting.set(id, { shown: null, settle, cancel });
          const signal = request.signal === undefined ? stop.signal : AbortSignal.any([stop.signal, request.signal]);
          Promise.resolve()
            .then(() => options.approve!({ id, server, tool, original, arguments: request.arguments, requested_at, principal }, { signal }))
            .then(
              (decision) => settle(decision === 'allow' ? 'allow' : 'deny', 'callback'),
              // A callback that fails decides nothing it meant: the call is not made.
              () => settle('deny', 'callback'),
            );
          return;
        }
        const expires_at = new Date(now + request.timeoutSeconds * 1000).toISOString();
        const shown = { id, server, tool, original, arguments: masked, requested_at, principal, expires_at };
        waiting.set(id, { shown, settle, cancel });
        try {
          request.onWaiting?.(shown);
        } catch (error) {
          // The caller's own callback failed: its call ends with that error, and the wait with it.
          if (finish()) decided('cancelled', null);
          reject(error);
        }
      });
    },

    pending() {
      const shown: PendingApproval[] = [];
      for (const entry of waiting.values()) if (entry.shown !== null) shown.push(entry.shown);
      return shown;
    },

    decide(id, decision, by, decider = ADMIN_PRINCIPAL) {
      // A plain JavaScript caller may pass anything: what would be journaled is checked first.
      if (decision !== 'allow' && decision !== 'deny') throw new TypeError(`decideApproval: decision must be "allow" or "deny", not ${describe(decision)}`);
      if (by !== 'page' && by !== 'api') throw new TypeError(`decideApproval: by must be "page" or "api", not ${describe(by)}`);
      const entry = waiting.get(id);
      if (entry?.shown == null) return false;
      entry.settle(decision, by, decider);
      return true;
    },

    close() {
      for (const entry of [...waiting.values()]) entry.cancel();
    },
  };
}

/** A value as an error message may show it: a short string quoted, anything else by its type. */
function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : value === null ? 'null' : typeof value;
}
