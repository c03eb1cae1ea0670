import type { ActorRefFrom, SnapshotFrom } from 'xstate';
import type { ServerState } from '../services/journal/events.js';
import type { serverMachine } from './server.machine.js';

type ServerRef = ActorRefFrom<typeof serverMachine>;

/** The SPEC §4 state of a snapshot: its top-level state (`pending.queued` is `pending`). */
export function topState(snapshot: SnapshotFrom<typeof serverMachine>): ServerState {
  if (snapshot.status !== 'active') return 'stopped';
  const value = snapshot.value;
  const top = typeof value === 'string' ? value : Object.keys(value)[0]!;
  // `boot` is a transient state: never observed outside a macrostep.
  return top as ServerState;
}

/** Settles when a server leaves `pending` (or stops), or after `timeoutMs`. */
export function leftPending(ref: ServerRef, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      subscription?.unsubscribe();
      resolve();
    };
    const timer = setTimeout(settle, timeoutMs);
    const subscription: { unsubscribe(): void } | undefined = ref.subscribe({
      next: (snapshot) => {
        if (!snapshot.matches('pending')) settle();
      },
      complete: settle,
      error: settle,
    });
    if (!ref.getSnapshot().matches('pending')) settle();
  });
}
