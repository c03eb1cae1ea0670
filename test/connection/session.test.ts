// Streamable HTTP sessions: a server that forgot the session (HTTP 404 to a
// request carrying its id) is re-initialized once, transparently, and the
// request sent again; closing the connection ends the session with DELETE.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ServerConfig } from '../../src/config/schema.js';
import { connect, type ServerConnection } from '../../src/connection/connection.js';

interface SessionServer {
  url: string;
  /** Session ids that got an `initialize`, in order. */
  initialized: string[];
  /** Session ids of the DELETE requests received. */
  deleted: string[];
  /** Forgets every session, as a restarted server would: their ids now get 404. */
  forgetSessions(): Promise<void>;
  close(): Promise<void>;
}

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

async function startSessionServer(): Promise<SessionServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const initialized: string[] = [];
  const deleted: string[] = [];
  const http: Server = createServer(async (req, res) => {
    const id = req.headers['mcp-session-id'];
    if (req.method === 'DELETE' && typeof id === 'string') deleted.push(id);
    let transport = typeof id === 'string' ? sessions.get(id) : undefined;
    if (transport === undefined && typeof id === 'string') {
      // The spec's answer to a session id the server no longer knows.
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"session not found"}');
      return;
    }
    if (transport === undefined) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, created);
          initialized.push(sessionId);
        },
      });
      const server = new McpServer({ name: 'session-fixture', version: '1.0.0' });
      server.registerTool('echo', { inputSchema: { text: z.string() } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
      await server.connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  const forgetSessions = async () => {
    const known = [...sessions.values()];
    sessions.clear();
    await Promise.all(known.map((transport) => transport.close()));
  };
  const served: SessionServer = {
    url: `http://127.0.0.1:${port}/mcp`,
    initialized,
    deleted,
    forgetSessions,
    async close() {
      await forgetSessions();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
  open.push(served);
  return served;
}

async function connectTo(url: string): Promise<ServerConnection> {
  const config = ServerConfig.parse({ type: 'remote', url, transport: 'streamable_http', timeout_seconds: 10 });
  const connection = await connect('sessions', config);
  open.push(connection);
  return connection;
}

const textOf = (result: { content: unknown[] }) => result.content[0];

describe('Streamable HTTP sessions', () => {
  it('a 404 for a forgotten session re-initializes once and retries the call, transparently', async () => {
    const server = await startSessionServer();
    const connection = await connectTo(server.url);
    expect(textOf(await connection.callTool('echo', { text: 'one' }))).toEqual({ type: 'text', text: 'one' });
    expect(server.initialized).toHaveLength(1);

    await server.forgetSessions();
    expect(textOf(await connection.callTool('echo', { text: 'two' }))).toEqual({ type: 'text', text: 'two' });
    expect(server.initialized).toHaveLength(2);

    // Many calls hitting the dead session together share one re-initialization.
    await server.forgetSessions();
    const texts = Array.from({ length: 8 }, (_, i) => `call ${i}`);
    const results = await Promise.all(texts.map((text) => connection.callTool('echo', { text })));
    expect(results.map(textOf)).toEqual(texts.map((text) => ({ type: 'text', text })));
    expect(server.initialized).toHaveLength(3);
  });

  it('closing the connection terminates the session with DELETE', async () => {
    const server = await startSessionServer();
    const connection = await connectTo(server.url);
    await connection.callTool('echo', { text: 'x' });
    await connection.close();
    expect(server.deleted).toEqual([server.initialized[0]]);
  });
});
