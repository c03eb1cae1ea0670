import { ENV_NAME, HEADER_NAME, NO_LINE_BREAK_OR_NUL, NO_NUL } from '../config/schema.js';
import { MissingInputsError, RegistryError } from './registry-errors.js';
import { argumentName, installInputs, missingInputs, type InstallInput, type InstallValues } from './inputs.js';
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
  const inputs = installInputs(option);
  checkKnown(option, inputs, values);
  checkGiven(values);
  const missing = missingInputs(inputs, values);
  if (missing.length > 0) throw new MissingInputsError(missing, '');
  return option.source.kind === 'remote' ? remoteConfig(option.source.remote, values) : localConfig(option.source.pkg, values);
}

/**
 * Values for arguments or `{variables}` the option does not have would be
 * dropped without a word (a typo, another option's input): refused, naming
 * them. Extra env vars and headers are kept, not refused: a server may read
 * variables its entry does not list, a remote may sit behind a gateway's header.
 */
function checkKnown(option: InstallOption, inputs: InstallInput[], values: InstallValues): void {
  const url = option.source.kind === 'remote' ? (option.source.remote.url ?? '') : '';
  const known = {
    arg: inputs.filter((i) => i.kind === 'arg').map((i) => i.name),
    // Also a {name} the URL uses without declaring it: substitute() fills it.
    variable: [...new Set([...inputs.filter((i) => i.kind === 'variable').map((i) => i.name), ...[...url.matchAll(VARIABLE)].map((m) => m[1]!)])],
  };
  const noun = { arg: 'argument', variable: 'variable' } as const;
  for (const kind of ['arg', 'variable'] as const) {
    for (const name of Object.keys(values[kind] ?? {})) {
      if (known[kind].includes(name)) continue;
      const has = known[kind].length === 0 ? 'it has none' : `it has: ${known[kind].join(', ')}`;
      throw new RegistryError('invalid_request', `${kind} ${name}: this entry has no such ${noun[kind]} (${has})`, { input: { kind, name } });
    }
  }
}

/**
 * Values the config could not hold, refused here naming the input given (a
 * `header X`, an `env K`), never quoting it: else the config check would name
 * the field they land in (`headers.X`, `command.3`), which the caller never
 * sent. No field takes a NUL; a header takes no line break (one reaching a
 * header through an entry's `{variable}` is told by {@link checkHeaders}).
 */
function checkGiven(values: InstallValues): void {
  const refuse = (kind: InstallInput['kind'], name: string, problem: string) => {
    throw new RegistryError('invalid_request', `${kind} ${name}: ${problem}`, { input: { kind, name } });
  };
  for (const [name, value] of Object.entries(values.header ?? {})) {
    if (!HEADER_NAME.test(name)) refuse('header', name, "not an HTTP header name: letters, digits and !#$%&'*+-.^_`|~ only");
    if (!NO_LINE_BREAK_OR_NUL.test(value)) refuse('header', name, 'its value holds a line break or NUL character');
  }
  for (const name of Object.keys(values.env ?? {})) if (!ENV_NAME.test(name)) refuse('env', name, 'not an environment variable name: not empty, no "=" or NUL');
  for (const kind of ['env', 'arg', 'variable'] as const) {
    for (const [name, value] of Object.entries(values[kind] ?? {})) if (!NO_NUL.test(value)) refuse(kind, name, 'its value holds a NUL character');
  }
}

/**
 * A header the entry fills from `{variables}` (`Bearer {token}`) takes no
 * line break from them: the variable whose value holds one is named.
 */
function checkHeaders(items: KeyValueInput[] = [], headers: Record<string, string>, values: InstallValues): void {
  for (const item of items) {
    if (item.value === undefined || NO_LINE_BREAK_OR_NUL.test(headers[item.name] ?? '')) continue;
    for (const [, id] of item.value.matchAll(VARIABLE)) {
      const given = (['variable', 'arg', 'env'] as const).find((kind) => values[kind]?.[id!] !== undefined);
      if (given !== undefined && !NO_LINE_BREAK_OR_NUL.test(values[given]![id!]!)) {
        throw new RegistryError('invalid_request', `${given} ${id}: its value, filled into header ${item.name}, holds a line break`, { input: { kind: given, name: id! } });
      }
    }
  }
}

const VARIABLE = /\{([A-Za-z0-9_.-]+)\}/g;

function remoteConfig(remote: RegistryTransport, values: InstallValues): ConvertedConfig {
  const fill = substitute(values, remote.variables);
  if (remote.url === undefined) throw new RegistryError('invalid_response', `remote ${remote.type} has no url`);
  const url = fill(remote.url);
  if (/\{[^}]*\}/.test(url)) throw new RegistryError('invalid_request', `remote URL ${url} still has a {variable} without a value`);
  checkUrl(remote.url, url, values);
  const headers = keyValues(remote.headers, values.header, values);
  checkHeaders(remote.headers, headers, values);
  return {
    type: 'remote',
    url,
    transport: remote.type === 'sse' ? 'sse' : 'streamable_http',
    ...(Object.keys(headers).length > 0 && { headers }),
  };
}

/**
 * The filled URL must be one the config takes (http(s), parsable); when it is
 * not, the value given for one of its `{variables}` made it so, and that
 * variable is named (the caller sent no `url`). The value is not quoted: a
 * variable may be secret.
 */
function checkUrl(template: string, url: string, values: InstallValues): void {
  const ok = URL.canParse(url) && ['http:', 'https:'].includes(new URL(url).protocol);
  if (ok) return;
  const given = [...template.matchAll(VARIABLE)].map((m) => m[1]!).find((name) => values.variable?.[name] !== undefined);
  if (given === undefined) throw new RegistryError('invalid_request', `the entry's remote URL ${template}, filled in, is not a valid http(s) URL`);
  throw new RegistryError('invalid_request', `variable ${given}: its value does not make ${template} a valid http(s) URL`, { input: { kind: 'variable', name: given } });
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
