import type { Command } from 'commander';
import type { CliIO } from '../cli.js';
import { RegistryClient } from '../mcp-registry/registry-client.js';
import { toServerConfig, type ConvertedConfig } from '../mcp-registry/convert.js';
import { MissingInputsError, RegistryError } from '../mcp-registry/registry-errors.js';
import { installInputs, missingInputs, type InstallInput, type InstallValues } from '../mcp-registry/inputs.js';
import { chooseOption, installOptions, type InstallOption } from '../mcp-registry/options.js';
import { askInput, PromptClosedError } from '../mcp-registry/prompt.js';
import type { RegistryServer } from '../mcp-registry/index.js';
import { action, CliError, formatTable, printJson } from './client.js';
import { UsageError } from './errors.js';
import { checkRegistryUrlEnv, httpUrl, integer, keyValuePairs } from './flags.js';

interface SearchFlags {
  limit: number;
  registryUrl?: string;
  json?: boolean;
}

/** Registers `mcp-fleet registry search QUERY`: the MCP Registry's latest entries whose name contains QUERY. */
export function registerRegistryCommand(program: Command, io: CliIO): void {
  const registry = program.command('registry').description('the MCP Registry (registry.modelcontextprotocol.io, or --registry-url)');
  registry
    .command('search')
    .description('search the MCP Registry by server name')
    .argument('<query>', 'part of the server name ("" for every server)')
    .option('--limit <n>', 'at most this many entries (pages are followed)', integer('--limit', 1), 20)
    .option('--registry-url <url>', 'base URL of the registry (default: $MCP_FLEET_REGISTRY_URL or the official one)', httpUrl('--registry-url'))
    .option('--json', 'print the entries as JSON')
    .action(
      action(io, async (query: string, flags: SearchFlags) => {
        const limit = flags.limit;
        const client = registryClient(flags.registryUrl);
        const page = await viaCli(() => client.searchAll(query, { limit }));
        if (flags.json) return printJson(io, { servers: page.servers, next_cursor: page.nextCursor ?? null });
        if (page.servers.length === 0) return io.stdout(`no server in ${client.baseUrl} matches ${JSON.stringify(query)}\n`);
        const rows = page.servers.map((s) => [s.name, s.version, firstLine(s.description), packageTypes(s)]);
        io.stdout(`${formatTable(['NAME', 'VERSION', 'DESCRIPTION', 'PACKAGES'], rows)}\n`);
        if (page.nextCursor !== undefined) io.stdout(`(more: raise --limit)\n`);
      }),
    );
}

/** The flags of `add --from-registry`. */
export interface FromRegistryFlags {
  registryUrl?: string;
  /** `remote`, `npm`, `pypi`, `oci` (or an option id such as `npm-2`). */
  package?: string;
  env: string[];
  header: string[];
  arg?: string[];
  var?: string[];
  json?: boolean;
}

/** What `add --from-registry` adds, and the line that says which option it chose. */
export interface RegistryConfig {
  config: ConvertedConfig;
  /**
   * `SERVER@VERSION: using …`, for the caller to print once the server is
   * added, so a failure prints nothing on stdout; absent when it was already
   * said on stderr, before asking for inputs on a terminal.
   */
  choice?: string;
}

/**
 * The config for `add NAME --from-registry SERVER[@version]`: the entry is
 * fetched, an option chosen, inputs taken from the flags, and the missing
 * required ones asked for on a terminal (secrets without echo) or reported as
 * an error. Nothing is written here, and nothing printed on stdout.
 */
export async function configFromRegistry(spec: string, flags: FromRegistryFlags, io: CliIO): Promise<RegistryConfig> {
  const { name, version } = parseSpec(spec);
  const client = registryClient(flags.registryUrl);
  const server = await viaCli(() => client.server(name, version));
  const option = viaCliSync(() => {
    try {
      return chooseOption(server, flags.package);
    } catch (err) {
      // A --package the entry does not offer: the flag's value, said as such.
      if (err instanceof RegistryError && err.kind === 'invalid_request' && flags.package !== undefined) throw new UsageError('--package', err.message);
      throw err;
    }
  });
  let choice: string | undefined = `${server.name}@${server.version}: using ${option.label}${alternatives(server, option)}\n`;
  const inputs = installInputs(option);
  const values = valuesFromFlags(flags, inputs);
  const missing = missingInputs(inputs, values);
  if (missing.length > 0) {
    if (process.stdin.isTTY !== true) throw new CliError(missingMessage(missing));
    // The person answering should know which option the questions are for; stderr, as the questions.
    io.stderr(choice);
    choice = undefined;
    for (const input of missing) await askFor(input, values);
  }
  const config = viaCliSync(() => toServerConfig(option, values));
  return { config, ...(choice !== undefined && { choice }) };
}

/** `name@version` → both; the registry's names never contain `@`. */
function parseSpec(spec: string): { name: string; version: string } {
  const at = spec.lastIndexOf('@');
  const name = at > 0 ? spec.slice(0, at) : spec;
  const version = at > 0 ? spec.slice(at + 1) : 'latest';
  if (name === '' || version === '') throw new UsageError('--from-registry', `expected SERVER[@version]: ${JSON.stringify(spec)}`);
  return { name, version };
}

function registryClient(url: string | undefined): RegistryClient {
  checkRegistryUrlEnv(url);
  return viaCliSync(() => new RegistryClient({ baseUrl: url }));
}

/** Registry errors are one secret-free line: reported as they are. */
async function viaCli<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw cliError(err);
  }
}

function viaCliSync<T>(run: () => T): T {
  try {
    return run();
  } catch (err) {
    throw cliError(err);
  }
}

function cliError(err: unknown): unknown {
  if (err instanceof MissingInputsError) return new CliError(missingMessage(err.missing));
  // A value given by a flag that is wrong (an unknown --var, one that breaks the URL): that flag's usage error.
  if (err instanceof RegistryError && err.input !== undefined) return new UsageError(FLAG[err.input.kind as InstallInput['kind']] ?? `--${err.input.kind}`, err.message);
  if (err instanceof RegistryError) return new CliError(err.message);
  return err;
}

const FLAG: Record<InstallInput['kind'], string> = { env: '--env', header: '--header', arg: '--arg', variable: '--var' };

function missingMessage(missing: Array<{ kind: string; name: string }>): string {
  const flags = missing.map((m) => `${FLAG[m.kind as InstallInput['kind']] ?? `--${m.kind}`} ${m.name}=…`).join(' ');
  return `missing required input${missing.length === 1 ? '' : 's'}: ${missing.map((m) => `${m.kind} ${m.name}`).join(', ')}; give ${flags} (nothing was added)`;
}

/**
 * The values of `--env`, `--header`, `--var` (`NAME=VALUE`; `NAME` alone
 * copies $NAME from this shell) and `--arg` (`NAME=VALUE` for an argument
 * the entry names, else the value of the next argument still without one).
 */
function valuesFromFlags(flags: FromRegistryFlags, inputs: InstallInput[]): InstallValues {
  const args: Record<string, string> = {};
  const argNames = inputs.filter((i) => i.kind === 'arg').map((i) => i.name);
  for (const item of flags.arg ?? []) {
    const eq = item.indexOf('=');
    const named = eq > 0 && argNames.includes(item.slice(0, eq));
    if (named) args[item.slice(0, eq)] = item.slice(eq + 1);
    else {
      const next = argNames.find((n) => !(n in args));
      if (next === undefined) {
        throw new UsageError('--arg', `${JSON.stringify(item)}: the entry has no argument left to fill (its arguments: ${argNames.join(', ') || 'none'})`);
      }
      args[next] = item;
    }
  }
  return { env: keyValuePairs(flags.env, '--env'), header: keyValuePairs(flags.header, '--header'), variable: keyValuePairs(flags.var ?? [], '--var'), arg: args };
}


/**
 * Asks for one input on the terminal (see {@link askInput}) and records the
 * answer. Stdin closing at the question (Ctrl-D, a pipe that ends) ends the
 * command as a missing input does: one line naming the input, exit 1,
 * nothing added; Ctrl-C is exit 130, as a shell reports an interrupt.
 */
async function askFor(input: InstallInput, values: InstallValues): Promise<void> {
  try {
    (values[input.kind] ??= {})[input.name] = await askInput(input);
  } catch (err) {
    if (err instanceof PromptClosedError) throw err.reason === 'interrupted' ? new InterruptedError(err.message) : new CliError(err.message);
    throw err;
  }
}

/** A question answered by Ctrl-C: exit 130 (128 + SIGINT). */
class InterruptedError extends CliError {
  override readonly exitCode = 130;
}

function alternatives(server: RegistryServer, chosen: InstallOption): string {
  const others = installOptions(server).filter((o) => o.id !== chosen.id);
  return others.length === 0 ? '' : ` (also offered: ${others.map((o) => o.id + (o.problem ? ' [unsupported]' : '')).join(', ')}; pick with --package)`;
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

/** `remote, npm, oci`: how the entry can be run. */
export function packageTypes(server: RegistryServer): string {
  const types = [...server.remotes.map(() => 'remote'), ...server.packages.map((p) => p.registryType)];
  return [...new Set(types)].join(', ') || '-';
}
