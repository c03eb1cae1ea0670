import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import type { PendingApproval } from '../approvals/index.js';
import { action, ApiClient, ApiError, CliError, formatTable, printJson, withClientOptions, type ClientFlags } from './client.js';

/** Widest arguments column before it is cut with `…`. */
const ARGUMENTS_WIDTH = 60;

/**
 * Registers `mcp-fleet approvals` (the calls of the running worker waiting
 * for approval) and `mcp-fleet approve ID` / `mcp-fleet deny ID`.
 */
export function registerApprovalsCommands(program: Command, io: CliIO): void {
  withClientOptions(program.command('approvals'))
    .description('list the tool calls of the running worker waiting for approval')
    .action(
      action(io, async (flags: ClientFlags) => {
        const client = await ApiClient.connect(flags);
        const { approvals } = await client.request<{ approvals: PendingApproval[] }>('GET', '/api/mcp/approvals');
        if (flags.json) printJson(io, { approvals });
        else io.stdout(`${formatApprovalsTable(approvals)}\n`);
      }),
    );
  for (const [verb, decision] of [
    ['approve', 'allow'],
    ['deny', 'deny'],
  ] as const) {
    withClientOptions(program.command(verb))
      .description(decision === 'allow' ? 'let a waiting tool call run' : 'refuse a waiting tool call (the model is told)')
      .argument('<id>', 'the approval id, from `mcp-fleet approvals`')
      .action(
        action(io, async (id: string, flags: ClientFlags) => {
          const client = await ApiClient.connect(flags);
          let answer: unknown;
          try {
            answer = await client.request('POST', `/api/mcp/approvals/${encodeURIComponent(id)}`, { decision });
          } catch (error) {
            if (error instanceof ApiError && error.status === 404) throw new CliError(`no call waits for approval ${id}`);
            throw error;
          }
          if (flags.json) printJson(io, answer);
          else io.stdout(`${decision === 'allow' ? 'allowed' : 'denied'} ${id}\n`);
        }),
      );
  }
}

/** ID TOOL WAITING ARGUMENTS, oldest first. */
export function formatApprovalsTable(approvals: PendingApproval[], now = Date.now()): string {
  if (approvals.length === 0) return 'no call waits for approval';
  return formatTable(
    ['ID', 'TOOL', 'WAITING', 'ARGUMENTS'],
    approvals.map((approval) => [
      approval.id,
      approval.tool,
      `${Math.max(0, Math.round((now - Date.parse(approval.requested_at)) / 1000))}s`,
      cut(JSON.stringify(approval.arguments), ARGUMENTS_WIDTH),
    ]),
  );
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
