// Medians, ranges, percentiles and the table format every suite prints.

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

/** `{ median, min, max, n, samples }` of one contender's repetitions. */
export function summarize(samples) {
  return { median: median(samples), min: Math.min(...samples), max: Math.max(...samples), n: samples.length, samples };
}

/** `summarize` of each entry of `{ key: samples }`, under the same keys. */
export function summarizeAll(samplesByKey) {
  return Object.fromEntries(Object.entries(samplesByKey).map(([key, samples]) => [key, summarize(samples)]));
}

/** A number with `digits` significant-ish decimals for the tables. */
export function fmt(value, digits = 1) {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  if (Math.abs(value) >= 100) return value.toFixed(0);
  return value.toFixed(digits);
}

/** `median (min–max)` */
export function fmtRange(summary, digits = 1) {
  return `${fmt(summary.median, digits)} (${fmt(summary.min, digits)}–${fmt(summary.max, digits)})`;
}

/** Ratio of one contender's median to the baseline's, as `1.03×`. */
export function ratio(summary, baseline) {
  return `${(summary.median / baseline.median).toFixed(2)}×`;
}

/** A markdown table from a header row and rows of cells. */
export function table(header, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/**
 * Runs every contender once per repetition, in A B C … order rotated by one
 * each repetition (so none always runs first, right after a GC or a cold
 * start), and returns each contender's samples.
 */
export async function alternate(contenders, reps, runOnce, { onSample } = {}) {
  const samples = Object.fromEntries(contenders.map((c) => [c, []]));
  for (let rep = 0; rep < reps; rep += 1) {
    for (let k = 0; k < contenders.length; k += 1) {
      const contender = contenders[(rep + k) % contenders.length];
      const value = await runOnce(contender, rep);
      samples[contender].push(value);
      onSample?.(contender, rep, value);
    }
  }
  return samples;
}
