import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { createClientHandlers } from '../services/capabilities/client-handlers.js';
import { connect, type ServerConnection } from '../services/connection/connection.js';
import { resolveStateDir } from '../services/config/paths.js';
import { action, CliError } from './client.js';
import { connectAuth, parseConnectContext, type ConnectAuth } from './connect-auth.js';

/** Env var naming the conformance scenario being run; it decides which tools `connect` calls. */
export const SCENARIO_ENV = 'MCP_CONFORMANCE_SCENARIO';
/** Env var with the scenario's context as JSON (e.g. client credentials). */
export const CONTEXT_ENV = 'MCP_CONFORMANCE_CONTEXT';

interface ToolCall {
  tool: string;
  args: Record<string, unknown>;
}

/**
 * What each scenario of the conformance suite expects its client to call
 * after listing tools. Every `auth/*` scenario serves one `test-tool`, whose
 * call is what triggers a scope step-up; any other scenario (`initialize`)
 * only connects and lists.
 */
const SCENARIO_CALLS: Record<string, ToolCall[]> = {
  tools_call: [{ tool: 'add_numbers', args: { a: 5, b: 3 } }],
  'elicitation-sep1034-client-defaults': [{ tool: 'test_client_elicitation_defaults', args: {} }],
  'sse-retry': [{ tool: 'test_reconnection', args: {} }],
};
const AUTH_SCENARIO_CALLS: ToolCall[] = [{ tool: 'test-tool', args: {} }];

interface ConnectFlags {
  stateDir?: string;
  clientMetadataUrl?: string;
}

/**
 * Registers `mcp-fleet connect URL`: a one-shot client of a remote MCP server
 * through the worker's own connection code — connect, authorize if asked
 * (headless consent), list tools, call what the scenario needs, close.
 */
export function registerConnectCommand(program: Command, io: CliIO): void {
  program
    .command('connect')
    .description(`one-shot client: connect to URL, list its tools, call what $${SCENARIO_ENV} needs, close`)
    .argument('<url>', 'URL of a remote MCP server (Streamable HTTP, or SSE)')
    .option('--state-dir <dir>', 'state dir (default: $MCP_FLEET_STATE_DIR or ~/.mcp-fleet)')
    .option('--client-metadata-url <url>', 'HTTPS URL of a client metadata document, used as client_id where the server supports it')
    .action(
      action(io, async (url: string, flags: ConnectFlags) => {
        // One line for every failure, the state dir's and the OAuth credentials file's included.
        await runConnect(io, url, flags).catch((err: unknown) => {
          throw asCliError(err);
        });
      }),
    );
}

async function runConnect(io: CliIO, url: string, flags: ConnectFlags): Promise<void> {
  const name = serverName(url);
  const scenario = nonEmpty(process.env[SCENARIO_ENV]);
  const authorization = await connectAuth({
    url,
    name,
    stateDir: resolveStateDir(flags.stateDir),
    context: parseConnectContext(process.env[CONTEXT_ENV]),
    scenario,
    clientMetadataUrl: flags.clientMetadataUrl,
  });
  // Nobody to ask: a form elicitation is accepted with the defaults its schema declares.
  const handlers = createClientHandlers({
    elicitation: (request) => (request.mode === 'form' ? { action: 'accept' } : { action: 'decline' }),
  });
  const connection = await withConsent(authorization, () =>
    connect(name, authorization.config, { authProvider: authorization.provider, setupClient: handlers.setup(name) }),
  );
  try {
    const info = connection.serverInfo;
    io.stdout(`connected to ${info ? `${info.name} ${info.version}` : url}: ${connection.tools.length} tools\n`);
    for (const tool of connection.tools) io.stdout(`  ${tool.name}\n`);
    for (const call of scenarioCalls(scenario)) {
      if (!connection.tools.some((tool) => tool.name === call.tool)) {
        throw new CliError(`scenario ${scenario} calls tool "${call.tool}", which the server does not list`);
      }
      io.stdout(`${call.tool}: ${await callOnce(authorization, connection, call)}\n`);
    }
  } finally {
    await connection.close();
  }
}

/**
 * The name `connect` gives the server: `connect-<host>-<port>`, so OAuth
 * credentials persist per server (`<state_dir>/oauth/<name>.json`) and a
 * second run against the same server reuses its tokens.
 */
function serverName(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`not a URL: ${url}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CliError(`URL must be http or https, got ${parsed.protocol.replace(/:$/, '')}`);
  }
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  return `connect-${parsed.hostname}-${port}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

function scenarioCalls(scenario: string | undefined): ToolCall[] {
  if (scenario === undefined) return [];
  return SCENARIO_CALLS[scenario] ?? (scenario.startsWith('auth/') ? AUTH_SCENARIO_CALLS : []);
}

/**
 * Runs `attempt`; when it failed because the server asked for consent,
 * finishes that consent and tries again (finishPendingConsent bounds the loop).
 */
async function withConsent<T>(authorization: ConnectAuth, attempt: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (!(await authorization.finishPendingConsent())) throw err;
    }
  }
}

async function callOnce(authorization: ConnectAuth, connection: ServerConnection, call: ToolCall): Promise<string> {
  const result = await withConsent(authorization, () => connection.callTool(call.tool, call.args));
  const text = result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join(' ');
  if (result.isError === true) throw new CliError(`tool "${call.tool}" reported an error: ${text}`);
  return text;
}

function asCliError(err: unknown): CliError {
  return err instanceof CliError ? err : new CliError(err instanceof Error ? err.message : String(err));
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
