import {
  AuthorizationServerMismatchError,
  IssuerMismatchError,
  OAuthClientFlowError,
  OAuthError,
  OAuthErrorCode,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { FleetError } from '../errors.js';

/**
 * The server needs a human to consent: no usable token, or the authorization
 * server rejected the refresh token. Never raised by a consent under way.
 */
export class ConsentRequiredError extends FleetError {
  constructor(
    readonly server: string,
    readonly reason: string,
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
  // Our own answer for a refresh that reached no authorization server (sdk-refresh.ts), or the server's for itself.
  if (err instanceof OAuthError && err.code === OAuthErrorCode.TemporarilyUnavailable) return ['unreachable', err.message];
  if (err instanceof OAuthError) return ['auth', `OAuth with ${origin} failed (${err.code})`];
  if (err instanceof AuthorizationServerMismatchError) {
    return ['auth', `${origin} names the authorization server ${err.currentIssuer}, not ${err.recordedIssuer}: credentials not sent`];
  }
  if (err instanceof IssuerMismatchError) {
    const received = err.received === undefined ? 'none' : oneLine(err.received);
    if (err.kind === 'metadata') {
      return ['auth', `the authorization server metadata at ${err.expected ?? origin} names another issuer (${received}): not used (RFC 8414)`];
    }
    // The received `iss` is the answer's own, whoever sent it: shown shortened, on one line.
    return ['auth', `the authorization server's issuer does not match (RFC 9207: expected ${err.expected ?? 'none'}, got ${received})`];
  }
  // Every other failure of the SDK's OAuth flow (registration refused, scope step-up exhausted, …).
  // The SDK ends some with the server's body after a colon, which may be empty ("… (HTTP 401):").
  if (err instanceof OAuthClientFlowError) return ['auth', `OAuth with ${origin} failed: ${oneLine(err.message).replace(/[\s:]+$/, '')}`];
  if (err instanceof UnauthorizedError) return ['auth', `${origin} refused the authorization`];
  return null;
}

/** A value from the other side, as one short line. */
function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > 120 ? `${flat.slice(0, 120)}…` : flat;
}
