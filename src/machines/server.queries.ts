import type { ActorRefFrom, SnapshotFrom } from 'xstate';
import type { ServerState } from '../journal/index.js';
import type { serverMachine } from './server.machine.js';

type ServerRef = ActorRefFrom<typeof serverMachine>;

/**
 * The state views show for a snapshot: its top-level state (`pending.queued` is
 * `pending`). `closing` shows the state it leaves for (its substate's meta):
 * tools are already gone and the process is on its way out, so a restart reads
 * `ready → pending`.
 */
export function topState(snapshot: SnapshotFrom<typeof serverMachine>): ServerState {
  if (snapshot.status !== 'active') return 'stopped';
  const value = snapshot.value;
  const top = typeof value === 'string' ? value : Object.keys(value)[0]!;
  if (top === 'closing') {
    const shown = Object.values(snapshot.getMeta()).find((meta) => meta?.shows !== undefined)?.shows;
    if (shown === undefined) throw new Error(`closing substate ${JSON.stringify(value)} does not say what it shows`);
    return shown;
  }
  // `boot` is transient: never observed outside a macrostep.
  return top as ServerState;
}

/**
 * Whether a server is still on its way to an outcome (tagged `settling`):
 * closing its previous connection (unless for a stop), in `pending` (not
 * waiting for its turn or, `on_demand`, for a call), or authenticating without
 * waiting for a human. A consent does not hold the startup queue or a
 * management request.
 */
export function isSettling(snapshot: SnapshotFrom<typeof serverMachine>): boolean {
  return snapshot.status === 'active' && snapshot.hasTag('settling');
}

/** How long past its `timeout_seconds` a start may take to end: stopping its child, an era probe's respawn. */
export const SETTLE_MARGIN_MS = 5_000;

/** Settles once a server is no longer settling (see {@link isSettling}) or stopped, or after `timeoutMs`. */
export function settled(ref: ServerRef, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    let settled = false;
    // A stopped actor completes its subscription at once, before `subscribe` returns.
    let subscription: { unsubscribe(): void } | undefined;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      subscription?.unsubscribe();
      resolve();
    };
    const timer = setTimeout(settle, timeoutMs);
    subscription = ref.subscribe({
      next: (snapshot) => {
        if (!isSettling(snapshot)) settle();
      },
      complete: settle,
      error: settle,
    });
    if (settled) subscription.unsubscribe();
    if (!isSettling(ref.getSnapshot())) settle();
  });
}
