#!/usr/bin/env node
// Runs the client requirement sets of the MCP conformance suite 0.2
// (@modelcontextprotocol/conformance 0.2.0-alpha.12) against
// `mcp-fleet connect`: every client scenario that `--requirements 2025-11-25`
// and `--requirements 2026-07-28` score, each at its revision's wire, and
// once each the extension scenarios (what both sets run without scoring, plus
// every scenario the tool tags as an extension), at EXTENSIONS_WIRE.
//
// The tool's own `client --requirements REV` starts a set's scenarios all at
// once, which overloads two cores, and takes no --scenario; so this runs the
// same thing one scenario at a time, JOBS at once: `client --scenario NAME
// --spec-version REV --force` is exactly how `--requirements REV` runs each
// member (the force lets a not-scored extension run at a dated wire).
//
// Prints `scenario NAME (SET): P passed, F failed, W warnings` per scenario,
// then a total per set. Each scenario's check count (passed + failed +
// warnings, as the tool counts them) is compared with expected-checks.json,
// recorded from passing runs: fewer checks means the run was cut short (a
// mock server dropping a kept-alive socket on a loaded machine), so that
// scenario runs once more and fails if it still reports fewer; more checks
// means expected-checks.json is stale. The counts follow the client's request
// pattern: they were recorded with a reference client on the v2 SDK
// (versionNegotiation 'auto', so one server/discover probe per connect, which
// an OAuth-protected mock counts as one more authorized request), listing
// tools and calling what each scenario asks, and asking consent once per scope
// and authorization server (auth/scope-retry-limit: each further authorization
// attempt would add six checks). One count is mcp-fleet's own:
// auth/offline-access-scope has one check more than the reference client
// scored, because mcp-fleet keeps refresh tokens (its client metadata
// declares the refresh_token grant) and so asks for offline_access where the
// authorization server offers it (SEP-2207), which the scenario scores as a
// passed check instead of a note. A scenario with a failed or warning
// check fails the run unless expected-failures-0.2.yml lists it, with a
// reason, under its set. Exits 1 on any of these, 2 when it could not run.
//
//   node test/conformance/requirements.mjs [--set 2025-11-25|2026-07-28|extensions]...
//       [--scenario NAME]... [--command 'CLIENT COMMAND'] [--jobs 1-3] [--json]
//
// --command runs another client instead of `mcp-fleet connect` (the tool
// appends the server URL), e.g. a reference client when re-recording counts.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { conformanceBin, connectCommand, JOBS, pool, runCli, SCENARIO_TIMEOUT_MS } from './cli.mjs';
import { parseScenario } from './run.mjs';

/** The requirement sets the runner knows, as `--requirements` names them. */
export const REVISIONS = ['2025-11-25', '2026-07-28'];
/** Every set it reports: both revisions, then the extension scenarios. */
export const SETS = [...REVISIONS, 'extensions'];
/**
 * The wire the extension scenarios run at: the newest revision, as
 * `--requirements 2026-07-28` runs its not-scored entries. Extensions are
 * off the spec timeline, so the tool needs --force to run them at a date.
 */
export const EXTENSIONS_WIRE = '2026-07-28';
export const EXPECTED_CHECKS = fileURLToPath(new URL('./expected-checks.json', import.meta.url));
export const BASELINE = fileURLToPath(new URL('./expected-failures-0.2.yml', import.meta.url));

const BIN_02 = conformanceBin('@modelcontextprotocol/conformance', /^0\.2\./u);
const conformance = (args) => runCli(BIN_02, args);

async function listOutput(args) {
  const { code, stdout, stderr } = await conformance(['list', ...args]);
  if (code !== 0) throw new Error(`conformance list ${args.join(' ')} exited ${code}: ${(stdout + stderr).trim().slice(-1000)}`);
  return stdout;
}

/**
 * Reads `conformance list --requirements REV`: the client scenarios it
 * scores (under "Client scenarios") and those it runs without scoring (the
 * `[client]` entries under "Run and reported, but never scored").
 */
export function parseRequirementsList(output) {
  const scored = [];
  const notScored = [];
  let section = '';
  for (const line of output.split('\n')) {
    if (/^Client scenarios/u.test(line)) section = 'client';
    else if (/^Server scenarios/u.test(line)) section = 'server';
    else if (/^Run and reported, but never scored/u.test(line)) section = 'not-scored';
    else if (line.trim() === '') {
      if (section !== 'not-scored') section = '';
    } else if (section === 'client') {
      const match = /^ {2}- (\S+)$/u.exec(line);
      if (match) scored.push(match[1]);
    } else if (section === 'not-scored') {
      const match = /^ {4}- (\S+) \[client\]$/u.exec(line);
      if (match) notScored.push(match[1]);
    }
  }
  return { scored, notScored };
}

/** Reads `conformance list --client`: the scenarios tagged `[extension]`, in the tool's order. */
export function parseExtensionTags(output) {
  return output.split('\n').flatMap((line) => {
    const match = /^ {2}- (\S+) \[([^\]]*)\]$/u.exec(line);
    return match && match[2].split(',').includes('extension') ? [match[1]] : [];
  });
}

/** The scenarios of each set, as the installed tool defines them (three `list` calls, no client run). */
export async function listSets() {
  const [current, newest, all] = await Promise.all([
    listOutput(['--requirements', REVISIONS[0]]),
    listOutput(['--requirements', REVISIONS[1]]),
    listOutput(['--client']),
  ]);
  const lists = [parseRequirementsList(current), parseRequirementsList(newest)];
  const sets = {};
  for (const [index, revision] of REVISIONS.entries()) {
    if (lists[index].scored.length === 0) throw new Error(`conformance list --requirements ${revision} names no client scenario`);
    sets[revision] = lists[index].scored;
  }
  const scored = new Set(lists.flatMap((list) => list.scored));
  sets.extensions = [...new Set([...lists.flatMap((list) => list.notScored), ...parseExtensionTags(all)])].filter((name) => !scored.has(name));
  return sets;
}

/** The wire a set's scenarios run at. */
export function wireOf(set) {
  return set === 'extensions' ? EXTENSIONS_WIRE : set;
}

/**
 * Reads expected-checks.json: `{ "2025-11-25": { scenario: checks }, ... }`,
 * the check count each scenario reports when it passes.
 */
export function readExpectedChecks(path = EXPECTED_CHECKS) {
  const parsed = JSON.parse(readFileSync(path, 'utf8'));
  for (const set of SETS) {
    const counts = parsed[set];
    if (counts === null || typeof counts !== 'object') throw new Error(`${path}: "${set}" must map scenario names to check counts`);
    for (const [name, count] of Object.entries(counts)) {
      if (!Number.isInteger(count) || count < 0) throw new Error(`${path}: ${set} ${name} has check count ${JSON.stringify(count)}`);
    }
  }
  const unknown = Object.keys(parsed).filter((key) => !SETS.includes(key));
  if (unknown.length > 0) throw new Error(`${path}: unknown set(s) ${unknown.join(', ')}; known: ${SETS.join(', ')}`);
  return parsed;
}

/**
 * Reads expected-failures-0.2.yml: a `SET:` line per set, then one
 * `- scenario` per line, each with its reason in a `#` comment on the
 * line(s) just above or at the end of the line (the entry format of
 * expected-failures.yml). Returns set → (scenario → reason); an entry
 * without a reason, outside a set, or in an unknown set is an error.
 */
export function readBaseline(path = BASELINE) {
  const entries = new Map(SETS.map((set) => [set, new Map()]));
  let set;
  let comment = [];
  for (const [index, raw] of readFileSync(path, 'utf8').split('\n').entries()) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('#')) {
      comment.push(line.replace(/^#\s*/u, ''));
      continue;
    }
    const header = /^["']?([\w.-]+)["']?:\s*(?:\[\])?\s*(?:#.*)?$/u.exec(line);
    if (header !== null) {
      if (!entries.has(header[1])) throw new Error(`${path}:${index + 1}: unknown set "${header[1]}"; known: ${SETS.join(', ')}`);
      set = header[1];
      comment = [];
      continue;
    }
    const entry = /^-\s+([^\s#]+)\s*(?:#\s*(.*))?$/u.exec(line);
    if (entry === null) throw new Error(`${path}:${index + 1}: expected "SET:" or "- scenario", got "${line}"`);
    if (set === undefined) throw new Error(`${path}:${index + 1}: ${entry[1]} is listed before any "SET:" line`);
    const reason = [...comment, entry[2] ?? ''].join(' ').trim();
    if (reason === '') throw new Error(`${path}:${index + 1}: ${entry[1]} has no comment saying why it fails`);
    entries.get(set).set(entry[1], reason);
    comment = [];
  }
  return entries;
}

/**
 * The client's own last words: the tool prints a failed client's stderr
 * between `Stderr:` and its `Checks:` list. Up to three lines, errors first.
 */
function clientStderr(output) {
  const start = output.indexOf('\nStderr:\n');
  if (start === -1) return [];
  const end = output.indexOf('\nChecks:\n', start);
  const lines = output
    .slice(start + '\nStderr:\n'.length, end === -1 ? undefined : end)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^Client timed out/u.test(line));
  const errors = lines.filter((line) => /error/iu.test(line));
  const picked = (errors.length > 0 ? errors : lines).slice(0, 3);
  return picked.length > 0 ? [`client stderr: ${picked.join(' | ').slice(0, 500)}`] : [];
}

// The tool colours its check lines; the runner reads them plain.
const stripAnsi = (text) => text.replace(/\u001b\[[0-9;]*m/gu, '');

/** Runs one scenario at `wire` against `command` (a fresh state dir under `root` for mcp-fleet). */
async function runOnce(name, wire, command, root) {
  const stateDir = mkdtempSync(join(root, 'run-'));
  const client = command ?? connectCommand(stateDir);
  const args = ['client', '--command', client, '--scenario', name, '--spec-version', wire, '--force', '--timeout', String(SCENARIO_TIMEOUT_MS)];
  const { code, stdout, stderr } = await conformance(args);
  const output = stripAnsi(`${stdout}\n${stderr}`);
  const result = parseScenario(name, code, output);
  if (/^SKIPPED: /mu.test(output)) result.reasons.push('the tool skipped the scenario');
  result.reasons.push(...clientStderr(output));
  return { ...result, checks: result.passed + result.failed + result.warnings };
}

/** Runs one scenario of `set`; runs it once more when it reports fewer checks than expected. */
async function runScenario({ set, name }, expected, command, root) {
  const wire = wireOf(set);
  const first = await runOnce(name, wire, command, root);
  const want = expected[set]?.[name];
  if (want === undefined || first.checks >= want) return { set, wire, ...first, expected: want, attempts: [first.checks] };
  const second = await runOnce(name, wire, command, root);
  return { set, wire, ...second, expected: want, attempts: [first.checks, second.checks] };
}

const clean = (scenario) => scenario.ok && scenario.failed === 0 && scenario.warnings === 0;

/**
 * Judges one scenario: `pass`, `expected-failure` (listed in the baseline),
 * or a problem — `failed` (a failed or warning check, or the client did not
 * behave), `short` (passed but fewer checks than expected, twice), `stale`
 * (more checks than expected-checks.json says), `unrecorded` (no count).
 */
function judge(scenario, baseline) {
  const listed = baseline.get(scenario.set)?.has(scenario.name) ?? false;
  if (!clean(scenario)) return listed ? 'expected-failure' : 'failed';
  if (scenario.expected === undefined) return 'unrecorded';
  if (scenario.checks < scenario.expected) return listed ? 'expected-failure' : 'short';
  if (scenario.checks > scenario.expected) return 'stale';
  return listed ? 'stale-baseline' : 'pass';
}

/**
 * Runs the sets against `mcp-fleet connect` (or `command`) and judges every
 * scenario against expected-checks.json and the baseline. A scenario that
 * two sets share runs once per set, at each set's wire.
 */
export async function runRequirements({
  sets = SETS,
  scenarios,
  command,
  jobs = JOBS,
  expected = readExpectedChecks(),
  baseline = readBaseline(),
} = {}) {
  const unknown = sets.filter((set) => !SETS.includes(set));
  if (unknown.length > 0) throw new Error(`unknown set(s): ${unknown.join(', ')}; known: ${SETS.join(', ')}`);
  if (!(Number.isInteger(jobs) && jobs >= 1 && jobs <= JOBS)) throw new Error(`--jobs must be 1 to ${JOBS}`);
  const listed = await listSets();
  const problems = [];
  for (const set of sets) {
    const names = new Set(listed[set]);
    for (const name of Object.keys(expected[set] ?? {})) {
      if (!names.has(name)) problems.push(`${set} ${name}: in expected-checks.json but the tool does not list it; remove it`);
    }
    for (const name of baseline.get(set)?.keys() ?? []) {
      if (!names.has(name)) problems.push(`${set} ${name}: in expected-failures-0.2.yml but the tool does not list it; remove it`);
    }
  }
  const wanted = scenarios === undefined ? undefined : new Set(scenarios);
  const runs = sets.flatMap((set) => listed[set].filter((name) => wanted === undefined || wanted.has(name)).map((name) => ({ set, name })));
  if (runs.length === 0) throw new Error(`no scenario to run in ${sets.join(', ')}${wanted ? ` named ${[...wanted].join(', ')}` : ''}`);
  const root = mkdtempSync(join(tmpdir(), 'mcp-fleet-requirements-'));
  try {
    const results = await pool(runs, jobs, (run) => runScenario(run, expected, command, root));
    for (const result of results) result.verdict = judge(result, baseline);
    return {
      sets: sets.map((set) => {
        const members = results.filter((result) => result.set === set);
        return { set, wire: wireOf(set), ...tally(members, expected[set] ?? {}), scenarios: members };
      }),
      problems,
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

function tally(scenarios, expected) {
  const sum = (key) => scenarios.reduce((total, scenario) => total + scenario[key], 0);
  return {
    passed: scenarios.filter((scenario) => scenario.verdict === 'pass').length,
    failed: scenarios.filter((scenario) => scenario.verdict !== 'pass').length,
    checks: { passed: sum('passed'), failed: sum('failed'), warnings: sum('warnings'), total: sum('checks') },
    expectedChecks: scenarios.reduce((total, scenario) => total + (expected[scenario.name] ?? 0), 0),
  };
}

/** Whether the run is clean: every scenario passes (or fails as listed) with its expected check count. */
export function isClean(report) {
  return report.problems.length === 0 && report.sets.every((set) => set.scenarios.every((s) => s.verdict === 'pass' || s.verdict === 'expected-failure'));
}

const NOTES = {
  failed: (s) =>
    `FAILED: ${s.failed} failed, ${s.warnings} warnings${s.failed + s.warnings === 0 ? ', but the client or the tool did not finish cleanly' : ''} (${s.checks} checks, expected ${s.expected ?? '?'})`,
  short: (s) => `FEWER CHECKS: ${s.checks}, expected ${s.expected}, on each of ${s.attempts.length} runs (${s.attempts.join(', ')})`,
  stale: (s) => `STALE expected-checks.json: ${s.checks} checks, the file says ${s.expected}`,
  unrecorded: (s) => `UNRECORDED: ${s.checks} checks; add "${s.name}": ${s.checks} under "${s.set}" in expected-checks.json`,
  'stale-baseline': (s) => `STALE baseline entry: passes now; remove it from expected-failures-0.2.yml under ${s.set}`,
  'expected-failure': () => 'expected failure (expected-failures-0.2.yml)',
};

/** The report as printed: a line per scenario (notes below it), a total per set, then the problems. */
export function formatReport(report) {
  const lines = [];
  for (const set of report.sets) {
    for (const s of set.scenarios) {
      lines.push(`scenario ${s.name} (${set.set}): ${s.passed} passed, ${s.failed} failed, ${s.warnings} warnings`);
      if (s.verdict === 'pass') {
        if (s.attempts.length > 1) lines.push(`  retried: ${s.attempts.join(' then ')} checks`);
        continue;
      }
      lines.push(`  ${NOTES[s.verdict](s)}`);
      if (s.verdict !== 'expected-failure') for (const reason of s.reasons) lines.push(`    ${reason.startsWith('- ') ? reason : `- ${reason}`}`);
    }
  }
  for (const set of report.sets) {
    const { passed, failed, checks, expectedChecks } = set;
    lines.push(
      `requirements ${set.set} (wire ${set.wire}): ${passed} passed, ${failed} failed of ${passed + failed} scenarios; ` +
        `${checks.total} checks (${checks.passed} passed, ${checks.failed} failed, ${checks.warnings} warnings), expected ${expectedChecks}`,
    );
  }
  for (const problem of report.problems) lines.push(`PROBLEM: ${problem}`);
  return lines.join('\n');
}

const USAGE = `usage: requirements.mjs [--set ${SETS.join('|')}]... [--scenario NAME]... [--command CMD] [--jobs 1-${JOBS}] [--json]`;

function parseArgs(argv) {
  const options = { sets: [], scenarios: [], json: false };
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1];
    if (argv[i] === '--set' && value !== undefined) options.sets.push(argv[++i]);
    else if (argv[i] === '--scenario' && value !== undefined) options.scenarios.push(argv[++i]);
    else if (argv[i] === '--command' && value !== undefined) options.command = argv[++i];
    else if (argv[i] === '--jobs' && value !== undefined) options.jobs = Number(argv[++i]);
    else if (argv[i] === '--json') options.json = true;
    else throw new Error(USAGE);
  }
  return {
    sets: options.sets.length > 0 ? options.sets : SETS,
    scenarios: options.scenarios.length > 0 ? options.scenarios : undefined,
    command: options.command,
    jobs: options.jobs,
    json: options.json,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const { json, ...options } = parseArgs(process.argv.slice(2));
    const report = await runRequirements(options);
    console.log(json ? JSON.stringify(report, null, 2) : formatReport(report));
    process.exitCode = isClean(report) ? 0 : 1;
  } catch (err) {
    console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 2;
  }
}
