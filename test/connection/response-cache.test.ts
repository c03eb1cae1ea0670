// mcp-fleet keeps each listing once, in its own catalog: the tool listing a
// connect makes and the prompt and resource listings of the catalog sync go
// past the SDK's response cache both ways. They never read it (a listing
// always reaches the server) and never write it (the SDK would otherwise keep
// every listing a second time, as a JSON string, per server). Seen from the
// SDK's own `list*()` with its default cache mode: against a server whose
// lists say they stay fresh for a minute, each still reaches the server, so
// the SDK holds none of what mcp-fleet listed.
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { startCatalogSync } from '../../src/catalog/sync.js';
import type { ServerConnection } from '../../src/connection/connection.js';
import { connectTracked, fixtureConfig } from './helpers.js';
import { until } from '../support/wait.js';

/** A modern server whose tool, prompt and resource lists are fresh for a minute (a response cache may serve them again). */
async function connectFreshLists(): Promise<ServerConnection> {
  const config = fixtureConfig('modern', { protocol: '2026' });
  return connectTracked('fresh-lists', { ...config, command: [...config.command, '--list-ttl', '60000'] });
}

/** The methods of the requests sent on `transport` from now on. */
function requestsSent(transport: Transport): string[] {
  const sent: string[] = [];
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage, options) => {
    if ('method' in message && 'id' in message) sent.push(message.method);
    return send(message, options);
  };
  return sent;
}

describe("mcp-fleet's listings and the SDK's response cache", () => {
  it('the tool listing of a connect leaves nothing there: the SDK lists the tools from the server again', async () => {
    const connection = await connectFreshLists();
    expect(connection.connectTtlMs).toBe(60_000);
    const sent = requestsSent(connection.client.transport!);
    const again = await connection.client.listTools();
    expect(again.tools.map((tool) => tool.name)).toEqual(connection.allTools.map((tool) => tool.name));
    expect(sent).toEqual(['tools/list']);
  });

  it("the catalog sync's prompt and resource listings leave nothing there either", async () => {
    const connection = await connectFreshLists();
    const offered: string[] = [];
    const failures: string[] = [];
    const sync = startCatalogSync({
      connection,
      timeoutMs: 5_000,
      listener: {
        onTools: () => {},
        onOffer: (_offer, kind) => void offered.push(kind),
        onChange: () => {},
        onError: (kind, error) => void failures.push(`${kind}: ${error.message}`),
      },
    });
    try {
      await until(() => offered.includes('prompts') && offered.includes('resources'), 'the first prompt and resource listings');
      await sync.idle();
      expect(failures).toEqual([]);
      expect(sync.offer().prompts.map((prompt) => prompt.name)).toEqual(['greet']);
      const sent = requestsSent(connection.client.transport!);
      await connection.client.listPrompts();
      await connection.client.listResources();
      expect(sent).toEqual(['prompts/list', 'resources/list']);
    } finally {
      sync.stop();
    }
  });
});
