/**
 * Turns what server actors do into journal events: a config an actor takes
 * (`server.configured`), every change of the state views show
 * (`server.transitioned`), its tool (un)registrations through the tool
 * mount, and the end of a removed server (`server.removed`). The host and the
 * model-based tests observe actors through this one bridge.
 */
import type { Subscription } from 'xstate';
import type { ServerActorRef } from '../machines/registry.machine.js';
import type { ServerEmitted } from '../machines/server.events.js';
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
  const bridge = new ServerBridge(ref, options);
  return () => bridge.stop();
}

/** One actor's bridge: a class, since a host keeps one per server for the actor's whole life. */
class ServerBridge {
  private readonly name: string;
  private configured: ServerConfig | null = null;
  private last: ServerState | null = null;
  /** The error the last transition journaled. */
  private lastError: string | null = null;
  private subscriptions: Subscription[] = [];
  // Telemetry: the server's lifecycle span, and when it last became ready (for the session duration).
  private readonly lifecycle: LifecycleOwner = { span: undefined };
  private readySince: number | null = null;
  private stopped = false;
  private readonly observe = (): void => {
    const { ref } = this;
    const snapshot = ref.getSnapshot();
    // A config the actor took (the registry's re-read, a management change, a hand edit): the view shows it.
    if (snapshot.context.config !== this.configured) {
      this.configured = snapshot.context.config;
      this.options.append({ type: 'server.configured', server: this.name, actor: ref.id, config: toResponse(this.configured) });
    }
    const state = topState(snapshot);
    // A failed server told a new reason without leaving its state (a consent's answer refused at the callback): the view shows it.
    const newReason = (state === 'error' || state === 'needs_reauth') && snapshot.context.error !== this.lastError;
    if (state !== this.last || newReason) this.journalTransition(state);
    // Done: the process is gone (a `closing` actor already showed `stopped`).
    if (snapshot.status !== 'active') this.stop();
  };

  constructor(
    private readonly ref: ServerActorRef,
    private readonly options: JournalBridgeOptions,
  ) {
    this.name = ref.getSnapshot().context.name;
    // One listener for every emitted event (each listener costs the actor a set and a subscription).
    this.subscriptions = [ref.on('*', this.onEmitted), ref.subscribe({ next: this.observe, complete: this.observe })];
    this.observe();
  }

  private readonly onEmitted = (emitted: ServerEmitted): void => {
    const { ref, options } = this;
    if (emitted.type === 'tools.register') options.mount.register(ref, emitted.live, emitted.filter);
    else if (emitted.type === 'tools.unregister') {
      // A successor actor of the same name may already have mounted its own tools.
      const successor = options.current(this.name);
      options.mount.unregister(ref, successor === undefined || successor === ref || !successor.getSnapshot().hasTag('callable'));
    }
  };

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    this.subscriptions = [];
    forgetServer(this.ref);
    this.options.lifecycles?.end(this.lifecycle, this.name);
    // A replaced actor leaves the name to its successor, and shutdown leaves every
    // server visible as `stopped`; only a real removal ends the view.
    if (!this.options.current(this.name)) this.options.append({ type: 'server.removed', server: this.name });
  }

  private journalTransition(state: ServerState): void {
    const { ref, name, options, last } = this;
    const { error, errorKind, config } = ref.getSnapshot().context;
    const failed = state === 'error' || state === 'needs_reauth';
    options.append({
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
    options.lifecycles?.noteTransition(this.lifecycle, name, last, state, failed ? errorKind : null);
    this.readySince = noteSession(name, config, this.readySince, state, failed ? errorKind : null);
    this.last = state;
    this.lastError = error;
  }
}

/**
 * What the ready server offers beside its tools: the projection tells a kind
 * still to be listed (`null`) from one the server has none of (`[]`).
 */
function offeredKinds(ref: ServerActorRef): OfferedKind[] {
  const capabilities = ref.getSnapshot().context.live?.connection.client.getServerCapabilities() ?? {};
  return (['resources', 'prompts'] as const).filter((kind) => Boolean(capabilities[kind]));
}
