// The conformance scenario auth/basic-cimd on its own, in both conformance
// revisions (0.1, and 0.2 at each requirement set's wire): `mcp-fleet connect
// --client-metadata-url URL` offers the URL as client id to an authorization
// server that advertises client_id_metadata_document_supported, so the
// scenario's cimd-client-id-used check succeeds and it ends with no failed and
// NO warning check (a client that registers instead gets a warning there).
// The check count is compared as the runners do: a run cut short on a loaded
// machine reports fewer checks and is run once more.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const SCENARIO = 'auth/basic-cimd';
/** What 0.1 scores for it (expected-checks.json records 0.2's). */
const CHECKS_01 = 14;
const EXPECTED = JSON.parse(readFileSync(resolve('test/conformance/expected-checks.json'), 'utf8')) as Record<string, Record<string, number>>;

interface Cli {
  conformanceBin(name: string, version: RegExp): string;
  connectCommand(stateDir: string): string;
  runCli(bin: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  SCENARIO_TIMEOUT_MS: number;
}
interface Verdict {
  ok: boolean;
  passed: number;
  failed: number;
  warnings: number;
  reasons: string[];
}
interface Run {
  parseScenario(name: string, code: number | null, output: string): Verdict;
}
// The runners' own modules (plain JavaScript, shared with CI), loaded as they are.
const cli = (await import(new URL('./cli.mjs', import.meta.url).href)) as Cli;
const run = (await import(new URL('./run.mjs', import.meta.url).href)) as Run;

const root = mkdtempSync(join(tmpdir(), 'mcp-fleet-cimd-conformance-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Outcome extends Verdict {
  checks: number;
  /** Whether the scenario scored the URL client id as used. */
  cimdUsed: boolean;
  output: string;
}

async function runOnce(bin: string, extra: string[]): Promise<Outcome> {
  const command = cli.connectCommand(mkdtempSync(join(root, 'run-')));
  const args = ['client', '--command', command, '--scenario', SCENARIO, ...extra, '--timeout', String(cli.SCENARIO_TIMEOUT_MS)];
  const { code, stdout, stderr } = await cli.runCli(bin, args);
  const output = `${stdout}\n${stderr}`.replace(/\u001b\[[0-9;]*m/gu, '');
  const verdict = run.parseScenario(SCENARIO, code, output);
  return {
    ...verdict,
    checks: verdict.passed + verdict.failed + verdict.warnings,
    cimdUsed: /\[cimd-client-id-used\s*\] SUCCESS /u.test(output),
    output,
  };
}

/** One run, and one more when it reported fewer checks than `expected` (cut short, not judged). */
async function runScenario(bin: string, extra: string[], expected: number): Promise<Outcome> {
  const first = await runOnce(bin, extra);
  return first.checks >= expected ? first : runOnce(bin, extra);
}

function expectClean(outcome: Outcome, expected: number): void {
  const summary = `${outcome.passed} passed, ${outcome.failed} failed, ${outcome.warnings} warnings\n${outcome.reasons.join('\n')}`;
  expect(outcome.warnings, summary).toBe(0);
  expect(outcome.failed, summary).toBe(0);
  expect(outcome.ok, summary).toBe(true);
  expect(outcome.cimdUsed, outcome.output.slice(-2000)).toBe(true);
  expect(outcome.checks, summary).toBe(expected);
}

describe(`conformance ${SCENARIO}: the URL client id, no warning`, () => {
  it('0.1', async () => {
    const bin = cli.conformanceBin('conformance-0.1', /^0\.1\./u);
    expectClean(await runScenario(bin, [], CHECKS_01), CHECKS_01);
  }, 150_000);

  for (const revision of ['2025-11-25', '2026-07-28']) {
    it(`0.2 at ${revision}`, async () => {
      const expected = EXPECTED[revision]?.[SCENARIO];
      expect(expected, `expected-checks.json records ${SCENARIO} under ${revision}`).toBeGreaterThan(0);
      const bin = cli.conformanceBin('@modelcontextprotocol/conformance', /^0\.2\./u);
      expectClean(await runScenario(bin, ['--spec-version', revision, '--force'], expected!), expected!);
    }, 150_000);
  }
});
