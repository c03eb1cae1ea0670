import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import type { ServerView } from '../journal/index.js';
import { SERVER_NAME_PATTERN, SERVER_NAME_RULE } from '../config/schema.js';
import { parseServerConfig } from '../config/validate.js';
import { ConfigError } from '../errors.js';
import { action, ApiClient, CliError, printJson, withClientOptions, type ClientFlags } from './client.js';
import { UsageError } from './errors.js';
import { checked, choice, envName, httpUrl, jsonObject, keyValuePairs, keyValues, namedValues, seconds } from './flags.js';
import { formatServerTable } from './list.js';

interface AddFlags extends ClientFlags {
  /** A remote server at this URL (otherwise the operands are a local command). */
  url?: string;
  /** Base URL of the worker (named --worker-url here, since --url is the server's). */
  workerUrl?: string;
  transport?: string;
  env: string[];
  header: string[];
  /** Bearer auth, the token read from this environment variable of the CLI. */
  tokenEnv?: string;
  cwd?: string;
  timeout?: string;
  disabled?: boolean;
  /** A whole config as JSON; the other flags override its fields. */
  config?: string;
  /** `SERVER[@version]` of the MCP Registry: the config is made from its entry. */
  fromRegistry?: string;
  /** Base URL of the MCP Registry (default: $MCP_FLEET_REGISTRY_URL or the official one). */
  registryUrl?: string;
  /** Which of the entry's packages or remotes: `remote`, `npm`, `pypi`, `oci`. */
  package?: string;
  /** Values of the entry's arguments (`NAME=VALUE`, or the next one's value). */
  arg?: string[];
  /** Values of the entry's `{variables}` (`NAME=VALUE`). */
  var?: string[];
}

/**
 * Registers `mcp-fleet add NAME [flags] -- COMMAND...` (local) or `add NAME --url URL`
 * (remote). `--env KEY` without `=` takes the value from the CLI's own
 * environment, so a secret need not appear in shell history or `ps`.
 */
export function registerAddCommand(program: Command, io: CliIO): void {
  withClientOptions(program.command('add'), { urlFlag: '--worker-url <url>' })
    .description('add a server to the running worker; it starts at once and is saved if it starts')
    .argument('<name>', 'server name ([A-Za-z0-9_-], up to 64)', parseName)
    .argument('[command...]', 'for a local server: the program and its arguments (after --)')
    .option('--url <url>', 'a remote server at this URL (Streamable HTTP or SSE)', httpUrl('--url'))
    .option('--transport <transport>', 'remote transport: auto | streamable_http | sse', choice('--transport', TRANSPORTS))
    .option('--env <KEY[=VALUE]>', 'environment variable of the server; KEY alone copies it from this shell', keyValues('--env'), [])
    .option('--header <KEY[=VALUE]>', 'HTTP header of a remote server; KEY alone copies $KEY', keyValues('--header'), [])
    .option('--token-env <VAR>', 'bearer auth for a remote server, the token taken from $VAR', envName('--token-env'))
    .option('--cwd <dir>', 'working directory of a local server (default: this directory)')
    .option('--timeout <seconds>', 'bound on connect + initialize + first tools/list', checked(seconds('--timeout', MAX_TIMEOUT_SECONDS)))
    .option('--disabled', 'save it without starting it')
    .option('--config <json>', 'a whole server config as JSON (flags override its fields)', checked(jsonObject('--config', CONFIG_EXAMPLE)))
    .option('--from-registry <server[@version]>', 'make the config from this MCP Registry entry (latest version unless @version)')
    .option(
      '--registry-url <url>',
      'with --from-registry: base URL of the registry (default: $MCP_FLEET_REGISTRY_URL or the official one)',
      httpUrl('--registry-url'),
    )
    .option('--package <type>', 'with --from-registry: remote | npm | pypi | oci (default: the first of these the entry offers)')
    .option('--arg <[NAME=]VALUE>', "with --from-registry: a value of the entry's arguments", collect, [])
    .option('--var <NAME=VALUE>', "with --from-registry: a value of a {variable} of the entry's URL or arguments", namedValues('--var'), [])
    .action(
      action(io, async (name: string, command: string[], flags: AddFlags) => {
        const { config, choice } = flags.fromRegistry === undefined ? { config: buildConfig(command, flags) } : await registryConfig(command, flags, io);
        // The NAME argument names the server: a `name` in --config may only repeat it.
        if (config.name !== undefined && config.name !== name) {
          throw new UsageError('--config', `its name ${JSON.stringify(config.name)} is not the NAME given (${JSON.stringify(name)}): leave it out`);
        }
        delete config.name;
        // What --config holds is checked here, as every flag is: a bad field is a usage error before anything is sent.
        if (flags.config !== undefined) {
          try {
            parseServerConfig(name, config);
          } catch (err) {
            if (err instanceof ConfigError) throw new UsageError('--config', err.message);
            throw err;
          }
        }
        const client = await ApiClient.connect({ ...flags, url: flags.workerUrl });
        const view = await client.request<ServerView>('POST', '/api/mcp/servers', { name, ...config });
        // Which registry option was used, said only now: a failure prints nothing on stdout. With --json stdout is the answer alone.
        if (choice !== undefined) (flags.json ? io.stderr : io.stdout)(choice);
        if (flags.json) printJson(io, view);
        else io.stdout(`${formatServerTable([view])}\n`);
      }),
    );
}

/**
 * `--from-registry`: the entry's config, with the flags that still apply
 * (`--timeout`, `--disabled`, `--token-env`), and the line saying which option
 * was chosen (`RegistryConfig` of ./registry.ts).
 */
async function registryConfig(command: string[], flags: AddFlags, io: CliIO): Promise<{ config: Record<string, unknown>; choice?: string }> {
  if (command.length > 0 || flags.url !== undefined || flags.config !== undefined) {
    throw new UsageError('--from-registry', 'makes the whole config: give no command, --url or --config with it');
  }
  // The registry client loads only for --from-registry.
  const { configFromRegistry } = await import('./registry.js');
  const fromEntry = await configFromRegistry(flags.fromRegistry!, flags, io);
  const config: Record<string, unknown> = { ...fromEntry.config };
  if (flags.tokenEnv !== undefined) {
    if (config.type !== 'remote') throw new UsageError('--token-env', 'is for a remote server; this entry runs locally');
    config.auth = { kind: 'bearer', token: fromEnv(flags.tokenEnv, '--token-env') };
  }
  // A flag of the other kind of server than the entry's would be dropped without a word: refused.
  if (config.type === 'remote' && flags.env.length > 0) throw new UsageError('--env', 'is for a server that runs locally; this entry is remote (it takes --header)');
  if (config.type === 'remote' && flags.cwd !== undefined) throw new UsageError('--cwd', 'is for a server that runs locally; this entry is remote');
  if (config.type === 'local' && flags.header.length > 0) throw new UsageError('--header', 'is for a remote server; this entry runs locally (it takes --env)');
  if (flags.transport !== undefined) throw new UsageError('--transport', 'the registry entry names its transport: leave it out');
  if (flags.cwd !== undefined && config.type === 'local') config.cwd = resolve(flags.cwd);
  if (flags.timeout !== undefined) config.timeout_seconds = Number(flags.timeout);
  if (flags.disabled) config.enabled = false;
  return { config, ...(fromEntry.choice !== undefined && { choice: fromEntry.choice }) };
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** The POST body from the flags; the API validates it, this only assembles it. */
export function buildConfig(command: string[], flags: AddFlags): Record<string, unknown> {
  // The registry's flags say nothing without an entry: refused rather than ignored.
  const registryOnly: Array<[string, boolean]> = [
    ['--package', flags.package !== undefined],
    ['--var', (flags.var ?? []).length > 0],
    ['--arg', (flags.arg ?? []).length > 0],
    ['--registry-url', flags.registryUrl !== undefined],
  ];
  for (const [flag, given] of registryOnly) if (given) throw new UsageError(flag, 'is for --from-registry: it fills in a registry entry');
  const config: Record<string, unknown> = flags.config ? parseConfig(flags.config) : {};
  const remote = flags.url !== undefined || config.type === 'remote';
  // A flag of the other kind of server would be dropped without a word (a --header's secret with it): refused.
  if (remote) {
    if (command.length > 0) throw new UsageError(flags.url !== undefined ? '--url' : '--config', 'a remote server runs no command: give either it or a command after --, not both');
    if (config.command !== undefined || config.cwd !== undefined || config.env !== undefined) {
      throw new UsageError('--config', 'holds a local server\'s command, cwd or env, for a remote server (--url): leave them out');
    }
    if (flags.env.length > 0) throw new UsageError('--env', 'is for a local server; a remote server takes --header');
    if (flags.cwd !== undefined) throw new UsageError('--cwd', 'is for a local server; a remote server has no working directory');
    config.type = 'remote';
    if (flags.url !== undefined) config.url = flags.url;
    if (flags.transport !== undefined) config.transport = flags.transport;
    if (flags.header.length > 0) config.headers = { ...asRecord(config.headers), ...keyValuePairs(flags.header, '--header') };
    if (flags.tokenEnv !== undefined) config.auth = { kind: 'bearer', token: fromEnv(flags.tokenEnv, '--token-env') };
  } else {
    if (flags.header.length > 0) throw new UsageError('--header', 'is for a remote server (--url); a local server takes --env');
    if (flags.transport !== undefined) throw new UsageError('--transport', 'is for a remote server (--url)');
    if (flags.tokenEnv !== undefined) throw new UsageError('--token-env', 'is for a remote server (--url)');
    config.type = 'local';
    if (command.length > 0) config.command = command;
    if (config.command === undefined) throw new UsageError('COMMAND', 'give the command to run after --, or --url for a remote server');
    if (flags.env.length > 0) config.env = { ...asRecord(config.env), ...keyValuePairs(flags.env, '--env') };
    // Relative paths (the command's, a relative --cwd) mean what they meant where it was typed, not in the worker's directory.
    const cwd = flags.cwd ?? config.cwd;
    config.cwd = typeof cwd === 'string' ? resolve(cwd) : cwd === undefined ? process.cwd() : cwd;
  }
  if (flags.timeout !== undefined) config.timeout_seconds = Number(flags.timeout);
  if (flags.disabled) config.enabled = false;
  return config;
}

const TRANSPORTS = ['auto', 'streamable_http', 'sse'] as const;
/** The most `timeout_seconds` takes. */
const MAX_TIMEOUT_SECONDS = 3600;
const CONFIG_EXAMPLE = `'{"type":"local","command":["npx","-y","some-server"]}'`;

function parseConfig(json: string): Record<string, unknown> {
  return jsonObject('--config', CONFIG_EXAMPLE)(json);
}

/** Checked here too, so a typo is one line before the worker is asked. */
function parseName(name: string): string {
  if (!SERVER_NAME_PATTERN.test(name)) throw new UsageError('NAME', `${SERVER_NAME_RULE}: ${JSON.stringify(name)}`);
  return name;
}

function asRecord(value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new CliError('expected a JSON object');
  return value as Record<string, unknown>;
}


function fromEnv(variable: string, flag: string): string {
  const value = process.env[variable];
  if (value === undefined) throw new UsageError(flag, `$${variable} is not set in this shell`);
  return value;
}
