#!/usr/bin/env node
// Runs the client scenarios of the MCP conformance suite
// (@modelcontextprotocol/conformance) against `mcp-fleet connect`. Suites
// overlap (core includes every auth scenario), so each distinct scenario runs
// once, JOBS at a time: the tool's own `--suite` mode starts them all at
// once, and on two busy cores that makes the timing checks of sse-retry
// (reconnect within 500 ms + 200 ms) flaky. Prints
// `conformance: N passed, M failed` per suite and in total, counting
// scenarios; a scenario passes as the tool judges it: no failed or warning
// check, and the client exited 0 (unless the scenario expects it to fail).
// Exits 1 on a failure not listed in expected-failures.yml, or on a listed
// one that now passes (stale entry).
//
//   node test/conformance/run.mjs [--suite NAME]...   (default: every suite)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { conformanceBin, connectCommand, JOBS, pool, runCli, SCENARIO_TIMEOUT_MS } from './cli.mjs';

export const SUITES = ['core', 'backcompat', 'auth', 'draft', 'extensions'];
export const BASELINE = fileURLToPath(new URL('./expected-failures.yml', import.meta.url));
const SUMMARY_LINE = /^[✓✗] (\S+): \d+ passed, \d+ failed/u;
const RESULT_LINE = /^Passed: (\d+)\/\d+, (\d+) failed, (\d+) warnings$/mu;

/**
 * Reads the baseline: `client:` then one `- scenario` per line, each with its
 * reason in a `#` comment on the line(s) just above or at the end of the line.
 * Returns scenario → reason; an entry without a reason is an error.
 */
export function readBaseline(path = BASELINE) {
  const entries = new Map();
  let comment = [];
  for (const [index, raw] of readFileSync(path, 'utf8').split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line === 'client:') continue;
    if (line.startsWith('#')) {
      comment.push(line.replace(/^#\s*/, ''));
      continue;
    }
    const entry = /^-\s+([^\s#]+)\s*(?:#\s*(.*))?$/.exec(line);
    if (entry === null) throw new Error(`${path}:${index + 1}: expected "- scenario", got "${line}"`);
    const reason = [...comment, entry[2] ?? ''].join(' ').trim();
    if (reason === '') throw new Error(`${path}:${index + 1}: ${entry[1]} has no comment saying why it fails`);
    entries.set(entry[1], reason);
    comment = [];
  }
  return entries;
}

const BIN_01 = conformanceBin('conformance-0.1', /^0\.1\./u);
const conformance = (args) => runCli(BIN_01, args);

/**
 * The scenarios of `suite`, as the tool defines it: its suite summary run
 * with a client that does nothing (`true`), which costs no client process.
 */
async function listSuite(suite) {
  const { code, stdout, stderr } = await conformance(['client', '--command', 'true', '--suite', suite]);
  const names = stdout.split('\n').flatMap((line) => SUMMARY_LINE.exec(line)?.[1] ?? []);
  if (names.length === 0) throw new Error(`conformance --suite ${suite} exited ${code} listing no scenario: ${(stdout + stderr).slice(-1000)}`);
  return names;
}

/**
 * Runs one scenario against `mcp-fleet connect` on a state dir of its own under `root`; its check
 * counts, verdict and what went wrong. Its own: `connect` keeps a server's tokens by host and port,
 * and scenarios run side by side, their mock servers on ports the OS hands out again, so a shared
 * dir could give one scenario another's tokens and skip the authorization it checks.
 */
async function runScenario(name, root) {
  const command = connectCommand(mkdtempSync(join(root, 'scenario-')));
  const args = ['client', '--command', command, '--scenario', name, '--timeout', String(SCENARIO_TIMEOUT_MS)];
  const { code, stdout, stderr } = await conformance(args);
  return parseScenario(name, code, `${stdout}\n${stderr}`);
}

/** Reads the tool's verdict on one scenario from its output (`Passed: a/b, f failed, w warnings`, failed checks, client errors). */
export function parseScenario(name, code, output) {
  const result = RESULT_LINE.exec(output);
  const reasons = output
    .split('\n')
    .filter((line) => /^ {2}- |^ {4}(Error|Warning): |CLIENT (TIMED OUT|EXITED WITH ERROR)/u.test(line))
    .map((line) => line.trim());
  if (result === null) reasons.push(`no result from the conformance tool (exit ${code}): ${output.trim().slice(-500)}`);
  return {
    name,
    // The tool's exit code already fails a warning; counted here too, so a warning can never pass unseen.
    ok: code === 0 && result !== null && Number(result[2]) === 0 && Number(result[3]) === 0,
    passed: Number(result?.[1] ?? 0),
    failed: Number(result?.[2] ?? 0),
    warnings: Number(result?.[3] ?? 0),
    reasons,
  };
}

const ok = (scenario) => scenario.ok;

/**
 * Runs every scenario of `suites` once against `mcp-fleet connect` (a fresh
 * state dir each) and judges them against the baseline. A scenario that several
 * suites share runs once and counts in each of them, and once in the total.
 */
export async function runConformance({ suites = SUITES, baseline = readBaseline(), jobs = JOBS } = {}) {
  const unknown = suites.filter((suite) => !SUITES.includes(suite));
  if (unknown.length > 0) throw new Error(`unknown suite(s): ${unknown.join(', ')}; known: ${SUITES.join(', ')}`);
  const root = mkdtempSync(join(tmpdir(), 'mcp-fleet-conformance-'));
  try {
    const members = await Promise.all(suites.map(listSuite));
    const names = [...new Set(members.flat())];
    const all = await pool(names, jobs, (name) => runScenario(name, root));
    const byName = new Map(all.map((scenario) => [scenario.name, scenario]));
    return {
      suites: suites.map((suite, index) => {
        const scenarios = members[index].map((name) => byName.get(name));
        return { suite, ...tally(scenarios), scenarios };
      }),
      total: tally(all),
      unexpected: all.filter((scenario) => !ok(scenario) && !baseline.has(scenario.name)),
      expected: all.filter((scenario) => !ok(scenario) && baseline.has(scenario.name)),
      stale: all.filter((scenario) => ok(scenario) && baseline.has(scenario.name)).map((scenario) => scenario.name),
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

function tally(scenarios) {
  const passed = scenarios.filter(ok).length;
  const checks = scenarios.reduce((sum, scenario) => sum + scenario.passed + scenario.failed + scenario.warnings, 0);
  return { passed, failed: scenarios.length - passed, checks };
}

/** The report as printed: per suite, the total, then what needs attention. */
export function formatReport(report) {
  const lines = report.suites.map(
    ({ suite, passed, failed, checks }) => `conformance: ${passed} passed, ${failed} failed (${suite}; ${checks} checks)`,
  );
  const { passed, failed, checks } = report.total;
  lines.push(`conformance: ${passed} passed, ${failed} failed (total: each scenario once; ${checks} checks)`);
  for (const scenario of report.expected) lines.push(`  expected failure: ${scenario.name}`);
  for (const scenario of report.unexpected) {
    lines.push(`  UNEXPECTED failure: ${scenario.name} (${scenario.failed} failed, ${scenario.warnings} warnings)`);
    for (const reason of scenario.reasons) lines.push(`    - ${reason}`);
  }
  for (const name of report.stale) lines.push(`  STALE baseline entry: ${name} passes now; remove it from expected-failures.yml`);
  return lines.join('\n');
}

function parseArgs(argv) {
  const suites = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--suite' && argv[i + 1] !== undefined) suites.push(argv[++i]);
    else throw new Error(`usage: run.mjs [--suite ${SUITES.join('|')}]...`);
  }
  return suites.length > 0 ? suites : SUITES;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const report = await runConformance({ suites: parseArgs(process.argv.slice(2)) });
    console.log(formatReport(report));
    process.exitCode = report.unexpected.length > 0 || report.stale.length > 0 ? 1 : 0;
  } catch (err) {
    console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 2;
  }
}
