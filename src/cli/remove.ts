import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { action, ApiClient, printJson, withClientOptions, type ClientFlags } from './client.js';

/** Registers `mcp-fleet remove NAME`: stops the server, unregisters its tools, deletes it from the config. */
export function registerRemoveCommand(program: Command, io: CliIO): void {
  withClientOptions(program.command('remove'))
    .description('stop a server of the running worker and delete it from the config')
    .argument('<name>', 'server name')
    .action(
      action(io, async (name: string, flags: ClientFlags) => {
        const client = await ApiClient.connect(flags);
        await client.request<void>('DELETE', `/api/mcp/servers/${encodeURIComponent(name)}`);
        if (flags.json) printJson(io, { removed: name });
        else io.stdout(`removed ${name}\n`);
      }),
    );
}
