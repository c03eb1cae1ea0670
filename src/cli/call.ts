import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import type { AgentToolResult } from '../services/tools/agent-tool.js';
import { action, ApiClient, printJson, withClientOptions, type ClientFlags } from './client.js';
import { jsonObject } from './flags.js';

/**
 * Registers `mcp-fleet call TOOL [JSON]`: calls an agent tool through the
 * worker and prints its text. A tool error (`details.is_error`) exits 1 after printing.
 */
export function registerCallCommand(program: Command, io: CliIO): void {
  withClientOptions(program.command('call'))
    .description('call an agent tool ({server}__{tool}) of the running worker')
    .argument('<tool>', 'agent tool name, e.g. everything__echo')
    .argument('[json]', 'arguments as a JSON object', parseArguments, {})
    .action(
      action(io, async (tool: string, args: Record<string, unknown>, flags: ClientFlags) => {
        const client = await ApiClient.connect(flags);
        const result = await client.request<AgentToolResult>('POST', `/api/mcp/tools/${encodeURIComponent(tool)}/call`, {
          arguments: args,
        });
        if (flags.json) printJson(io, result);
        else io.stdout(formatResult(result));
        if (result.details.is_error) {
          io.stderr(`error: ${tool} reported a tool error\n`);
          io.setExitCode(1);
        }
      }),
    );
}

/** The tool's arguments: a JSON object, checked before the worker is asked. */
const parseArguments = jsonObject('JSON', `'{"text":"hi"}'`);

/** Text blocks verbatim; binary blocks as a one-line note (a terminal is no place for base64). */
export function formatResult(result: AgentToolResult): string {
  const parts = result.content.map((block) =>
    block.type === 'text' ? block.text : `[${block.type} ${block.mimeType}, ${Buffer.byteLength(block.data, 'base64')} bytes]`,
  );
  return parts.length === 0 ? '' : `${parts.join('\n')}\n`;
}
