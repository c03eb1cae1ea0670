/**
 * `mcp-fleet connect URL`: the one-shot client the protocol conformance suite
 * drives. It goes through the worker's own connection and OAuth code, so
 * what the suite checks is what the worker does; the scenario (from the
 * suite's environment) only decides what to do once connected.
 */
import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { action } from './client.js';
import { directory, httpUrl } from './flags.js';

/** Env var naming the conformance scenario being run; it decides what `connect` does once connected. */
export const SCENARIO_ENV = 'MCP_CONFORMANCE_SCENARIO';
/** Env var with the scenario's context as JSON (e.g. client credentials). */
export const CONTEXT_ENV = 'MCP_CONFORMANCE_CONTEXT';

export interface ConnectFlags {
  stateDir?: string;
  clientMetadataUrl?: string;
}

/**
 * Registers `mcp-fleet connect URL`: a one-shot client of a remote MCP server
 * through the worker's own connection code — connect, authorize if asked
 * (headless consent), list tools, do what the scenario needs, close.
 */
export function registerConnectCommand(program: Command, io: CliIO): void {
  program
    .command('connect')
    .description(`one-shot client: connect to URL, list its tools, do what $${SCENARIO_ENV} needs, close`)
    .argument('<url>', 'URL of a remote MCP server (Streamable HTTP, or SSE)', httpUrl('URL'))
    .option('--state-dir <dir>', 'state dir (default: $MCP_FLEET_STATE_DIR or ~/.mcp-fleet)', directory('--state-dir'))
    .option(
      '--client-metadata-url <url>',
      'HTTPS URL of a client metadata document, used as client_id where the server supports it',
      httpUrl('--client-metadata-url'),
    )
    .action(
      action(io, async (url: string, flags: ConnectFlags) => {
        // The client and the scenarios load when the command runs: `mcp-fleet --help` does not pay for the SDK.
        const { runConnect } = await import('./connect-run.js');
        await runConnect(io, url, flags);
      }),
    );
}
