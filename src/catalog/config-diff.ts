import { isDeepStrictEqual } from 'node:util';
import type { ServerConfig } from '../config/index.js';

/** Persisted config against running config (`GET /api/mcp/catalog/diff`; docs/http-and-cli.md). */
export interface ConfigDiff {
  /** In the file, not running. */
  added: string[];
  /** Running, no longer in the file. */
  removed: string[];
  /** Per server, the dotted paths that differ. Paths only: a secret shows as changed, never its value. */
  changed: Array<{ name: string; fields: string[] }>;
}

/** Compares two server lists by name and field. */
export function computeDiff(
  persisted: ReadonlyArray<readonly [string, ServerConfig]>,
  running: ReadonlyArray<readonly [string, ServerConfig]>,
): ConfigDiff {
  const before = new Map(running);
  const after = new Map(persisted);
  const diff: ConfigDiff = { added: [], removed: [], changed: [] };
  for (const [name, config] of after) {
    const live = before.get(name);
    if (!live) diff.added.push(name);
    else {
      const fields = changedPaths(live, config);
      if (fields.length > 0) diff.changed.push({ name, fields });
    }
  }
  for (const name of before.keys()) if (!after.has(name)) diff.removed.push(name);
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
