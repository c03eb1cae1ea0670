// Every contender behind one small interface, each used the way its docs show:
//   open(specs) → { call(server, tool, args), close() }
// `open` resolves once every server is connected and its tools are listed
// (mcp-fleet: every server `ready`), so timing `open` is timing startup.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
// The raw SDK is the very copy mcp-fleet runs on (the root install of the v2
// client), not the bench's own; in its default mode (2025 handshake, no era
// probe), which is what mcp-fleet does once it knows a server's era.
import { Client } from '../../node_modules/@modelcontextprotocol/client/dist/index.mjs';
import { StdioClientTransport } from '../../node_modules/@modelcontextprotocol/client/dist/stdio.mjs';

/** mcp-fleet's public API as it ships: the build in dist/ (`npm run bench` builds it first), as `bin/mcp-fleet.js` runs it. */
export const fleet = await import('../../dist/index.js');
const { stateDirFor } = await import('./env.js');

const silent = { info() {}, warn() {} };

// ── raw SDK ─────────────────────────────────────────────────────────────────

async function rawConnect(spec) {
  const client = new Client({ name: 'bench-raw', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: spec.command, args: spec.args, env: envOf(spec) }));
  // A client that did not list tools could not offer any: listing is part of being ready.
  await client.listTools();
  return client;
}

function envOf(spec) {
  // As the SDK builds it when `env` is omitted, plus the fixture's own variables.
  return spec.env && Object.keys(spec.env).length > 0 ? { ...defaultEnv(), ...spec.env } : undefined;
}
let cachedEnv;
function defaultEnv() {
  if (!cachedEnv) {
    cachedEnv = {};
    for (const key of ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER']) {
      if (process.env[key] !== undefined) cachedEnv[key] = process.env[key];
    }
  }
  return cachedEnv;
}

function rawHandle(specs, clients) {
  const byName = new Map(specs.map((spec, i) => [spec.name, clients[i]]));
  return {
    clients: byName,
    call: (server, tool, args) => byName.get(server).callTool({ name: tool, arguments: args }),
    close: () => Promise.all(clients.map((client) => client.close())),
  };
}

export const rawSequential = {
  label: 'raw SDK (sequential)',
  async open(specs) {
    const clients = [];
    for (const spec of specs) clients.push(await rawConnect(spec));
    return rawHandle(specs, clients);
  },
};

export const rawParallel = {
  label: 'raw SDK (Promise.all)',
  async open(specs) {
    return rawHandle(specs, await Promise.all(specs.map(rawConnect)));
  },
};

// ── mcp-fleet ───────────────────────────────────────────────────────────────

/**
 * Era verdicts carry over between runs of the same servers (a worker's second
 * start onwards), as `eras.json` does in a real state dir: the first open of a
 * server set probes each server once, later ones skip the probe.
 */
const knownEras = new Map();

/** mcp-fleet's host; `options`: startupConcurrency, label. Per-server config fields (e.g. max_concurrent_calls) come from each spec's `fleet`. */
export function mcpFleet({ startupConcurrency = 1, label } = {}) {
  return {
    label: label ?? `mcp-fleet (startup_concurrency ${startupConcurrency})`,
    async open(specs) {
      const state = stateDirFor(specs);
      const eras = JSON.stringify(specs.map((spec) => [spec.name, spec.command, spec.args]));
      if (knownEras.has(eras)) writeFileSync(join(state.dir, 'eras.json'), knownEras.get(eras), { mode: 0o600 });
      const host = fleet.createMcpHost({ stateDir: state.dir, logger: silent, startupConcurrency });
      await host.start();
      await host.settled();
      const notReady = host.status().filter((view) => !view.ready);
      if (notReady.length > 0) {
        await host.shutdown();
        state.remove();
        throw new Error(`mcp-fleet: not ready: ${notReady.map((v) => `${v.name} ${v.state} ${v.error ?? ''}`).join('; ')}`);
      }
      return {
        host,
        stateDir: state.dir,
        call: (server, tool, args) => host.callTool(`${server}__${tool}`, args),
        async close() {
          await host.shutdown();
          if (existsSync(join(state.dir, 'eras.json'))) knownEras.set(eras, readFileSync(join(state.dir, 'eras.json'), 'utf8'));
          state.remove();
        },
      };
    },
  };
}

// ── @langchain/mcp-adapters ─────────────────────────────────────────────────

export const langchain = {
  label: '@langchain/mcp-adapters',
  async open(specs) {
    const { MultiServerMCPClient } = await import('@langchain/mcp-adapters');
    const client = new MultiServerMCPClient({
      // Defaults otherwise; prefixing makes the names unique across servers, as a multi-server user needs.
      prefixToolNameWithServerName: true,
      mcpServers: Object.fromEntries(
        specs.map((spec) => [spec.name, { transport: 'stdio', command: spec.command, args: spec.args, env: envOf(spec) }]),
      ),
    });
    const tools = new Map((await client.getTools()).map((tool) => [tool.name, tool]));
    if (tools.size < specs.length) throw new Error(`langchain: ${tools.size} tools for ${specs.length} servers`);
    return {
      call: (server, tool, args) => tools.get(`${server}__${tool}`).invoke(args),
      close: () => client.close(),
    };
  },
};

// ── @mastra/mcp ─────────────────────────────────────────────────────────────

let mastraInstances = 0;
/** `protocolVersion: 'legacy'` skips the `server/discover` probe (and the second start it costs on stdio). */
export function mastra({ legacy = false } = {}) {
  return {
    label: legacy ? "@mastra/mcp (protocolVersion 'legacy')" : '@mastra/mcp (default)',
    async open(specs) {
      const { MCPClient } = await import('@mastra/mcp');
      mastraInstances += 1;
      const client = new MCPClient({
        id: `bench-${process.pid}-${mastraInstances}`,
        servers: Object.fromEntries(
          specs.map((spec) => [
            spec.name,
            {
              command: spec.command,
              args: spec.args,
              env: envOf(spec),
              // Server log forwarding is on by default; the fixtures send none.
              ...(legacy ? { protocolVersion: 'legacy' } : {}),
            },
          ]),
        ),
      });
      const tools = await client.listTools();
      if (Object.keys(tools).length < specs.length) {
        const { errors } = await client.listToolsWithErrors();
        throw new Error(`mastra: ${Object.keys(tools).length} tools for ${specs.length} servers: ${JSON.stringify(errors)}`);
      }
      return {
        call: (server, tool, args) => tools[`${server}_${tool}`].execute(args, {}),
        close: () => client.disconnect(),
      };
    },
  };
}

// ── @ai-sdk/mcp ─────────────────────────────────────────────────────────────

export const aiSdk = {
  label: '@ai-sdk/mcp (Promise.all)',
  async open(specs) {
    const { createMCPClient } = await import('@ai-sdk/mcp');
    const { StdioMCPTransport } = await import('@ai-sdk/mcp/mcp-stdio');
    const connect = async (spec) => {
      const client = await createMCPClient({
        transport: new StdioMCPTransport({ command: spec.command, args: spec.args, env: envOf(spec) }),
      });
      return { client, tools: await client.tools() };
    };
    const opened = await Promise.all(specs.map(connect));
    const byName = new Map(specs.map((spec, i) => [spec.name, opened[i]]));
    let callId = 0;
    return {
      call: (server, tool, args) =>
        byName.get(server).tools[tool].execute(args, { toolCallId: `call-${(callId += 1)}`, messages: [] }),
      close: () => Promise.all(opened.map(({ client }) => client.close())),
    };
  },
};

/**
 * The contender named `key`, as the suites and tools pass it on the command
 * line. `raw` and `fleet` connect all servers at once (raw `Promise.all`,
 * startup_concurrency 4), as the memory probe measures them; with
 * `{ sequential: true }` one after the other (raw sequential,
 * startup_concurrency 1), as the call driver opens them.
 */
export function contenderByKey(key, { sequential = false } = {}) {
  const byKey = {
    raw: () => (sequential ? rawSequential : rawParallel),
    fleet: () => mcpFleet({ startupConcurrency: sequential ? 1 : 4 }),
    langchain: () => langchain,
    mastra: () => mastra(),
    aisdk: () => aiSdk,
  };
  if (!Object.hasOwn(byKey, key)) throw new Error(`unknown contender "${key}" (one of ${Object.keys(byKey).join(', ')})`);
  return byKey[key]();
}
