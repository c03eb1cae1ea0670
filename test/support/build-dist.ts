// Vitest globalSetup: the tests that spawn bin/mcp-fleet.js, import 'mcp-fleet'
// or pack the package run dist/, what ships. This builds it once per test run,
// and only when it is missing or older than the sources, the same way
// `npm run build` does (tsc -p tsconfig.build.json, then every non-.ts file
// under src/ copied beside the JavaScript).
//
// Two differences from `npm run build`, both because several test runs may
// share one working tree:
// - it builds into a directory of its own and swaps it in with two renames, so
//   a run already using dist/ never reads a half-written file;
// - it accepts a build with type errors (tsc exit 2: the files were emitted):
//   the tests run on any source that compiles, as they did through tsx; type
//   errors are `npm run typecheck`'s to report. They are printed here too.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIST = join(ROOT, 'dist');
/** The file whose mtime says when dist/ was built (set to the build's start below). */
const STAMP = join(DIST, 'cli.js');
const INPUTS = [join(ROOT, 'src'), join(ROOT, 'tsconfig.json'), join(ROOT, 'tsconfig.build.json')];

export default function setup(): void {
  ensureDist();
}

/** Builds dist/ unless it is newer than every file and directory under src/ and both tsconfigs. */
export function ensureDist(): void {
  if (existsSync(STAMP) && newestMtime(INPUTS) < statSync(STAMP).mtimeMs) return;
  const started = new Date();
  const work = join(ROOT, 'node_modules', '.cache', 'mcp-fleet-build');
  mkdirSync(work, { recursive: true });
  const staging = mkdtempSync(join(work, 'dist-'));
  try {
    compileInto(staging);
    cpSync(join(ROOT, 'src'), staging, { recursive: true, filter: (path) => !path.endsWith('.ts') });
    // A source saved while tsc ran is newer than this, so the next run builds again.
    utimesSync(join(staging, 'cli.js'), started, started);
    swapIn(staging);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

function compileInto(outDir: string): void {
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: ROOT, encoding: 'utf8' });
  const output = `${run.stdout}${run.stderr}`.trim();
  // 0: clean; 2: diagnostics, but every file was emitted; anything else emitted nothing usable.
  if ((run.status !== 0 && run.status !== 2) || !existsSync(join(outDir, 'cli.js'))) {
    throw new Error(`building dist/ failed (tsc exit ${run.status ?? run.signal}):\n${output}`);
  }
  if (run.status === 2) process.stderr.write(`dist/ built with type errors (the tests run anyway; npm run typecheck fails):\n${output}\n`);
}

/** Replaces dist/ by `staging`; another run swapping at the same moment wins or loses whole. */
function swapIn(staging: string): void {
  const retired: string[] = [];
  try {
    for (let attempt = 0; ; attempt += 1) {
      const old = `${staging}-old-${attempt}`;
      try {
        renameSync(DIST, old);
        retired.push(old);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      try {
        renameSync(staging, DIST);
        return;
      } catch (error) {
        // Another run put its dist/ there between our two renames: retire it too.
        const code = (error as NodeJS.ErrnoException).code;
        if (attempt >= 5 || (code !== 'ENOTEMPTY' && code !== 'EEXIST')) throw error;
      }
    }
  } finally {
    for (const old of retired) rmSync(old, { recursive: true, force: true });
  }
}

function newestMtime(paths: string[]): number {
  let newest = 0;
  for (const path of paths) {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat === undefined) continue; // deleted while we looked (an editor's temp file)
    newest = Math.max(newest, stat.mtimeMs);
    if (stat.isDirectory()) newest = Math.max(newest, newestMtime(readdirSync(path).map((name) => join(path, name))));
  }
  return newest;
}
