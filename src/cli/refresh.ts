import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import type { CatalogCounts } from '../host.js';
import { action, ApiClient, printJson, withClientOptions, type ClientFlags } from './client.js';

/**
 * Registers `mcp-fleet refresh NAME`: the running worker lists the server's
 * tools, resources and prompts again now (for a server whose changes never
 * reach it), and registers a changed tool listing.
 */
export function registerRefreshCommand(program: Command, io: CliIO): void {
  withClientOptions(program.command('refresh'))
    .description("list a ready server's tools, resources and prompts again now")
    .argument('<name>', 'server name')
    .action(
      action(io, async (name: string, flags: ClientFlags) => {
        const client = await ApiClient.connect(flags);
        const counts = await client.request<CatalogCounts>('POST', `/api/mcp/servers/${encodeURIComponent(name)}/refresh`);
        if (flags.json) printJson(io, counts);
        else io.stdout(`refreshed ${name}: ${plural(counts.tools, 'tool')}, ${plural(counts.resources, 'resource')}, ${plural(counts.prompts, 'prompt')}\n`);
      }),
    );
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
