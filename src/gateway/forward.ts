/**
 * The gateway client whose request is under way, as the one a backend's
 * requests to its client (sampling, elicitation, roots) go to. Only a
 * 2025-11-25 session can be asked: its requests ride the call's response
 * stream. A 2026-07-28 request is stateless, and the host answers its
 * backend's requests itself.
 */
import type { InputRequest, InputResponse } from '@modelcontextprotocol/client';
import type { Server, ServerContext } from '@modelcontextprotocol/server';
import type { McpHost } from '../host.js';
import type { RequestingClient } from '../connection/index.js';

/** A forwarded request waits this long at most for the client's answer (a person may be filling in a form). */
export const FORWARD_TIMEOUT_MS = 5 * 60_000;

/** The client of `server`'s session that sent the request `ctx` is handling, or undefined on a 2026-era request. */
export function requestingClient(server: Server, ctx: ServerContext, era: 'legacy' | 'modern'): RequestingClient | undefined {
  if (era !== 'legacy') return undefined;
  return {
    accepts(request) {
      const declared = server.getClientCapabilities();
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
    },
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
