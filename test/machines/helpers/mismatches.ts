// Where a real actor differs from a reference model, gathered over many paths:
// each distinct discrepancy is reported once, with its shortest path and the
// fields that differ, so one wrong transition does not hide another.
import { isDeepStrictEqual } from 'node:util';
import { expect } from 'vitest';

export interface Mismatch {
  /** The events up to the step, as the path reads. */
  path: string;
  /** The last event and the fields that differ: paths with the same signature show one discrepancy. */
  signature: string;
  differences: Record<string, { seen: unknown; promised: unknown }>;
}

/** The fields (nested objects flattened to dotted names) where two observations differ. */
export function differences(seen: Record<string, unknown>, promised: Record<string, unknown>): Mismatch['differences'] {
  const out: Mismatch['differences'] = {};
  for (const key of new Set([...Object.keys(promised), ...Object.keys(seen)])) {
    const [a, b] = [seen[key], promised[key]];
    if (isDeepStrictEqual(a, b)) continue;
    const objects = a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b);
    if (!objects) {
      out[key] = { seen: a, promised: b };
      continue;
    }
    for (const [field, difference] of Object.entries(differences(a as Record<string, unknown>, b as Record<string, unknown>))) {
      out[`${key}.${field}`] = difference;
    }
  }
  return out;
}

/** The mismatch of one step, or null when the observation is what the model promised. */
export function compare(taken: readonly string[], seen: Record<string, unknown>, promised: Record<string, unknown>): Mismatch | null {
  if (isDeepStrictEqual(seen, promised)) return null;
  const found = differences(seen, promised);
  return {
    path: ['start', ...taken].join(' → '),
    signature: `${taken.at(-1) ?? 'start'}: ${Object.keys(found).join(', ')}`,
    differences: found,
  };
}

/** Collects mismatches; `assertNone` fails with each distinct one (its shortest path). */
export function createMismatches() {
  const found = new Map<string, { count: number; example: Mismatch }>();
  return {
    add(mismatch: Mismatch | null): void {
      if (!mismatch) return;
      const group = found.get(mismatch.signature);
      if (!group) found.set(mismatch.signature, { count: 1, example: mismatch });
      else {
        group.count += 1;
        if (mismatch.path.length < group.example.path.length) group.example = mismatch;
      }
    },
    get size(): number {
      return found.size;
    },
    /** One block per distinct discrepancy. */
    report(): string[] {
      return [...found.values()].map(({ count, example }) =>
        [
          `- after ${example.signature}  (${count} path(s)); the shortest:`,
          `    ${example.path}`,
          ...Object.entries(example.differences).map(
            ([field, { seen, promised }]) => `    ${field}: machine ${JSON.stringify(seen)}, model ${JSON.stringify(promised)}`,
          ),
        ].join('\n'),
      );
    },
    assertNone(): void {
      if (found.size > 0) expect.fail(`${found.size} discrepancies between the machine and the model:\n${this.report().join('\n')}`);
    },
  };
}
