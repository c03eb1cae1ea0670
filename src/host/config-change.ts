/**
 * The event that applies a new config to a running server actor, for
 * management and hand edits alike: nothing when it is the same, `retool` when
 * only how the tools are mounted changed (no reconnect), `enable`/`disable`
 * when only `enabled` flipped, else `configure` (through `pending` again).
 */
import { jsonEqual } from '../catalog/json-equal.js';
import type { ServerMachineEvent } from '../machines/server.events.js';
import type { ServerConfig } from '../config/index.js';

/** Fields that only shape the registration of the tools (or who sees them), never the connection. */
const MOUNT_FIELDS = ['tools', 'max_result_bytes', 'access'] as const;

export function configChangeEvent(running: ServerConfig, next: ServerConfig): ServerMachineEvent | null {
  if (jsonEqual(running, next)) return null;
  if (jsonEqual(withFieldsOf(running, next, MOUNT_FIELDS), next)) return { type: 'server.retool', config: next };
  if (jsonEqual({ ...running, enabled: next.enabled }, next)) {
    return next.enabled ? { type: 'server.enable', config: next } : { type: 'server.disable', config: next };
  }
  return { type: 'server.configure', config: next };
}

function withFieldsOf(base: ServerConfig, from: ServerConfig, fields: readonly (keyof ServerConfig)[]): ServerConfig {
  const copy: Record<string, unknown> = { ...base };
  // A field `from` leaves out (an optional one, as `access`) is left out of the copy too, not set to undefined.
  for (const field of fields) {
    if (field in from) copy[field] = from[field];
    else delete copy[field];
  }
  return copy as ServerConfig;
}
