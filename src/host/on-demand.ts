/**
 * Servers started on demand (`start: "on_demand"`), seen from the host: a
 * call to one of a waiting server's tools starts it and waits for `ready`;
 * a search that loads its tools starts it without waiting. The machine
 * decides what a demand does in each state (server.machine.ts).
 */
import { waitFor } from 'xstate';
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { ProjectionContext } from '../journal/index.js';
import { own } from '../records.js';
import { isSettling, SETTLE_MARGIN_MS } from '../machines/server.queries.js';

type ServerSnapshot = ReturnType<ServerActorRef['getSnapshot']>;

export interface OnDemandOptions {
  current(name: string): ServerActorRef | undefined;
  projected(): ProjectionContext;
  /** The host is shutting down: nothing starts any more. */
  stopping(): boolean;
}

export interface OnDemand {
  /** Whether `tool` is one of the tools `server` registered, now or in its last run (the journal keeps them). */
  knows(server: string, tool: string): boolean;
  /**
   * Starts `name` if it is an `on_demand` server (a no-op for one already on
   * its way) and resolves true once it is ready, false when it is not such a
   * server or its start ended otherwise (its state then says why).
   */
  start(name: string, signal?: AbortSignal): Promise<boolean>;
  /** Tools of these servers were loaded through search: each starts now, so it is ready when called. */
  load(servers: Iterable<string>): void;
}

/**
 * Whether a demanded server's start has an outcome: ready, failed (its error
 * set), waiting for a human, stopped. Still on its way while settling or
 * waiting for its turn in the startup queue.
 */
function startEnded(snapshot: ServerSnapshot): boolean {
  return !isSettling(snapshot) && !snapshot.matches({ pending: 'queued' });
}

export function createOnDemand({ current, projected, stopping }: OnDemandOptions): OnDemand {
  const onDemand = (name: string): ServerActorRef | undefined => {
    const ref = current(name);
    return ref !== undefined && !stopping() && ref.getSnapshot().context.config.start === 'on_demand' ? ref : undefined;
  };

  return {
    knows: (server, tool) => own(projected().servers, server)?.known_tools?.some((entry) => entry.name === tool) ?? false,

    async start(name, signal) {
      const ref = onDemand(name);
      if (ref === undefined) return false;
      ref.send({ type: 'server.demand' });
      try {
        // Waits for the start's outcome, not a timer as long as its connect timeout, which fired first and
        // left the call with "not ready (state: pending)" instead of the reason the start failed. The connect
        // bounds the wait itself; the margin is only a backstop.
        const reached = await waitFor(ref, startEnded, {
          timeout: ref.getSnapshot().context.config.timeout_seconds * 1000 + SETTLE_MARGIN_MS,
          ...(signal === undefined ? {} : { signal }),
        });
        return reached.hasTag('callable');
      } catch {
        return false;
      }
    },

    load(servers) {
      for (const name of new Set(servers)) onDemand(name)?.send({ type: 'server.demand' });
    },
  };
}
