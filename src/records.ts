/**
 * Records keyed by names from outside (server, tool, user and input names)
 * are plain objects, so `record[name]` for a name like `constructor` or
 * `toString` reads a member of Object.prototype. Every lookup by such a name
 * goes through `own`: the record's own entry, or `undefined`.
 */
export function own<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}
