import { toResponse, type ServerConfigResponse } from '../../src/config/masking.js';
import { ServerConfig, type ServerConfigInput } from '../../src/config/schema.js';

/** A local server's config as journal events and views carry it (masked, defaults filled), with `fields` changed. */
export function maskedConfig(fields: Partial<Omit<Extract<ServerConfigInput, { type: 'local' }>, 'type'>> = {}): ServerConfigResponse {
  return toResponse(ServerConfig.parse({ type: 'local', command: ['node'], ...fields }));
}
