/**
 * The gateway client whose request is under way, as the one a backend's
 * requests to its client (sampling, elicitation, roots) go to. A 2025-11-25
 * session is asked on the call's response stream; a 2026-07-28 request is
 * answered `input_required` and its retry carries the answers (rounds.ts).
 */
import type { InputRequest, InputResponse } from '@modelcontextprotocol/client';
import type { ClientCapabilities, InputRequiredResult, Server, ServerContext } from '@modelcontextprotocol/server';
import type { McpHost } from '../host.js';
import type { RequestingClient } from '../connection/index.js';
import { ADMIN_PRINCIPAL, type Principal } from '../users/index.js';
import type { Rounds } from './rounds.js';
import { progressRoute, type ProgressRoute } from './progress.js';

/** A forwarded request waits this long at most for the client's answer (a person may be filling in a form). */
export const FORWARD_TIMEOUT_MS = 5 * 60_000;

/** Whether a client that declared `declared` can answer `request`. */
export function declares(declared: ClientCapabilities | undefined, request: InputRequest): boolean {
  switch (request.method) {
    case 'sampling/createMessage':
      // Tool use in sampling is its own capability.
      return declared?.sampling !== undefined && (request.params.tools === undefined || declared.sampling.tools !== undefined);
    case 'elicitation/create': {
      const elicitation = declared?.elicitation;
      if (elicitation === undefined) return false;
      // `elicitation: {}` is form mode only, as the spec reads it.
      if (request.params.mode === 'url') return elicitation.url !== undefined;
      return elicitation.form !== undefined || elicitation.url === undefined;
    }
    case 'roots/list':
      return declared?.roots !== undefined;
  }
}

/** The client of `server`'s session that sent the request `ctx` is handling, or undefined on a 2026-era request (it has no stream to ask on). */
export function requestingClient(server: Server, ctx: ServerContext, era: 'legacy' | 'modern'): RequestingClient | undefined {
  if (era !== 'legacy') return undefined;
  return {
    accepts: (request) => declares(server.getClientCapabilities(), request),
    ask(request: InputRequest, signal: AbortSignal): Promise<InputResponse> {
      return ctx.mcpReq.send(request as { method: InputRequest['method']; params?: Record<string, unknown> }, {
        signal: AbortSignal.any([signal, ctx.mcpReq.signal]),
        timeout: FORWARD_TIMEOUT_MS,
      }) as Promise<InputResponse>;
    },
  };
}

/** Runs `run` for `server` with the calling client forwarded to, when there is one. */
export function asCaller<T>(host: McpHost, server: string | undefined, client: RequestingClient | undefined, run: () => Promise<T>): Promise<T> {
  return server === undefined || client === undefined ? run() : host.duringCallOf(server, client, run);
}

/** A gateway server's request and its client, as the forwarding of one call needs them. */
export interface CallOf {
  host: McpHost;
  server: Server;
  era: 'legacy' | 'modern';
  /** Where a 2026-era call is held across its rounds; without it such a call's backend is answered by the host. */
  rounds: Rounds | undefined;
  principal: Principal | undefined;
}

/**
 * Runs a call (`tools/call`, `resources/read`, `prompts/get`) to `target`'s server, its
 * server's requests to its client forwarded to the calling client: on a 2025 session's
 * stream, or as `input_required` rounds of a 2026 request (the call then runs on its own
 * signal, as it outlives the request). `run` gets the signal to run on and the call's
 * progress route (to the request open for the call in each round); the answer goes
 * out after the progress sent before it.
 */
export async function forwardCall<T>(
  of: CallOf,
  target: string | undefined,
  ctx: ServerContext,
  run: (signal: AbortSignal, progress: ProgressRoute) => Promise<T>,
): Promise<T | InputRequiredResult> {
  const { host, server, era, rounds, principal } = of;
  const progress = progressRoute(ctx);
  const direct = async (result: Promise<T>) => {
    const value = await result;
    await progress.flushed();
    return value;
  };
  if (era === 'legacy') return direct(asCaller(host, target, requestingClient(server, ctx, era), () => run(ctx.mcpReq.signal, progress)));
  const declared = server.getClientCapabilities();
  const asks = declared?.sampling !== undefined || declared?.elicitation !== undefined || declared?.roots !== undefined;
  // A retry carries a requestState even when it declares less than the first round did.
  if (target === undefined || rounds === undefined || (!asks && ctx.mcpReq.requestState() === undefined)) return direct(run(ctx.mcpReq.signal, progress));
  const caller = { owner: principal?.id ?? ADMIN_PRINCIPAL, accepts: (request: InputRequest) => declares(declared, request) };
  return rounds.run(ctx, caller, progress, (client, signal) => host.duringCallOf(target, client, () => run(signal, progress)));
}
