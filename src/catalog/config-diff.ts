import { isDeepStrictEqual } from 'node:util';
import { ConfigFileBrokenError, type ConfigStore, type ServerConfig } from '../config/index.js';

/** Persisted config against running config (`GET /api/mcp/catalog/diff`; docs/http-and-cli.md). */
export interface ConfigDiff {
  /** In the file, not running. */
  added: string[];
  /** Running, no longer in the file. */
  removed: string[];
  /** Per server, the dotted paths that differ. Paths only: a secret shows as changed, never its value. */
  changed: Array<{ name: string; fields: string[] }>;
  /** In the file in an entry that does not validate, and why: skipped, never taken for a removal (one may still run on its last valid config). */
  invalid: Array<{ name: string; problem: string }>;
}

/** Compares two server lists by name and field; `invalid` are the file's entries that do not validate. */
export function computeDiff(
  persisted: ReadonlyArray<readonly [string, ServerConfig]>,
  running: ReadonlyArray<readonly [string, ServerConfig]>,
  invalid: ReadonlyArray<{ name: string; problem: string }> = [],
): ConfigDiff {
  const before = new Map(running);
  const after = new Map(persisted);
  const skipped = new Set(invalid.map((entry) => entry.name));
  const diff: ConfigDiff = { added: [], removed: [], changed: [], invalid: invalid.map(({ name, problem }) => ({ name, problem })) };
  for (const [name, config] of after) {
    const live = before.get(name);
    if (!live) diff.added.push(name);
    else {
      const fields = changedPaths(live, config);
      if (fields.length > 0) diff.changed.push({ name, fields });
    }
  }
  for (const name of before.keys()) if (!after.has(name) && !skipped.has(name)) diff.removed.push(name);
  return diff;
}

function changedPaths(a: unknown, b: unknown, prefix = ''): string[] {
  if (isDeepStrictEqual(a, b)) return [];
  if (!isPlainObject(a) || !isPlainObject(b)) return [prefix || '(root)'];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].flatMap((key) => changedPaths(a[key], b[key], prefix ? `${prefix}.${key}` : key));
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The store's servers against `running`; refused while the file does not parse, which says nothing of what is persisted. */
export async function diffWithStore(store: ConfigStore, running: ReadonlyArray<readonly [string, ServerConfig]>): Promise<ConfigDiff> {
  const loaded = await store.load();
  if (loaded.broken) {
    throw new ConfigFileBrokenError(loaded.broken.file, loaded.broken.problem, `cannot compare ${loaded.broken.file} with the running servers`);
  }
  return computeDiff(loaded.servers, running, loaded.invalid);
}
