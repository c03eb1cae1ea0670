// The README's library example: a host on a config with server-everything,
// list its tools, call `echo`, shut down. Run it: `node --import tsx examples/library.ts`
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMcpHost } from 'mcp-fleet';

const stateDir = mkdtempSync(join(tmpdir(), 'mcp-fleet-example-'));
writeFileSync(
  join(stateDir, 'mcp_servers.json'),
  JSON.stringify({
    servers: {
      everything: {
        type: 'local',
        command: ['node', 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'],
      },
    },
  }),
);

const host = createMcpHost({ stateDir });
await host.start(); // returns at once; servers connect in the background
await host.settled(); // wait until startup has gone through every server

console.log(host.status().map((server) => `${server.name}: ${server.state}, ${server.tool_count} tools`));
console.log(host.tools().map((tool) => tool.name));

const result = await host.callTool('everything__echo', { message: 'hello' });
console.log(result.content); // [ { type: 'text', text: 'Echo: hello' } ]

// A big catalog: give the model search_tools (and tools.always_load) instead of every definition;
// runAgentTurn(model, messages, host, { loading: 'deferred' }) adds what it finds to its next request.
console.log(host.tools({ loading: 'deferred' }).map((tool) => tool.name)); // [ 'search_tools' ]
const [best] = host.searchTools('add two numbers', { limit: 3 });
console.log(`best match: ${best?.name} (${best?.matched.join(', ')})`); // best match: everything__get-sum (…)

await host.shutdown(); // resolves when every child process is gone
