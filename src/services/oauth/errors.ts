import { OAuthError, UnauthorizedError } from '@modelcontextprotocol/client';
import { FleetError } from '../support/errors.js';

/**
 * The server needs a human to consent: no usable token, or the authorization
 * server rejected the refresh token. Never raised by a consent under way.
 */
export class ConsentRequiredError extends FleetError {
  constructor(
    readonly server: string,
    reason: string,
  ) {
    super(
      'auth',
      `server "${server}" needs OAuth consent (${reason}): run \`mcp-fleet auth ${server}\` ` +
        `or POST /api/mcp/servers/${server}/auth`,
    );
  }
}

/**
 * Kind and one-line text of an OAuth failure (ours, or the SDK's), else null.
 * The SDK's OAuth errors carry the server's error code, never a token.
 */
export function describeAuthFailure(err: unknown, origin: string): [FleetError['kind'], string] | null {
  if (err instanceof FleetError) return [err.kind, err.message];
  if (err instanceof OAuthError) return ['auth', `OAuth with ${origin} failed (${err.code})`];
  if (err instanceof UnauthorizedError) return ['auth', `${origin} refused the authorization`];
  return null;
}
