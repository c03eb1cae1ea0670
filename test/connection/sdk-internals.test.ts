// Every private SDK field mcp-fleet reaches into, checked on the real SDK
// objects: a rename or retype in an SDK upgrade fails here, by name, instead
// of silently losing what the field was needed for. Each accessor also
// refuses an object without its field, with the error that names it.
import { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ListRootsRequestSchema,
  type JSONRPCMessage,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { LineBuffer } from '../../src/services/connection/line-buffer.js';
import {
  SDK_VERSION,
  SdkInternalsError,
  cacheToolMetadata,
  childProcessOf,
  forgetSessionId,
  replaceReadBuffer,
  requestAbortControllers,
} from '../../src/services/connection/sdk-internals.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A real Client and Server, linked in memory; the server answers tools/call with `structuredContent`. */
async function linkedPair(structuredContent: Record<string, unknown>): Promise<{ client: Client; server: Server }> {
  const server = new Server({ name: 's', version: '1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(CallToolRequestSchema, () => ({ content: [], structuredContent }));
  const client = new Client({ name: 'c', version: '1' }, { capabilities: { roots: {} } });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  await client.connect(clientSide);
  cleanups.push(async () => {
    await client.close();
    await server.close();
  });
  return { client, server };
}

/** A real stdio transport whose child writes one JSON-RPC line and waits for stdin to close. */
function stdioTransport(): StdioClientTransport {
  const notification = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hi' } };
  const line = JSON.stringify(notification);
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['-e', `process.stdout.write(${JSON.stringify(line + '\n')}); process.stdin.resume();`],
  });
  cleanups.push(() => transport.close());
  return transport;
}

/** An object of none of the SDK's classes: it has none of their private fields. */
function without<T>(): T {
  return {} as T;
}

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

describe('requestAbortControllers (Protocol._requestHandlerAbortControllers)', () => {
  it("holds the controller of a server request while the client's handler serves it", async () => {
    const { client, server } = await linkedPair({});
    const served = requestAbortControllers(client);
    let seen: boolean | undefined;
    client.setRequestHandler(ListRootsRequestSchema, (_request, extra) => {
      seen = served.get(extra.requestId) !== undefined;
      return { roots: [] };
    });
    await server.listRoots();
    expect(seen).toBe(true);
  });

  it('names the field when it is missing', () => {
    expectNamedError(() => requestAbortControllers(without<Client>()), 'Protocol._requestHandlerAbortControllers');
  });
});

describe('cacheToolMetadata (Client.cacheToolMetadata)', () => {
  const strict: Tool = {
    name: 'count',
    inputSchema: { type: 'object' },
    outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
  };

  it("sets the client's output-schema validators to exactly the tools given", async () => {
    const { client } = await linkedPair({ n: 'not a number' });
    await expect(client.callTool({ name: 'count' })).resolves.toBeDefined();
    cacheToolMetadata(client, [strict]);
    await expect(client.callTool({ name: 'count' })).rejects.toThrow(/output schema/);
    cacheToolMetadata(client, []);
    await expect(client.callTool({ name: 'count' })).resolves.toBeDefined();
  });

  it('names the method when it is missing', () => {
    expectNamedError(() => cacheToolMetadata(without<Client>(), []), 'Client.cacheToolMetadata');
  });
});

describe('forgetSessionId (StreamableHTTPClientTransport._sessionId)', () => {
  it('clears the session id the transport would send', () => {
    const transport = new StreamableHTTPClientTransport(new URL('http://127.0.0.1:1/mcp'), { sessionId: 'dead' });
    expect(transport.sessionId).toBe('dead');
    forgetSessionId(transport);
    expect(transport.sessionId).toBeUndefined();
  });

  it('names the field when it is missing or not a string', () => {
    const field = 'StreamableHTTPClientTransport._sessionId';
    expectNamedError(() => forgetSessionId(without<StreamableHTTPClientTransport>()), field);
    const retyped = { _sessionId: 42 } as unknown as StreamableHTTPClientTransport;
    expectNamedError(() => forgetSessionId(retyped), field);
  });
});

describe('replaceReadBuffer (StdioClientTransport._readBuffer)', () => {
  it("makes the given buffer read the child's stdout", async () => {
    const transport = stdioTransport();
    const appended: Buffer[] = [];
    const buffer = new LineBuffer();
    replaceReadBuffer(transport, {
      append: (chunk) => {
        appended.push(chunk);
        buffer.append(chunk);
      },
      readMessage: () => buffer.readMessage(),
      clear: () => buffer.clear(),
    });
    const message = new Promise<JSONRPCMessage>((resolve) => (transport.onmessage = resolve));
    await transport.start();
    expect(await message).toMatchObject({ method: 'notifications/message' });
    expect(appended.length).toBeGreaterThan(0);
  });

  it('names the field when it is missing', () => {
    expectNamedError(
      () => replaceReadBuffer(without<StdioClientTransport>(), new LineBuffer()),
      'StdioClientTransport._readBuffer',
    );
  });
});

describe('childProcessOf (StdioClientTransport._process)', () => {
  it('is the spawned process once start() resolved', async () => {
    const transport = stdioTransport();
    await transport.start();
    const child = childProcessOf(transport);
    expect(child).toBeInstanceOf(ChildProcess);
    expect(child.pid).toBe(transport.pid);
    const exited = once(child, 'exit');
    await transport.close();
    await exited;
  });

  it('names the field before start() and when it is missing', () => {
    expectNamedError(() => childProcessOf(stdioTransport()), 'StdioClientTransport._process');
    expectNamedError(() => childProcessOf(without<StdioClientTransport>()), 'StdioClientTransport._process');
  });
});
