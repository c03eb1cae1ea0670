// What every suite shares: options from argv, progress on stderr, and the
// JSON result written where `run.js` asked (or printed when run alone).
import { writeFileSync } from 'node:fs';

export function suiteOptions() {
  const argv = process.argv.slice(2);
  const value = (flag) => {
    const at = argv.indexOf(flag);
    return at === -1 ? undefined : argv[at + 1];
  };
  const quick = argv.includes('--quick');
  return {
    quick,
    reps: Number(value('--reps') ?? (quick ? 3 : 7)),
    out: value('--out'),
  };
}

export function log(message) {
  process.stderr.write(`  ${message}\n`);
}

/** Runs `body(options)` and hands its result to run.js (or prints it), then exits: children are closed by then. */
export async function runSuite(name, body) {
  const options = suiteOptions();
  const started = performance.now();
  const result = await body(options);
  result.suite = name;
  result.seconds = (performance.now() - started) / 1000;
  result.reps = options.reps;
  result.quick = options.quick;
  if (options.out) writeFileSync(options.out, JSON.stringify(result, null, 2));
  else process.stdout.write(`${result.markdown}\n`);
  process.exit(0);
}
