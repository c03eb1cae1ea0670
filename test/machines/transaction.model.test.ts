// Model-based tests of a management change (docs/lifecycle.md, Management).
// The real transaction machine's graph is walked with `xstate/graph` (the
// outcome of each piece of work it invokes as a synthetic event); each path
// is taken on a real actor whose work is fakes answering as the path says
// (helpers/transaction-run.ts), and checked at every step against a reference
// model written as the steps of each change (helpers/transaction-spec.ts):
// the state, which work is done with which config (the change applied, the
// old config applied back), what the store holds, and what the caller gets.
import { getSimplePaths } from 'xstate/graph';
import { describe, expect, test } from 'vitest';
import { toMermaid } from '../../src/machines/diagrams.js';
import { transactionMachine, type TransactionInput } from '../../src/machines/transaction.machine.js';
import { stepsOf } from './helpers/paths.js';
import { createMismatches } from './helpers/mismatches.js';
import { declaredTransitions, runPath, transactionGraph, traversal, type PathRun } from './helpers/transaction-run.js';
import { configs, NAME } from './helpers/transaction-spec.js';

const scenarios: Array<{ label: string; input: TransactionInput }> = [
  { label: 'add', input: { kind: 'add', name: NAME, config: configs.added } },
  { label: 'update', input: { kind: 'update', name: NAME, patch: { timeout_seconds: 7 } } },
  { label: 'update at If-Match 1', input: { kind: 'update', name: NAME, patch: { timeout_seconds: 7 }, ifMatch: 1 } },
  { label: 'update with a patch that is not a valid config', input: { kind: 'update', name: NAME, patch: { timeout_seconds: 'soon' } } },
  { label: 'remove', input: { kind: 'remove', name: NAME } },
  { label: 'remove at If-Match 1', input: { kind: 'remove', name: NAME, ifMatch: 1 } },
  { label: 'restart', input: { kind: 'restart', name: NAME } },
];

const walks = scenarios.map(({ label, input }) => ({ label, input, paths: getSimplePaths(transactionGraph(), traversal(input)) }));
const runs: PathRun[] = [];
/** The runs of each scenario, by its label. */
const runsOf = new Map<string, PathRun[]>();

describe.each(walks)('transaction: $label', ({ label, input, paths }) => {
  test(`every path (${paths.length} paths, ${stepsOf(paths)} steps) holds the model at every step`, async () => {
    expect(paths.length).toBeGreaterThan(5);
    const mismatches = createMismatches();
    for (const path of paths) {
      const run = await runPath(input, path);
      mismatches.add(run.mismatch);
      runs.push(run);
      runsOf.set(label, [...(runsOf.get(label) ?? []), run]);
    }
    mismatches.assertNone();
  });
});

test('the walks take every transition the diagram draws', () => {
  const declared = declaredTransitions();
  // The diagram's edges are these transitions, one line each.
  const drawn = toMermaid(transactionMachine)
    .split('\n')
    .filter((line) => / --> /.test(line) && !line.includes('[*]'));
  expect(drawn).toHaveLength(declared.length);
  const taken = new Set(runs.flatMap((run) => run.transitions));
  expect(declared.filter((key) => !taken.has(key))).toEqual([]);
  expect([...taken].filter((key) => !declared.includes(key))).toEqual([]);
});

test('the walks reach the outcomes that matter: kept, refused, undone', () => {
  const observations = runs.map((run) => run.observation);
  const finished = observations.filter((observation) => observation.outcome !== 'running');
  // An update whose start failed: the old config applied back, the store as it was.
  expect(
    finished.some(
      ({ work, stored, outcome }) =>
        work.join(', ') === 'read, apply running~timeout_seconds=7, apply running' &&
        stored?.config === 'running' &&
        outcome !== 'running' &&
        !outcome.ok &&
        outcome.error.startsWith('StartFailedError'),
    ),
  ).toBe(true);
  // Another worker changed another field meanwhile: the patch is stored on top of it, and that is applied.
  expect(
    finished.some(
      ({ work, stored, outcome }) =>
        work.includes('apply running+other~timeout_seconds=7') && stored?.config === 'running+other~timeout_seconds=7' && outcome !== 'running' && outcome.ok,
    ),
  ).toBe(true);
  // An add refused by the store: uninstalled, nothing stored.
  expect(
    finished.some(
      ({ work, stored, outcome }) =>
        work.join(', ') === 'read, install added, persist add, uninstall' && stored === null && outcome !== 'running' && !outcome.ok,
    ),
  ).toBe(true);
  // A removal at a version the entry moved past: refused before anything stopped, the entry kept.
  expect(
    (runsOf.get('remove at If-Match 1') ?? []).some(
      ({ observation: { work, stored, outcome } }) =>
        work.join(', ') === 'read' && stored?.version === 2 && outcome !== 'running' && !outcome.ok && outcome.error.startsWith('PreconditionFailedError'),
    ),
  ).toBe(true);
  // A removal: stopped, its entry gone, its credentials forgotten.
  expect(
    finished.some(
      ({ work, stored, outcome }) =>
        work.join(', ') === 'read, uninstall, persist remove, forget' && stored === null && outcome !== 'running' && outcome.ok,
    ),
  ).toBe(true);
});
