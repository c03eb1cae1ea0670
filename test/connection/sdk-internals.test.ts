// The private SDK fields mcp-fleet still reaches into, checked on the real
// SDK object: a rename or retype in an SDK upgrade fails here, by name,
// instead of silently losing what the field was needed for.
import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { fixtureCommand } from '../fixtures/index.js';
import { SDK_VERSION, SdkInternalsError, bindResponseHandlers, forgetSessionId } from '../../src/connection/sdk-internals.js';

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

describe('bindResponseHandlers (Protocol._responseHandlers)', () => {
  it("a 2026-era input_required round is answered in the context of the call it belongs to", async () => {
    const context = new AsyncLocalStorage<string>();
    const client = new Client({ name: 'bound', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities: { sampling: {} } });
    // The round is fulfilled where the response is read (the child's stdout), unless bound.
    client.setRequestHandler('sampling/createMessage', () => ({ role: 'assistant', content: { type: 'text', text: context.getStore() ?? 'no call' }, model: 'm' }));
    bindResponseHandlers(client);
    const [command, ...args] = fixtureCommand('modern');
    await client.connect(new StdioClientTransport({ command: command!, args, stderr: 'ignore' }));
    try {
      const calls = ['alice', 'bob'].map((who) => context.run(who, () => client.callTool({ name: 'sample', arguments: { prompt: 'who?' } })));
      const texts = (await Promise.all(calls)).map((result) => (result.content as Array<{ text: string }>)[0]!.text);
      expect(texts).toEqual(['alice', 'bob']);
    } finally {
      await client.close();
    }
  });

  it('names the field when it is missing', () => {
    expectNamedError(() => bindResponseHandlers({}), 'Protocol._responseHandlers');
  });
});
