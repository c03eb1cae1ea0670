// The one private SDK field mcp-fleet still reaches into, checked on the real
// SDK object: a rename or retype in an SDK upgrade fails here, by name,
// instead of silently losing what the field was needed for.
import { describe, expect, it } from 'vitest';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { SDK_VERSION, SdkInternalsError, forgetSessionId } from '../../src/connection/sdk-internals.js';

function expectNamedError(run: () => unknown, field: string): void {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(SdkInternalsError);
  expect((thrown as SdkInternalsError).field).toBe(field);
  expect((thrown as Error).message).toContain(field);
  expect((thrown as Error).message).toContain(SDK_VERSION);
}

describe('forgetSessionId (StreamableHTTPClientTransport._sessionId)', () => {
  it('clears the session id the transport would send', () => {
    const transport = new StreamableHTTPClientTransport(new URL('http://127.0.0.1:1/mcp'), { sessionId: 'dead' });
    expect(transport.sessionId).toBe('dead');
    forgetSessionId(transport);
    expect(transport.sessionId).toBeUndefined();
  });

  it('names the field when it is missing or not a string', () => {
    const field = 'StreamableHTTPClientTransport._sessionId';
    expectNamedError(() => forgetSessionId({} as StreamableHTTPClientTransport), field);
    const retyped = { _sessionId: 42 } as unknown as StreamableHTTPClientTransport;
    expectNamedError(() => forgetSessionId(retyped), field);
  });
});
