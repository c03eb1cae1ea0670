/**
 * Tool arguments as the model sent them, safe to journal and show: every
 * string equal to (or holding) one of the server's config secrets is masked,
 * at any depth, keys too. A model that echoes an API key it saw must not put
 * it in the journal.
 */
import { MASK, redact } from '../config/masking.js';

export function maskArguments(args: Record<string, unknown>, secrets: readonly string[]): Record<string, unknown> {
  if (secrets.length === 0) return args;
  const exact = new Set(secrets);
  const mask = (value: unknown): unknown => {
    if (typeof value === 'string') return exact.has(value) ? MASK : redact(value, secrets);
    if (Array.isArray(value)) return value.map(mask);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [mask(key) as string, mask(inner)]));
    }
    return value;
  };
  return mask(args) as Record<string, unknown>;
}
