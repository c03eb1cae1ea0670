import { MissingInputsError, RegistryError } from './registry-errors.js';
import { argumentName, installInputs, missingInputs, type InstallValues } from './inputs.js';
import type { InstallOption } from './options.js';
import type { KeyValueInput, RegistryArgument, RegistryInput, RegistryPackage, RegistryTransport } from './server-json.js';

/** An mcp-fleet server config (the body of `POST /api/mcp/servers` without `name`). */
export type ConvertedConfig =
  | { type: 'local'; command: string[]; env?: Record<string, string> }
  | { type: 'remote'; url: string; transport: 'streamable_http' | 'sse'; headers?: Record<string, string> };

/**
 * The mcp-fleet config that runs `option` with `values`. Every required input
 * must have a value given (its default does not count), else a
 * {@link MissingInputsError} naming them; optional ones take their defaults.
 * Nothing is written by this function in any case.
 */
export function toServerConfig(option: InstallOption, values: InstallValues = {}): ConvertedConfig {
  if (option.problem !== undefined) throw new RegistryError('unsupported', option.problem);
  const missing = missingInputs(installInputs(option), values);
  if (missing.length > 0) throw new MissingInputsError(missing, '');
  return option.source.kind === 'remote' ? remoteConfig(option.source.remote, values) : localConfig(option.source.pkg, values);
}

function remoteConfig(remote: RegistryTransport, values: InstallValues): ConvertedConfig {
  const fill = substitute(values, remote.variables);
  if (remote.url === undefined) throw new RegistryError('invalid_response', `remote ${remote.type} has no url`);
  const url = fill(remote.url);
  if (/\{[^}]*\}/.test(url)) throw new RegistryError('invalid_request', `remote URL ${url} still has a {variable} without a value`);
  const headers = keyValues(remote.headers, values.header, values);
  return {
    type: 'remote',
    url,
    transport: remote.type === 'sse' ? 'sse' : 'streamable_http',
    ...(Object.keys(headers).length > 0 && { headers }),
  };
}

function localConfig(pkg: RegistryPackage, values: InstallValues): ConvertedConfig {
  const runtimeArgs = pkg.runtimeArguments ?? [];
  const all = argv([...runtimeArgs, ...(pkg.packageArguments ?? [])], values);
  const runtime = all.slice(0, countOf(runtimeArgs, values));
  const packageArgs = all.slice(runtime.length);
  const env = keyValues(pkg.environmentVariables, values.env, values);
  const version = pkg.version;
  let command: string[];
  switch (pkg.registryType) {
    case 'npm':
      command = ['npx', ...(runtime.includes('-y') || runtime.includes('--yes') ? [] : ['-y']), ...runtime, version ? `${pkg.identifier}@${version}` : pkg.identifier];
      break;
    case 'pypi':
      command = ['uvx', ...runtime, version ? `${pkg.identifier}==${version}` : pkg.identifier];
      break;
    case 'oci':
      // `-e NAME` without a value: docker passes the variable from its own environment, which is `env`.
      command = ['docker', 'run', '-i', '--rm', ...runtime, ...Object.keys(env).flatMap((name) => ['-e', name]), ociImage(pkg)];
      break;
    default:
      throw new RegistryError('unsupported', `package type ${pkg.registryType} is not supported`);
  }
  return { type: 'local', command: [...command, ...packageArgs], ...(Object.keys(env).length > 0 && { env }) };
}

/** The image reference: the identifier as is when it carries a tag or digest, else `identifier:version`. */
function ociImage(pkg: RegistryPackage): string {
  const last = pkg.identifier.split('/').at(-1) ?? '';
  return last.includes(':') || last.includes('@') || !pkg.version ? pkg.identifier : `${pkg.identifier}:${pkg.version}`;
}

/** argv elements of `args`: a positional is its value, a named one `--flag value`; one without a value is left out. */
function argv(args: RegistryArgument[], values: InstallValues): string[] {
  return args.flatMap((arg, index) => {
    const value = argValue(arg, index, values);
    if (value === undefined) return [];
    return arg.type === 'named' && arg.name !== undefined ? [arg.name, value] : [value];
  });
}

/** How many argv elements the first `args` give (to split runtime from package arguments). */
function countOf(args: RegistryArgument[], values: InstallValues): number {
  return argv(args, values).length;
}

function argValue(arg: RegistryArgument, index: number, values: InstallValues): string | undefined {
  if (arg.value !== undefined) return substitute(values, arg.variables)(arg.value);
  const given = values.arg?.[argumentName(arg, index)] ?? arg.default;
  return given === '' ? undefined : given;
}

/** Declared variables or headers with their values, then any extra ones the user gave. */
function keyValues(items: KeyValueInput[] = [], given: Record<string, string> = {}, values: InstallValues): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const value = item.value !== undefined ? substitute(values, item.variables)(item.value) : (given[item.name] ?? item.default);
    if (value !== undefined && value !== '') out[item.name] = value;
  }
  for (const [name, value] of Object.entries(given)) if (!(name in out)) out[name] = value;
  return out;
}

/** Replaces `{name}` by the given variable (or argument, or env value), else its default; unknown ones stay as they are. */
function substitute(values: InstallValues, own: Record<string, RegistryInput> = {}) {
  return (text: string) =>
    text.replace(/\{([A-Za-z0-9_.-]+)\}/g, (whole, id: string) => values.variable?.[id] ?? values.arg?.[id] ?? values.env?.[id] ?? own[id]?.default ?? whole);
}
