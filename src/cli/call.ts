import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import type { AgentToolResult } from '../catalog/index.js';
import type { PendingApproval } from '../approvals/index.js';
import { action, ApiClient, CliError, printJson, withClientOptions, type ClientFlags } from './client.js';
import { jsonObject } from './flags.js';
import { commandFor, shellWord } from './invocation.js';
import { resolveStateDir } from '../config/paths.js';

/**
 * Registers `mcp-fleet call TOOL [JSON]`: calls an agent tool through the
 * worker and prints its text. A tool error (`details.is_error`) exits 1 after
 * printing. A call that waits for approval says so on stderr, with its id and
 * the commands that decide it, and prints the result once decided.
 */
export function registerCallCommand(program: Command, io: CliIO): void {
  withClientOptions(program.command('call'))
    .description('call an agent tool ({server}__{tool}) of the running worker')
    .argument('<tool>', 'agent tool name, e.g. everything__echo')
    .argument('[json]', 'arguments as a JSON object', parseArguments, {})
    .action(
      action(io, async (tool: string, args: Record<string, unknown>, flags: ClientFlags) => {
        const client = await ApiClient.connect(flags);
        const result = await callStreamed(client, tool, args, (pending) => io.stderr(approvalWait(pending, flags)));
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

/**
 * Calls `tool` as a stream, so a call that waits for approval is heard of
 * while it waits (`onApproval`); resolves with its result.
 */
async function callStreamed(
  client: ApiClient,
  tool: string,
  args: Record<string, unknown>,
  onApproval: (pending: PendingApproval) => void,
): Promise<AgentToolResult> {
  let result: AgentToolResult | undefined;
  await client.stream('POST', `/api/mcp/tools/${encodeURIComponent(tool)}/call`, { arguments: args }, (event, data) => {
    if (event === 'approval') onApproval(data as PendingApproval);
    else if (event === 'result') result = data as AgentToolResult;
  });
  if (result === undefined) throw new CliError(`the worker at ${client.baseUrl} ended the call to ${tool} without a result`);
  return result;
}

/**
 * What `call` prints on stderr when its tool waits for approval: the id, until
 * when, and the two commands that decide it, with the `--state-dir` / `--url`
 * this call was given so they reach the same worker.
 */
export function approvalWait(pending: Pick<PendingApproval, 'id' | 'tool' | 'expires_at'>, flags: ClientFlags): string {
  // The state dir as this call resolved it (the flag, else $MCP_FLEET_STATE_DIR and the profile, else the default),
  // absolute: pasted in another terminal, in another directory, without those variables, it reaches the same worker.
  const url = flags.url !== undefined ? ` --url ${shellWord(flags.url)}` : '';
  const command = (verb: string) => `${commandFor([verb, pending.id].map(shellWord).join(' '), resolveStateDir(flags.stateDir), { anywhere: true })}${url}`;
  return (
    `waiting for approval ${pending.id} to call ${pending.tool} (until ${pending.expires_at}); decide with:\n` +
    `  ${command('approve')}\n` +
    `  ${command('deny')}\n`
  );
}


/** Text blocks verbatim; binary blocks as a one-line note (a terminal is no place for base64). */
export function formatResult(result: AgentToolResult): string {
  const parts = result.content.map((block) =>
    block.type === 'text' ? block.text : `[${block.type} ${block.mimeType}, ${Buffer.byteLength(block.data, 'base64')} bytes]`,
  );
  return parts.length === 0 ? '' : `${parts.join('\n')}\n`;
}
