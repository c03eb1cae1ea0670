import { RegistryError } from './registry-errors.js';
import type { RegistryPackage, RegistryServer, RegistryTransport } from './server-json.js';

/** Package types this client can run, and the order an option is chosen in when none is asked for. */
export const PREFERENCE = ['remote', 'npm', 'pypi', 'oci'] as const;
const RUNNABLE = new Set<string>(['npm', 'pypi', 'oci']);
const REMOTE_TRANSPORTS = new Set(['streamable-http', 'sse']);

/** One way of running an entry: one of its remotes or one of its packages. */
export interface InstallOption {
  /** `remote`, `npm`, … (`npm-2` for the second package of one type); what `--package` and the page pass back. */
  id: string;
  /** `remote` or the package's `registryType`. */
  type: string;
  /** One line for people: `npm @scope/pkg@1.0.2`, `remote streamable-http https://…`. */
  label: string;
  /** Why this client cannot run it; absent when it can. */
  problem?: string;
  source: { kind: 'remote'; remote: RegistryTransport } | { kind: 'package'; pkg: RegistryPackage };
}

/** Every remote and package of `server`, remotes first, in the entry's order. */
export function installOptions(server: RegistryServer): InstallOption[] {
  const seen = new Map<string, number>();
  const idFor = (type: string) => {
    const n = (seen.get(type) ?? 0) + 1;
    seen.set(type, n);
    return n === 1 ? type : `${type}-${n}`;
  };
  const remotes = server.remotes.map((remote): InstallOption => {
    const problem = REMOTE_TRANSPORTS.has(remote.type) ? undefined : `remote transport ${remote.type} is not supported`;
    return { id: idFor('remote'), type: 'remote', label: `remote ${remote.type} ${remote.url ?? ''}`.trim(), ...(problem && { problem }), source: { kind: 'remote', remote } };
  });
  const packages = server.packages.map((pkg): InstallOption => {
    const transport = pkg.transport?.type ?? 'stdio';
    const problem = !RUNNABLE.has(pkg.registryType)
      ? `package type ${pkg.registryType} is not supported (supported: ${[...RUNNABLE].join(', ')}, or a remote)`
      : transport !== 'stdio'
        ? `a ${pkg.registryType} package served over ${transport} is not supported (only stdio)`
        : undefined;
    const version = pkg.version ? `@${pkg.version}` : '';
    return { id: idFor(pkg.registryType), type: pkg.registryType, label: `${pkg.registryType} ${pkg.identifier}${version}`, ...(problem && { problem }), source: { kind: 'package', pkg } };
  });
  return [...remotes, ...packages];
}

/**
 * The option to install: the one `wanted` names (an id or a type), else the
 * first runnable one in {@link PREFERENCE} order. An entry with nothing
 * runnable, or a wanted option that is not, is an `unsupported` error naming the type.
 */
export function chooseOption(server: RegistryServer, wanted?: string): InstallOption {
  const options = installOptions(server);
  const offered = () => (options.length === 0 ? 'nothing' : options.map((o) => o.id).join(', '));
  if (wanted !== undefined && wanted !== '') {
    const option = options.find((o) => o.id === wanted) ?? options.find((o) => o.type === wanted);
    if (option === undefined) throw new RegistryError('invalid_request', `${server.name} offers no ${wanted} package; it offers: ${offered()}`);
    if (option.problem !== undefined) throw new RegistryError('unsupported', `${server.name}: ${option.problem}`);
    return option;
  }
  const runnable = options.filter((o) => o.problem === undefined);
  const rank = (o: InstallOption) => PREFERENCE.indexOf(o.type as (typeof PREFERENCE)[number]);
  const best = runnable.sort((a, b) => rank(a) - rank(b))[0];
  if (best === undefined) {
    const why = options.map((o) => o.problem).filter((p) => p !== undefined);
    throw new RegistryError('unsupported', `${server.name} cannot be installed: ${why.length > 0 ? why.join('; ') : 'it lists no package and no remote'}`);
  }
  return best;
}
