// The documentation is tested: every block of README.md and docs/ marked
// `js runnable`, `ts runnable` or `sh runnable` runs, one test each, in a
// project where the packed tarball is installed (see runner.ts for what each
// kind gets). First, the harness itself on test/docs/fixtures/sample.md: its
// good examples pass and each broken one fails the way it should.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installPackedProject, ROOT } from '../support/packed-project.js';
import { documentationExamples, extractExamples, type DocExample } from './extract.js';
import { assertPassed, ExampleRunner, explain, type ExampleOutcome } from './runner.js';

const SAMPLE = 'test/docs/fixtures/sample.md';
const sample = extractExamples(readFileSync(join(ROOT, SAMPLE), 'utf8'), SAMPLE);
const documented = documentationExamples(ROOT);

let runner: ExampleRunner | undefined;

beforeAll(async () => {
  runner = new ExampleRunner(await installPackedProject('mcp-fleet-doctest-'));
}, 300_000);

afterAll(async () => {
  await runner?.close();
  runner?.project.cleanup();
});

/** The sample's example at `line`. */
function at(line: number): DocExample {
  const example = sample.find((candidate) => candidate.line === line);
  if (!example) throw new Error(`${SAMPLE} has no runnable example at line ${line}`);
  return example;
}

/** A process's state letter from /proc (`R`, `S`, `Z`…), or `gone`. */
function processState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '';
  } catch {
    return 'gone';
  }
}

async function run(example: DocExample, timeoutMs?: number): Promise<ExampleOutcome> {
  if (!runner) throw new Error('the packed project was not installed (see beforeAll)');
  return runner.run(example, { timeoutMs });
}

describe('the harness, on the sample page', { timeout: 180_000 }, () => {
  it('runs a js example with its packages on a real server', async () => {
    const outcome = await run(at(12));
    assertPassed(outcome);
    expect(outcome.stdout).toBe('Echo: from a js example\n');
  });

  it('type-checks a ts example against the installed declarations, then runs it', async () => {
    const outcome = await run(at(37));
    assertPassed(outcome);
    expect(outcome.stdout).toMatch(/^ready \d+ tools, first memory__\w+\n$/);
  });

  it('runs an sh example with mcp-fleet on PATH against a worker on the demo config', async () => {
    expect(await runner!.workerReadyLine()).toMatch(/^3 of 3 enabled servers ready/);
    const outcome = await run(at(68));
    assertPassed(outcome);
    expect(outcome.stdout).toMatch(/^everything\b.*ready/m);
    expect(outcome.stdout).toContain('memory__read_graph');
  });

  it('fails a js example that throws, with its output', async () => {
    const outcome = await run(at(76));
    expect([outcome.passed, outcome.failure, outcome.exitCode]).toEqual([false, 'exit', 1]);
    expect(outcome.stdout).toBe('about to fail\n');
    expect(outcome.stderr).toContain('Error: this example is broken on purpose');
    expect(() => assertPassed(outcome)).toThrow(`${SAMPLE}:76 (js): exited with code 1`);
    expect(explain(outcome)).toContain('stderr:\n');
  });

  it('fails a ts example on its type error, before running it', async () => {
    const outcome = await run(at(83));
    expect([outcome.passed, outcome.failure]).toEqual([false, 'typecheck']);
    expect(outcome.stdout).toMatch(/\.ts\(4,7\): error TS2322: Type '.*\[\]' is not assignable to type 'number'/);
    expect(outcome.stdout).not.toContain('type-checked anyway');
  });

  it('fails an sh example at its first failing line', async () => {
    const outcome = await run(at(92));
    expect([outcome.passed, outcome.failure, outcome.exitCode]).toEqual([false, 'exit', 1]);
    expect(outcome.stdout).toBe('first line runs\n');
    expect(outcome.stderr).toMatch(/^error: no running worker for .*no-worker-here/m);
  });

  it('fails an example that exits 0 but leaves a process running, and kills it', async () => {
    const outcome = await run(at(100));
    expect([outcome.passed, outcome.failure, outcome.exitCode]).toEqual([false, 'left-processes', 0]);
    const pid = Number(/^left (\d+) behind$/m.exec(outcome.stdout)?.[1]);
    expect(outcome.leftBehind).toEqual([`${pid} ${process.execPath} -e setInterval(() => {}, 1000)`]);
    // Killed: gone, or a zombie until init reaps it.
    await expect.poll(() => processState(pid), { timeout: 5_000 }).toMatch(/^(gone|Z)$/);
  });

  it('fails an example that does not exit within the bound, and kills it', async () => {
    const outcome = await run(at(110), 2_000);
    expect([outcome.passed, outcome.failure, outcome.signal]).toEqual([false, 'timeout', 'SIGKILL']);
    expect(outcome.message).toBe('did not exit within 2 s (killed)');
  });

  it('fails an example whose `// npm install` names a package the repository does not have', async () => {
    const outcome = await run(at(116));
    expect([outcome.passed, outcome.failure]).toEqual([false, 'packages']);
    expect(outcome.message).toBe("`// npm install` names no-such-package-for-mcp-fleet, not in the repository's node_modules: add it to devDependencies");
  });
});

// Bound: the worker's start (first sh example), tsc (ts) and the example's own 60 s.
describe('README.md and docs/', { timeout: 300_000 }, () => {
  for (const example of documented) {
    it(example.name, async () => assertPassed(await run(example)));
  }

  it(`lists ${documented.length} runnable examples, each named by file and line`, () => {
    expect(new Set(documented.map((example) => example.name)).size).toBe(documented.length);
    for (const example of documented) expect(example.name).toMatch(/^(README\.md|docs\/.+\.md):\d+ \((js|ts|sh)\)$/);
  });

  it('the README shows the library as a runnable example, and the CLI docs a runnable session', () => {
    expect(documented.some((example) => example.file === 'README.md' && example.lang === 'js')).toBe(true);
    expect(documented.some((example) => example.file === 'docs/http-and-cli.md' && example.lang === 'sh')).toBe(true);
  });
});
