/**
 * `mcp.client.session.duration`: how long a server stayed connected, from
 * entering `ready` to leaving it, recorded when it leaves (with `error.type`
 * when it left for `error` or `needs_reauth`).
 */
import type { Attributes } from '@opentelemetry/api';
import type { ServerConfig } from '../config/index.js';
import { ATTR } from './attributes.js';
import { instruments } from './instruments.js';

/** Notes a transition into `to`; returns when the server's current ready session began (null outside `ready`). */
export function noteSession(
  server: string,
  config: ServerConfig,
  readySince: number | null,
  to: string,
  errorKind: string | null,
): number | null {
  if (to === 'ready') return readySince ?? performance.now();
  if (readySince !== null) recordSession(server, config, readySince, errorKind);
  return null;
}

/** Records a ready session that began at `readySince` and ended now. */
function recordSession(server: string, config: ServerConfig, readySince: number, errorKind: string | null): void {
  const metered = instruments();
  if (metered !== null) {
    const attributes: Attributes = {
      [ATTR.server]: server,
      [ATTR.networkTransport]: config.type === 'local' ? 'pipe' : 'tcp',
    };
    if (errorKind !== null) attributes[ATTR.errorType] = errorKind;
    metered.sessionDuration.record((performance.now() - readySince) / 1000, attributes);
  }
}
