import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import type { ServerView } from '../journal/index.js';
import { action, ApiClient, formatTable, printJson, withClientOptions, type ClientFlags } from './client.js';

interface ListFlags extends ClientFlags {
  /** List the agent tools instead of the servers. */
  tools?: boolean;
}

interface ToolRow {
  name: string;
  description: string;
  server: string;
  original: string;
  /** False for an app-only tool (MCP Apps): listed, never offered to a model. */
  model_visible?: boolean;
}

/** Registers `mcp-fleet list [--tools]`: the running worker's servers (or tools). */
export function registerListCommand(program: Command, io: CliIO): void {
  withClientOptions(program.command('list'))
    .description('list the servers of the running worker (or its tools with --tools)')
    .option('--tools', 'list the agent tools instead')
    .action(
      action(io, async (flags: ListFlags) => {
        const client = await ApiClient.connect(flags);
        if (flags.tools) {
          const { tools } = await client.request<{ tools: ToolRow[] }>('GET', '/api/mcp/tools');
          if (flags.json) printJson(io, { tools });
          else io.stdout(`${formatToolTable(tools)}\n`);
          return;
        }
        const { servers } = await client.request<{ servers: ServerView[] }>('GET', '/api/mcp/servers');
        if (flags.json) printJson(io, { servers });
        else io.stdout(`${formatServerTable(servers)}\n`);
      }),
    );
}

/** NAME STATE TOOLS ERROR, one row per server. */
export function formatServerTable(servers: ServerView[]): string {
  if (servers.length === 0) return 'no servers configured';
  return formatTable(
    ['NAME', 'STATE', 'TOOLS', 'ERROR'],
    servers.map((s) => [s.name, ...stateAndTools(s), s.error ? `${s.error_kind ?? 'error'}: ${s.error}` : '']),
  );
}

/** A per_user server waits, by design, for each user's first call: its own row says so rather than `pending, 0`. */
function stateAndTools(view: ServerView): [string, string] {
  if (view.config.scope === 'per_user' && view.state === 'pending') return ['per user', '-'];
  return [view.state, String(view.tool_count)];
}

function formatToolTable(tools: ToolRow[]): string {
  if (tools.length === 0) return 'no tools (no server is ready)';
  return formatTable(
    ['TOOL', 'DESCRIPTION'],
    tools.map((t) => [t.name, firstLine(`${t.model_visible === false ? '[app-only] ' : ''}${t.description}`, 70)]),
  );
}

function firstLine(text: string, max: number): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
