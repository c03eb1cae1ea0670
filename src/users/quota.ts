/**
 * Per-principal quotas: how many calls a user may start per minute and how
 * many may run at once. The worker's defaults apply to every user; a user's
 * own values (stored with the user) override them. The admin is never
 * limited. Counted by the host that makes the calls, so each worker of a
 * fleet counts its own.
 */
import { z } from 'zod';

/** A limit: a positive integer, or `null` for none. */
const Limit = z.number().int().min(1).max(1_000_000).nullable();

/**
 * `calls_per_minute` and `max_concurrent_calls`. On a user, an absent field
 * takes the worker's default and `null` means no limit for them.
 */
export const Quota = z.strictObject({
  calls_per_minute: Limit.optional(),
  max_concurrent_calls: Limit.optional(),
});
export type Quota = z.infer<typeof Quota>;

/** Which limit refused a call. */
export type QuotaLimit = 'calls_per_minute' | 'max_concurrent_calls';

/** A call refused: which limit, and how many seconds to wait before trying again. */
export interface QuotaRefusal {
  limit: QuotaLimit;
  retry_after_seconds: number;
  /** What the model reads. */
  message: string;
}

/** Admission of one call: `release()` once it ends (whatever its outcome), or the refusal. */
export type Admission = { admitted: true; release(): void } | { admitted: false; refusal: QuotaRefusal };

export interface Quotas {
  /** Counts a call of `principal` under `own` (the user's values) over the defaults, or refuses it. */
  admit(principal: string, own: Quota | undefined): Admission;
}

/** The window `calls_per_minute` counts over. */
const MINUTE_MS = 60_000;

/**
 * While a user's calls run at their `max_concurrent_calls`, the wait a
 * refusal names: when one ends is not known, so a short retry.
 */
export const CONCURRENCY_RETRY_SECONDS = 1;

interface Usage {
  /** Start times of the calls of the last minute, oldest first. */
  starts: number[];
  running: number;
}

/** The limit in force: the user's own when they have one (even `null`), else the default. */
function effective(own: number | null | undefined, fallback: number | null | undefined): number | null {
  return own !== undefined ? own : (fallback ?? null);
}

/**
 * One host's counters. A sliding window of one minute: a user at their limit
 * may start again when the oldest call of the window is a minute old. A
 * refused call is not counted. Users with nothing counted hold no memory.
 */
export function createQuotas(defaults: Quota = {}, now: () => number = Date.now): Quotas {
  const limits = Quota.parse(defaults);
  const usage = new Map<string, Usage>();

  const forget = (principal: string, entry: Usage): void => {
    if (entry.running === 0 && entry.starts.length === 0) usage.delete(principal);
  };

  return {
    admit(principal, own) {
      const perMinute = effective(own?.calls_per_minute, limits.calls_per_minute);
      const concurrent = effective(own?.max_concurrent_calls, limits.max_concurrent_calls);
      if (perMinute === null && concurrent === null) return { admitted: true, release: () => {} };
      const at = now();
      const entry = usage.get(principal) ?? { starts: [], running: 0 };
      while (entry.starts.length > 0 && entry.starts[0]! <= at - MINUTE_MS) entry.starts.shift();
      if (concurrent !== null && entry.running >= concurrent) {
        forget(principal, entry);
        return {
          admitted: false,
          refusal: {
            limit: 'max_concurrent_calls',
            retry_after_seconds: CONCURRENCY_RETRY_SECONDS,
            message:
              `quota: max_concurrent_calls (${concurrent}) reached — ${entry.running} of your calls are running; ` +
              `try again in ${CONCURRENCY_RETRY_SECONDS} s or once one of them ends. The call was not made.`,
          },
        };
      }
      if (perMinute !== null && entry.starts.length >= perMinute) {
        const retry = Math.max(1, Math.ceil((entry.starts[entry.starts.length - perMinute]! + MINUTE_MS - at) / 1000));
        forget(principal, entry);
        return {
          admitted: false,
          refusal: {
            limit: 'calls_per_minute',
            retry_after_seconds: retry,
            message: `quota: calls_per_minute (${perMinute}) reached; try again in ${retry} s. The call was not made.`,
          },
        };
      }
      // Only a limited dimension is counted: an unlimited one would keep start times for nothing.
      if (perMinute !== null) entry.starts.push(at);
      entry.running += 1;
      usage.set(principal, entry);
      let released = false;
      return {
        admitted: true,
        release() {
          if (released) return;
          released = true;
          entry.running -= 1;
          const cutoff = now() - MINUTE_MS;
          while (entry.starts.length > 0 && entry.starts[0]! <= cutoff) entry.starts.shift();
          forget(principal, entry);
        },
      };
    },
  };
}
