/**
 * The retry policy of tool calls: when a failed call may run once more, and
 * the wait for the connection it would run on.
 */
import type { Tool } from '@modelcontextprotocol/client';
import { waitFor, type ActorRefFrom, type SnapshotFrom } from 'xstate';
import type { LiveConnection } from '../connection/index.js';
import { FleetError } from '../errors.js';
import type { serverMachine } from './server.machine.js';

type ServerRef = ActorRefFrom<typeof serverMachine>;

/**
 * Whether a failed call may run once more after the server reconnects: only a
 * lost connection, only for a tool the server says is read-only or idempotent,
 * and never a call its caller cancelled. No other call is ever retried.
 */
export function retriesAfterReconnect(tool: Tool, failure: unknown, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted || !(failure instanceof FleetError) || failure.kind !== 'transport_closed') return false;
  return tool.annotations?.readOnlyHint === true || tool.annotations?.idempotentHint === true;
}

/**
 * The server's next connection after `previous` was lost, once it is ready
 * again; `null` if it stops, gives up, or takes longer than `timeoutMs`.
 */
export async function reconnected(
  ref: ServerRef,
  previous: LiveConnection,
  timeoutMs: number,
): Promise<LiveConnection | null> {
  const settled = (snapshot: SnapshotFrom<typeof serverMachine>) =>
    snapshot.status !== 'active' ||
    snapshot.matches({ error: 'halted' }) ||
    (snapshot.hasTag('callable') && snapshot.context.live !== previous);
  try {
    const snapshot = await waitFor(ref, settled, { timeout: timeoutMs });
    return snapshot.status === 'active' && snapshot.hasTag('callable') ? snapshot.context.live : null;
  } catch {
    return null;
  }
}
