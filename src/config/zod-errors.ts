import type { z } from 'zod';

/** A zod failure as one line plus the dotted path of its first problem. */
export interface ZodErrorDescription {
  /** `field: problem; field: problem`, built from paths and zod's messages, never from input values. */
  message: string;
  /** Dotted path of the first problem (`''` for the value itself), e.g. `env.API_KEY`, `command.1`. */
  field: string;
}

/** How many problems one message lists before `(+N more)`. */
const MAX_LISTED_ISSUES = 3;

/**
 * The one description of a zod error, for every message that shows one (an
 * API 400, a config warning, a refused option or answer). It never echoes
 * input: zod 4's messages name expected types and allowed values only, and
 * `issue.input` is never read. `prefix` is prepended to every path (e.g.
 * `servers.files`).
 */
export function describeZodError(err: z.core.$ZodError, prefix = ''): ZodErrorDescription {
  const problems: Array<{ field: string; text: string }> = [];
  for (const issue of err.issues) {
    const at = joinPath(prefix, issue.path);
    if (issue.code === 'unrecognized_keys') {
      // Name each unknown field itself, so the user knows exactly what to remove.
      for (const key of issue.keys) problems.push({ field: joinPath(at, [key]), text: 'unknown field' });
    } else if (issue.code === 'invalid_key') {
      // A map's key broke its rule: the key's own problem, not zod's "Invalid key in record".
      problems.push({ field: at, text: `key ${issue.issues[0]?.message ?? 'is not allowed'}` });
    } else {
      // zod says a missing field was received as `undefined`: say it is required.
      problems.push({ field: at, text: plainWords(issue) ?? issue.message.replace(/^Invalid input: /, '').replace(/^(expected .+), received undefined$/, 'required: $1') });
    }
  }
  const listed = problems.slice(0, MAX_LISTED_ISSUES).map((p) => (p.field === '' ? p.text : `${p.field}: ${p.text}`));
  const more = problems.length > MAX_LISTED_ISSUES ? ` (+${problems.length - MAX_LISTED_ISSUES} more)` : '';
  return { message: listed.join('; ') + more, field: problems[0]?.field ?? prefix };
}

function joinPath(prefix: string, segments: readonly PropertyKey[]): string {
  const parts = segments.map((s) => (typeof s === 'symbol' ? (s.description ?? '?') : String(s)));
  return (prefix === '' ? parts : [prefix, ...parts]).join('.');
}

/**
 * zod's default words for a bound or a URL ("Too small: expected number to
 * be >0", "Invalid URL") said as a person would; a schema's own message is
 * kept (undefined here).
 */
function plainWords(issue: z.core.$ZodIssue): string | undefined {
  if (issue.code === 'too_small' && issue.message.startsWith('Too small')) {
    const min = Number(issue.minimum);
    if (issue.origin === 'string') return min === 1 ? 'must not be empty' : `must be at least ${min} characters`;
    if (issue.origin === 'array' || issue.origin === 'set') return `needs at least ${min} ${min === 1 ? 'item' : 'items'}`;
    return issue.inclusive ? `must be at least ${min}` : `must be above ${min}`;
  }
  if (issue.code === 'too_big' && issue.message.startsWith('Too big')) {
    const max = Number(issue.maximum);
    if (issue.origin === 'string') return `must be at most ${max} characters`;
    if (issue.origin === 'array' || issue.origin === 'set') return `must have at most ${max} items`;
    return issue.inclusive ? `must be at most ${max}` : `must be below ${max}`;
  }
  if (issue.code === 'invalid_format' && issue.format === 'url' && issue.message === 'Invalid URL') return 'must be a valid URL';
  // `2.5` where an integer goes: zod says "expected int, received number".
  if (issue.code === 'invalid_type' && issue.expected === 'int' && issue.message.startsWith('Invalid input')) return 'must be a whole number';
  return undefined;
}
