import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { action, ApiClient, printJson, withClientOptions, type ClientFlags } from './client.js';
import { CliError } from './errors.js';

/**
 * Registers `mcp-fleet auth NAME`: starts OAuth consent for a server of the
 * running worker and prints the URL to open; the worker finishes the rest
 * when the browser comes back to its loopback callback.
 */
export function registerAuthCommand(program: Command, io: CliIO): void {
  withClientOptions(program.command('auth'))
    .description('start OAuth consent for a server in needs_reauth and print the URL to open')
    .argument('<name>', 'server name')
    .action(
      action(io, async (name: string, flags: ClientFlags) => {
        const client = await ApiClient.connect(flags);
        // A per_user server's consent is bound to the browser that begins it: a URL printed here could not be completed.
        const view = await client.request<{ config: { scope?: string } }>('GET', `/api/mcp/servers/${encodeURIComponent(name)}`);
        if (view.config.scope === 'per_user') {
          throw new CliError(`server "${name}" is per_user: each user connects their own account on the page (Connect / Reconnect), in the browser that completes it`);
        }
        const answer = await client.request<{ authorization_url: string }>(
          'POST',
          `/api/mcp/servers/${encodeURIComponent(name)}/auth`,
        );
        if (flags.json) printJson(io, answer);
        else io.stdout(`open this URL to authorize ${name}:\n${answer.authorization_url}\n`);
      }),
    );
}
