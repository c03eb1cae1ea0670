// The one line an OAuth failure of the SDK's flow is told as.
import { OAuthClientFlowError, OAuthError, OAuthErrorCode } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { describeAuthFailure } from '../../src/auth/oauth-errors.js';

describe('describeAuthFailure', () => {
  it('a flow failure whose server sent no body ends with its status, not a dangling colon', () => {
    expect(describeAuthFailure(new OAuthClientFlowError('Dynamic Client Registration rejected (HTTP 401):'), 'https://mcp.example')).toEqual([
      'auth',
      'OAuth with https://mcp.example failed: Dynamic Client Registration rejected (HTTP 401)',
    ]);
    expect(describeAuthFailure(new OAuthClientFlowError('rejected (HTTP 400):\n{"error":\n "invalid_redirect_uri"}'), 'https://mcp.example')?.[1]).toBe(
      'OAuth with https://mcp.example failed: rejected (HTTP 400): {"error": "invalid_redirect_uri"}',
    );
  });

  it('a refusal by the authorization server names its code; one that is away is unreachable', () => {
    expect(describeAuthFailure(new OAuthError(OAuthErrorCode.InvalidClient, 'client authentication failed'), 'https://mcp.example')).toEqual([
      'auth',
      'OAuth with https://mcp.example failed (invalid_client)',
    ]);
    expect(describeAuthFailure(new OAuthError(OAuthErrorCode.TemporarilyUnavailable, 'away'), 'https://mcp.example')?.[0]).toBe('unreachable');
    expect(describeAuthFailure(new Error('other'), 'https://mcp.example')).toBeNull();
  });
});
