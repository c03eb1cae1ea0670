import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { GroupName, UserName, type Quota, type UserView } from '../users/index.js';
import { action, ApiClient, formatTable, printJson, withClientOptions, type ClientFlags } from './client.js';
import { limitValue, quoted, quotaLimit } from './flags.js';
import { UsageError } from './errors.js';

interface AddFlags extends ClientFlags {
  group: string[];
  callsPerMinute?: number | 'none';
  maxConcurrentCalls?: number | 'none';
}

/** A user's name, checked before anything is sent. */
function parseUserName(value: string): string {
  const parsed = UserName.safeParse(value);
  if (!parsed.success) throw new UsageError('NAME', `${parsed.error.issues[0]?.message ?? 'not a user name'}: ${quoted(value)}`);
  return value;
}

/** `--group G`, repeatable. */
function collectGroup(value: string, previous: string[]): string[] {
  // `--group --json` would take the next flag as the group's name.
  if (value.startsWith('--')) throw new UsageError('--group', `needs a group name, not a flag: ${quoted(value)}`);
  const parsed = GroupName.safeParse(value);
  if (!parsed.success) throw new UsageError('--group', `${parsed.error.issues[0]?.message ?? 'not a group name'}: ${quoted(value)}`);
  return [...previous, value];
}

/**
 * Registers `mcp-fleet users add NAME [--group G]… [--calls-per-minute N]
 * [--max-concurrent-calls N] | list | quota NAME [limits] | remove NAME |
 * rotate NAME`: the running worker's users. `add` and `rotate` print the key
 * once; only its hash is kept.
 */
export function registerUsersCommand(program: Command, io: CliIO): void {
  const users = program.command('users').description('the users of the running worker and their API keys');

  withClientOptions(users.command('add'))
    .description('add a user; prints their API key, the only time it is shown')
    .argument('<name>', 'user name ([A-Za-z0-9_-], up to 64)', parseUserName)
    .option('--group <group>', 'a group of the user (repeatable)', collectGroup, [])
    .option('--calls-per-minute <n>', "the user's own calls per minute, or none (default: the worker's --user-calls-per-minute)", quotaLimit('--calls-per-minute'))
    .option(
      '--max-concurrent-calls <n>',
      "the user's own calls running at once, or none (default: the worker's --user-max-concurrent-calls)",
      quotaLimit('--max-concurrent-calls'),
    )
    .action(
      action(io, async (name: string, flags: AddFlags) => {
        const client = await ApiClient.connect(flags);
        const added = await client.request<UserView & { key: string }>('POST', '/api/mcp/users', { name, groups: flags.group, ...quotaBody(flags) });
        printKey(io, flags, added, 'added');
      }),
    );

  withClientOptions(users.command('list'))
    .description('list the users and their groups (never their keys)')
    .action(
      action(io, async (flags: ClientFlags) => {
        const client = await ApiClient.connect(flags);
        const { users: listed } = await client.request<{ users: UserView[] }>('GET', '/api/mcp/users');
        if (flags.json) printJson(io, { users: listed });
        else if (listed.length === 0) io.stdout('no users\n');
        else {
          const rows = listed.map((user) => [user.name, user.groups.join(', '), describeLimit(user.calls_per_minute), describeLimit(user.max_concurrent_calls)]);
          io.stdout(`${formatTable(['NAME', 'GROUPS', 'CALLS/MIN', 'CONCURRENT'], rows)}\n`);
        }
      }),
    );

  withClientOptions(users.command('quota'))
    .description("set a user's own limits; a flag left out is the worker's default again")
    .argument('<name>', 'user name', parseUserName)
    .option('--calls-per-minute <n>', 'calls per minute, or none', quotaLimit('--calls-per-minute'))
    .option('--max-concurrent-calls <n>', 'calls running at once, or none', quotaLimit('--max-concurrent-calls'))
    .action(
      action(io, async (name: string, flags: AddFlags) => {
        const client = await ApiClient.connect(flags);
        const updated = await client.request<UserView>('PUT', `/api/mcp/users/${encodeURIComponent(name)}/quota`, quotaBody(flags));
        if (flags.json) printJson(io, updated);
        else io.stdout(`${name}: ${describeLimit(updated.calls_per_minute)} calls per minute, ${describeLimit(updated.max_concurrent_calls)} at once\n`);
      }),
    );

  withClientOptions(users.command('remove'))
    .description('remove a user: their key stops working at once')
    .argument('<name>', 'user name', parseUserName)
    .action(
      action(io, async (name: string, flags: ClientFlags) => {
        const client = await ApiClient.connect(flags);
        await client.request<void>('DELETE', `/api/mcp/users/${encodeURIComponent(name)}`);
        if (flags.json) printJson(io, { removed: name });
        else io.stdout(`removed ${name}\n`);
      }),
    );

  withClientOptions(users.command('rotate'))
    .description("replace a user's key; prints the new one once, the old one stops working")
    .argument('<name>', 'user name', parseUserName)
    .action(
      action(io, async (name: string, flags: ClientFlags) => {
        const client = await ApiClient.connect(flags);
        const rotated = await client.request<UserView & { key: string }>('POST', `/api/mcp/users/${encodeURIComponent(name)}/rotate`);
        printKey(io, flags, rotated, 'new key for');
      }),
    );
}

/** The limits the flags give, as the API takes them (`none` is `null`). */
function quotaBody(flags: AddFlags): Quota {
  return {
    ...(flags.callsPerMinute !== undefined && { calls_per_minute: limitValue(flags.callsPerMinute) }),
    ...(flags.maxConcurrentCalls !== undefined && { max_concurrent_calls: limitValue(flags.maxConcurrentCalls) }),
  };
}

/** A user's limit as listed: their own number, `none`, or the worker's `default`. */
function describeLimit(value: number | null | undefined): string {
  return value === undefined ? 'default' : value === null ? 'none' : String(value);
}

/** The key on a line of its own (easy to copy or capture), the note on stderr. */
function printKey(io: CliIO, flags: ClientFlags, user: UserView & { key: string }, verb: string): void {
  if (flags.json) {
    printJson(io, user);
    return;
  }
  io.stderr(`${verb} ${user.name}${user.groups.length > 0 ? ` (groups: ${user.groups.join(', ')})` : ''}; the key is shown this once:\n`);
  io.stdout(`${user.key}\n`);
}
