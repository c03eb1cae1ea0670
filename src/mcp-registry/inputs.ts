import type { InstallOption } from './options.js';
import type { KeyValueInput, RegistryArgument, RegistryInput } from './server-json.js';

/** What an input fills: an environment variable, an HTTP header, a command-line argument, or a `{variable}` of a fixed value or URL. */
export type InputKind = 'env' | 'header' | 'arg' | 'variable';

/** A value the user may (or must) give to install an option. */
export interface InstallInput {
  kind: InputKind;
  /** The variable or header name, the argument's `valueHint` (or flag), the `{variable}`'s name. */
  name: string;
  description?: string;
  required: boolean;
  /** Never echoed, never printed back; a password field on the page. */
  secret: boolean;
  default?: string;
  choices?: string[];
  placeholder?: string;
}

/** The values given, by kind and name. */
export interface InstallValues {
  env?: Record<string, string>;
  header?: Record<string, string>;
  arg?: Record<string, string>;
  variable?: Record<string, string>;
}

/** The name an argument is given by: its `valueHint`, else its flag. */
export function argumentName(arg: RegistryArgument, index: number): string {
  return arg.valueHint ?? arg.name ?? `arg${index + 1}`;
}

/** Every input of `option` the user can set, in the order to ask them. */
export function installInputs(option: InstallOption): InstallInput[] {
  const inputs = new Map<string, InstallInput>();
  const add = (kind: InputKind, name: string, input: RegistryInput) => {
    const key = `${kind}:${name}`;
    if (inputs.has(key)) return;
    inputs.set(key, {
      kind,
      name,
      required: input.isRequired === true,
      secret: input.isSecret === true,
      ...(input.description !== undefined && { description: input.description }),
      ...(input.default !== undefined && { default: input.default }),
      ...(input.choices !== undefined && { choices: input.choices }),
      ...(input.placeholder !== undefined && { placeholder: input.placeholder }),
    });
  };
  // A fixed `value` is not the user's to set, but the `{variables}` it names are.
  const variables = (owner: { value?: string; variables?: Record<string, RegistryInput> }) => {
    for (const [name, input] of Object.entries(owner.variables ?? {})) add('variable', name, input);
  };
  const keyValues = (kind: 'env' | 'header', items: KeyValueInput[] = []) => {
    for (const item of items) {
      if (item.value !== undefined) variables(item);
      else add(kind, item.name, item);
    }
  };
  if (option.source.kind === 'remote') {
    const { remote } = option.source;
    variables(remote);
    keyValues('header', remote.headers);
  } else {
    const { pkg } = option.source;
    [...(pkg.runtimeArguments ?? []), ...(pkg.packageArguments ?? [])].forEach((arg, index) => {
      if (arg.value !== undefined) variables(arg);
      else add('arg', argumentName(arg, index), arg);
    });
    keyValues('env', pkg.environmentVariables);
  }
  return [...inputs.values()];
}

/**
 * Required inputs without a value given. A required input's default does not
 * count: entries use it for examples (filesystem's `/Users/username/Desktop`),
 * so it is only offered when asking, never taken unasked.
 */
export function missingInputs(inputs: InstallInput[], values: InstallValues): InstallInput[] {
  return inputs.filter((input) => input.required && (values[input.kind]?.[input.name] ?? '') === '');
}
