/**
 * A forwarded call's progress, sent in order on the request now open for the
 * call. A 2026-07-28 call that takes several `input_required` rounds is open
 * on the client's latest retry, not on the request it began with (whose
 * stream ended with its first round): each round moves the route there, with
 * that request's own progress token.
 */
import type { ServerContext } from '@modelcontextprotocol/server';
import type { ToolProgress } from '../catalog/index.js';

export interface ProgressRoute {
  /** Sends one progress update on the request open now; dropped when that request asked for none. */
  send(progress: ToolProgress): void;
  /** The call is open on `ctx` from now on. */
  moveTo(ctx: ServerContext): void;
  /** Resolves once everything sent so far went out: the answer goes after it, as the backend sent them. */
  flushed(): Promise<void>;
}

export function progressRoute(ctx: ServerContext): ProgressRoute {
  let open = ctx;
  let sent = Promise.resolve();
  return {
    send(progress) {
      const here = open;
      const token = here.mcpReq._meta?.progressToken;
      if (token === undefined) return;
      // A lost notification must not fail the call.
      sent = sent.then(() => here.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, ...progress } })).catch(() => {});
    },
    moveTo(next) {
      open = next;
    },
    flushed: () => sent,
  };
}
