// The client requirement sets of the MCP conformance suite 0.2 against
// `mcp-fleet connect`, through test/conformance/requirements.mjs: every
// scenario that `--requirements 2025-11-25` and `--requirements 2026-07-28`
// score, and every extension scenario, passes with the check count recorded
// in expected-checks.json and no failed or warning check. When it fails, the
// assertion lists every scenario that did not pass, with the checks that
// failed. On a loaded machine a mock server may drop a kept-alive socket and
// cut a scenario short: the runner runs a scenario that reports fewer checks
// than expected once more before it counts as failed.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const RUNNER = resolve('test/conformance/requirements.mjs');
const EXPECTED = resolve('test/conformance/expected-checks.json');
// About 60 scenarios, three at a time, some run twice; a few minutes on two cores.
const TIMEOUT_MS = 15 * 60_000;

type Sets = Record<string, Record<string, number>>;

interface ScenarioLine {
  passed: number;
  failed: number;
  warnings: number;
  /** The runner's notes under the line: verdict, failed checks, the client's error. */
  notes: string[];
}

function runRunner(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [RUNNER], { timeout: TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** `scenario NAME (SET): P passed, F failed, W warnings` lines and the indented notes below each, by `SET NAME`. */
function scenarioLines(stdout: string): Map<string, ScenarioLine> {
  const lines = new Map<string, ScenarioLine>();
  let current: ScenarioLine | undefined;
  for (const line of stdout.split('\n')) {
    const match = /^scenario (\S+) \(([^)]+)\): (\d+) passed, (\d+) failed, (\d+) warnings$/u.exec(line);
    if (match) {
      current = { passed: Number(match[3]), failed: Number(match[4]), warnings: Number(match[5]), notes: [] };
      lines.set(`${match[2]} ${match[1]}`, current);
    } else if (current !== undefined && line.startsWith('  ')) {
      current.notes.push(line.trim());
    } else {
      current = undefined;
    }
  }
  return lines;
}

describe('MCP conformance 0.2 requirement sets (client scenarios)', () => {
  it(
    'passes every 2025-11-25, 2026-07-28 and extension scenario with its expected check count and no warning',
    async () => {
      const expected = JSON.parse(readFileSync(EXPECTED, 'utf8')) as Sets;
      expect(Object.keys(expected).sort()).toEqual(['2025-11-25', '2026-07-28', 'extensions']);
      const run = await runRunner();
      expect(run.stderr, 'the runner could not run').not.toMatch(/^error:/mu);
      const seen = scenarioLines(run.stdout);
      const failing: string[] = [];
      for (const [set, counts] of Object.entries(expected)) {
        expect(Object.keys(counts).length, `${set} lists no scenario`).toBeGreaterThan(0);
        for (const [name, checks] of Object.entries(counts)) {
          const line = seen.get(`${set} ${name}`);
          if (line === undefined) {
            failing.push(`${set} ${name}: not run`);
            continue;
          }
          const total = line.passed + line.failed + line.warnings;
          if (line.failed > 0 || line.warnings > 0 || total !== checks || line.notes.some((note) => /^[A-Z]{4}/u.test(note))) {
            const notes = line.notes.length > 0 ? `\n    ${line.notes.join('\n    ')}` : '';
            failing.push(`${set} ${name}: ${line.passed} passed, ${line.failed} failed, ${line.warnings} warnings (expected ${checks} checks)${notes}`);
          }
        }
      }
      // A scenario the runner ran that expected-checks.json does not list, or any other problem it reports.
      for (const key of seen.keys()) {
        const [set, name] = [key.slice(0, key.indexOf(' ')), key.slice(key.indexOf(' ') + 1)];
        if (expected[set]?.[name] === undefined) failing.push(`${set} ${name}: not in expected-checks.json`);
      }
      failing.push(...run.stdout.split('\n').filter((line) => line.startsWith('PROBLEM: ')));
      expect(failing, `scenarios that do not pass, each with the runner's notes:\n${failing.join('\n')}`).toEqual([]);
      expect(run.code).toBe(0);
    },
    TIMEOUT_MS + 30_000,
  );
});
