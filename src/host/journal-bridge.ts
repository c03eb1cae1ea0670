/**
 * Turns what server actors do into journal events: a config an actor takes
 * (`server.configured`), every change of the state views show
 * (`server.transitioned`), its tool (un)registrations through the tool
 * mount, and the end of a removed server (`server.removed`). The host and the
 * model-based tests observe actors through this one bridge.
 */
import type { Subscription } from 'xstate';
import type { ServerActorRef } from '../machines/registry.machine.js';
import { topState } from '../machines/server.queries.js';
import { toResponse } from '../config/masking.js';
import type { ServerConfig } from '../config/index.js';
import type { JournalEventInput, OfferedKind, ServerState } from '../journal/index.js';
import type { ToolMount } from './tool-mount.js';
import { forgetServer, noteServerState } from '../telemetry/instruments.js';
import type { LifecycleOwner, Lifecycles } from '../telemetry/index.js';
import { noteSession } from '../telemetry/sessions.js';

export interface JournalBridgeOptions {
  append(event: JournalEventInput): void;
  mount: ToolMount;
  /** The actor now published under a name (none once the server is removed). */
  current(name: string): ServerActorRef | undefined;
  /** Told of every entry into `error` or `needs_reauth`. */
  onFailure?(name: string, state: ServerState, kind: string | null, error: string | null): void;
  /** The host's lifecycle spans (absent: the server's life is not traced). */
  lifecycles?: Lifecycles;
}

/** Observes one server actor until it stops; returns the function that stops observing. */
export function bridgeServer(ref: ServerActorRef, options: JournalBridgeOptions): () => void {
  const { append, mount } = options;
  const { name } = ref.getSnapshot().context;
  let configured: ServerConfig | null = null;
  let last: ServerState | null = null;
  let subscriptions: Subscription[] = [];
  // Telemetry: the server's lifecycle span, and when it last became ready (for the session duration).
  const lifecycle: LifecycleOwner = { span: undefined };
  let readySince: number | null = null;

  function observe(): void {
    const snapshot = ref.getSnapshot();
    // A config the actor took (the registry's re-read, a management change, a hand edit): the view shows it.
    if (snapshot.context.config !== configured) {
      configured = snapshot.context.config;
      append({ type: 'server.configured', server: name, actor: ref.id, config: toResponse(configured) });
    }
    const state = topState(snapshot);
    if (state !== last) journalTransition(state);
    // Done: the process is gone (a `closing` actor already showed `stopped`).
    if (snapshot.status !== 'active') stop();
  }

  function journalTransition(state: ServerState): void {
    const { error, errorKind } = ref.getSnapshot().context;
    const failed = state === 'error' || state === 'needs_reauth';
    append({
      type: 'server.transitioned',
      server: name,
      actor: ref.id,
      from: last,
      to: state,
      error: failed ? error : null,
      error_kind: failed ? errorKind : null,
      ...(state === 'ready' ? { offers: offeredKinds(ref) } : {}),
    });
    if (failed) options.onFailure?.(name, state, errorKind, error);
    noteServerState(ref, state);
    options.lifecycles?.noteTransition(lifecycle, name, last, state, failed ? errorKind : null);
    readySince = noteSession(name, currentConfig(), readySince, state, failed ? errorKind : null);
    last = state;
  }

  function currentConfig(): ServerConfig {
    return ref.getSnapshot().context.config;
  }

  let stopped = false;
  function stop(): void {
    if (stopped) return;
    stopped = true;
    for (const subscription of subscriptions) subscription.unsubscribe();
    subscriptions = [];
    forgetServer(ref);
    options.lifecycles?.end(lifecycle, name);
    // A replaced actor leaves the name to its successor, and shutdown leaves every
    // server visible as `stopped`; only a real removal ends the view.
    if (!options.current(name)) append({ type: 'server.removed', server: name });
  }

  subscriptions = [
    ref.on('tools.register', ({ live, filter }) => mount.register(ref, live, filter)),
    ref.on('tools.unregister', () => {
      // A successor actor of the same name may already have mounted its own tools.
      const successor = options.current(name);
      mount.unregister(ref, successor === undefined || successor === ref || !successor.getSnapshot().hasTag('callable'));
    }),
    ref.subscribe({ next: observe, complete: observe }),
  ];
  observe();
  return stop;
}

/**
 * What the ready server offers beside its tools: the projection tells a kind
 * still to be listed (`null`) from one the server has none of (`[]`).
 */
function offeredKinds(ref: ServerActorRef): OfferedKind[] {
  const capabilities = ref.getSnapshot().context.live?.connection.client.getServerCapabilities() ?? {};
  return (['resources', 'prompts'] as const).filter((kind) => Boolean(capabilities[kind]));
}
