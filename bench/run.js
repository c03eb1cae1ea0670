#!/usr/bin/env node
// `npm run bench [-- --quick] [-- --only percall,startup] [-- --reps N] [-- --write]`
//
// Installs bench/'s own dependencies on first use (the peers are never part
// of the main install), then runs each suite in its own fresh process, one
// after the other, and prints one report: the machine, every table, and
// every target with whether it holds. --write also puts that report into
// bench/RESULTS.md (between its "results" markers). Full run: ~22 minutes
// on 2 cores; --quick: ~8.5.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH, '..');
// Lines the peers print that say nothing about the benchmark.
const NOISE = [/SYNCHRONOUS TERMINATION NOTICE/, /MaxListenersExceededWarning/, /Use `node --trace-warnings/];
const SUITES = ['percall', 'concurrency', 'catalog', 'memory', 'startup', 'http', 'fleet', 'search', 'package', 'telemetry', 'bounds', 'users', 'gateway'];

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const value = (name) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const quick = flag('--quick');
const only = value('--only')?.split(',') ?? SUITES;
const reps = value('--reps');
for (const name of only) if (!SUITES.includes(name)) throw new Error(`unknown suite "${name}"; suites: ${SUITES.join(', ')}`);

ensureInstalled();

const results = [];
const loadBefore = os.loadavg();
const started = Date.now();
for (const name of only) {
  process.stderr.write(`\n▶ ${name}${quick ? ' (quick)' : ''}\n`);
  const out = join(os.tmpdir(), `mcp-fleet-bench-${process.pid}-${name}.json`);
  const args = ['--expose-gc', join(BENCH, 'suites', `${name}.js`), '--out', out];
  if (quick) args.push('--quick');
  if (reps) args.push('--reps', reps);
  const load = os.loadavg()[0];
  const code = await runChild(process.execPath, args);
  if (code !== 0) {
    process.stderr.write(`✗ ${name} failed (exit ${code})\n`);
    results.push({ suite: name, failed: true });
    continue;
  }
  const result = JSON.parse(readFileSync(out, 'utf8'));
  result.loadBefore = load;
  result.loadAfter = os.loadavg()[0];
  results.push(result);
  process.stderr.write(`✓ ${name}: ${result.seconds.toFixed(0)} s\n`);
}

const report = render(results, { quick, loadBefore, minutes: (Date.now() - started) / 60000 });
mkdirSync(join(BENCH, 'results'), { recursive: true });
writeFileSync(join(BENCH, 'results', 'latest.json'), JSON.stringify({ machine: machine(), results }, null, 2));
writeFileSync(join(BENCH, 'results', 'latest.md'), report);
process.stdout.write(`\n${report}\n`);
if (flag('--write')) writeResults(report);
process.exitCode = results.some((r) => r.failed) ? 1 : 0;

// ─────────────────────────────────────────────────────────────────────────────

/** `npm ci` in bench/ when its lock changed since the last install (or never installed). */
function ensureInstalled() {
  const lock = join(BENCH, 'package-lock.json');
  const stamp = join(BENCH, 'node_modules', '.bench-lock-hash');
  const hash = createHash('sha256').update(readFileSync(lock)).digest('hex');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === hash) return;
  process.stderr.write('installing the benchmark dependencies (bench/package-lock.json: the peers, autocannon)…\n');
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: BENCH, stdio: 'inherit' });
  writeFileSync(stamp, hash);
}

function runChild(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'pipe'] });
    let pending = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const line of lines) if (!NOISE.some((re) => re.test(line))) process.stderr.write(`${line}\n`);
    });
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

function version(pkg, from = BENCH) {
  try {
    return JSON.parse(readFileSync(join(from, 'node_modules', pkg, 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
}

function machine() {
  const cpu = os.cpus()[0]?.model ?? 'unknown';
  return {
    date: new Date().toISOString(),
    nproc: os.availableParallelism?.() ?? os.cpus().length,
    memoryGiB: os.totalmem() / 1024 ** 3,
    cpu,
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    versions: {
      'mcp-fleet': JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version,
      '@modelcontextprotocol/client (mcp-fleet and raw)': version('@modelcontextprotocol/client', ROOT),
      '@langchain/mcp-adapters': version('@langchain/mcp-adapters'),
      '@langchain/core': version('@langchain/core'),
      '@mastra/mcp': version('@mastra/mcp'),
      '@mastra/core': version('@mastra/core'),
      '@ai-sdk/mcp': version('@ai-sdk/mcp'),
      autocannon: version('autocannon'),
      express: version('express', ROOT),
      xstate: version('xstate', ROOT),
    },
  };
}

function render(results, { quick, loadBefore, minutes }) {
  const m = machine();
  const lines = [
    `Run of ${m.date.slice(0, 16).replace('T', ' ')} UTC${quick ? ' (--quick: fewer repetitions and smaller sizes; not the reference figures)' : ''}, ${minutes.toFixed(1)} min.`,
    '',
    `Machine: ${m.nproc} cores (${m.cpu}), ${m.memoryGiB.toFixed(1)} GiB, ${m.os}; Node ${m.node}; load average ${loadBefore[0].toFixed(2)} at the start.`,
    '',
    `Versions: ${Object.entries(m.versions).map(([k, v]) => `${k} ${v}`).join(', ')}.`,
    '',
  ];
  const allTargets = [];
  for (const [i, result] of results.entries()) {
    if (result.failed) {
      lines.push(`### ${i + 1}. ${result.suite}: FAILED`, '');
      continue;
    }
    lines.push(
      `### ${i + 1}. ${result.title}`,
      '',
      `${result.reps} repetitions, contenders alternating; ${result.seconds.toFixed(0)} s; 1-min load average ${result.loadBefore.toFixed(2)} → ${result.loadAfter.toFixed(2)}.`,
      '',
      result.markdown,
      '',
    );
    allTargets.push(...result.targets);
  }
  const verdict = (t) => (t.pass === null ? '—' : t.pass ? 'holds' : '**missed**');
  lines.push('### Targets', '', '| target | measured | verdict |', '| --- | --- | --- |');
  for (const t of allTargets) lines.push(`| ${t.name} | ${t.value} | ${verdict(t)} |`);
  return lines.join('\n');
}

function writeResults(report) {
  const file = join(BENCH, 'RESULTS.md');
  const start = '<!-- results:start -->';
  const end = '<!-- results:end -->';
  const text = existsSync(file) ? readFileSync(file, 'utf8') : `# Benchmark results\n\n${start}\n${end}\n`;
  if (!text.includes(start) || !text.includes(end)) throw new Error(`${file} has no ${start} … ${end} markers`);
  const next = `${text.slice(0, text.indexOf(start) + start.length)}\n${report}\n${text.slice(text.indexOf(end))}`;
  writeFileSync(file, next);
  process.stderr.write(`wrote the report into ${file}\n`);
}
