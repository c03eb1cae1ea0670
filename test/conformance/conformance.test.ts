// The MCP conformance suite's client scenarios (0.1.16) against `mcp-fleet
// connect`, through the same runner CI and developers use
// (test/conformance/run.mjs): every scenario of every suite passes, the
// extensions included; a failure could only be excused by an entry in
// expected-failures.yml, with a reason, and there is none.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const RUNNER = resolve('test/conformance/run.mjs');
const SUITES = ['core', 'backcompat', 'auth', 'draft', 'extensions'];
// Each scenario is a client process plus the tool's mock servers, three at a time.
const TIMEOUT_MS = 10 * 60_000;

interface SuiteCount {
  passed: number;
  failed: number;
}

function runRunner(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [RUNNER], { timeout: TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** `conformance: N passed, M failed (suite; K checks)` lines, by suite. */
function counts(stdout: string): Map<string, SuiteCount> {
  const bySuite = new Map<string, SuiteCount>();
  for (const match of stdout.matchAll(/^conformance: (\d+) passed, (\d+) failed \((\w+)[;:,]/gm)) {
    bySuite.set(match[3]!, { passed: Number(match[1]), failed: Number(match[2]) });
  }
  return bySuite;
}

describe('MCP conformance suite (client scenarios)', () => {
  it(
    'passes every scenario of core, backcompat, auth, draft and extensions',
    async () => {
      const run = await runRunner();
      const bySuite = counts(run.stdout);
      // On failure the runner's report names each unexpected scenario and its failed checks.
      expect(run.stderr + run.stdout).not.toMatch(/UNEXPECTED|STALE|^error:/m);
      expect(run.code).toBe(0);
      for (const suite of SUITES) {
        expect(bySuite.get(suite), suite).toMatchObject({ failed: 0 });
        expect(bySuite.get(suite)!.passed, suite).toBeGreaterThan(0);
      }
      expect(run.stdout).not.toMatch(/^ {2}expected failure: /m);
      expect(bySuite.get('total')).toMatchObject({ failed: 0 });
    },
    TIMEOUT_MS + 30_000,
  );
});
