// THE KILL TEST: a writer SIGKILLed at random moments never leaves a torn,
// mixed or widened config file behind (SPEC §2: "the file is always either
// the old or the new whole document").
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ServerConfigInput } from '../../src/config/schema.js';
import { createConfigStore } from '../../src/config/store.js';
import { DOC_A, DOC_B } from './fixtures/documents.js';
import { modeOf, recordingLogger, removeDirs, tempDir, tempFiles } from './helpers.js';

const KILLS = 51;
/** Children run in parallel lanes, each on its own state dir, to keep the wall time low. */
const LANES = 3;
const fixture = fileURLToPath(new URL('./fixtures/save-loop.ts', import.meta.url));
const dirs: string[] = [];
/** Writers not yet reaped, killed in afterAll should the test time out mid-lane. */
const live = new Set<ChildProcess>();
let childArgs: string[];

beforeAll(async () => {
  // tsx needs ~0.7 s per start on a loaded 2-core box; a bundle of the same
  // sources starts in ~0.25 s. esbuild ships with tsx; without it, use tsx.
  try {
    const esbuild = await import('esbuild');
    const outDir = await tempDir('mcp-fleet-kill-bundle-');
    dirs.push(outDir);
    const outfile = path.join(outDir, 'save-loop.mjs');
    await esbuild.build({
      entryPoints: [fixture],
      bundle: true,
      minify: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile,
      logLevel: 'error',
    });
    childArgs = [outfile];
  } catch {
    childArgs = ['--import', 'tsx', fixture];
  }
});
afterAll(async () => {
  for (const child of live) child.kill('SIGKILL');
  await removeDirs(dirs);
});

// A save writes each entry as given, less the fields that hold their default (these documents spell out none).
const expected = (doc: Array<[string, ServerConfigInput]>) => ({ servers: Object.fromEntries(doc) });
const A = expected(DOC_A);
const B = expected(DOC_B);

/** Starts a writer and resolves once its first save is on disk. */
function startWriter(stateDir: string) {
  const child = spawn(process.execPath, [...childArgs, stateDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  child.once('exit', () => live.delete(child));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`writer exited (${code}) before saving: ${stderr}`)));
  });
  return { child, ready, exited };
}

it(`leaves A or B, whole and 0600, after each of ${KILLS} SIGKILLs`, async () => {
  const seen = { A: 0, B: 0, killedMidWrite: 0 };
  let failed = false;

  async function runLane(stateDir: string): Promise<void> {
    const file = path.join(stateDir, 'mcp_servers.json');
    for (let k = 0; k < KILLS / LANES && !failed; k++) {
      const writer = startWriter(stateDir);
      try {
        await writer.ready;
        // Up to a few saves' time (a save of these documents takes ~0.1 s on a loaded machine): kills land
        // before, inside and between later saves, A's and B's alike.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 400));
      } finally {
        writer.child.kill('SIGKILL');
        await writer.exited;
      }
      const doc: unknown = JSON.parse(await readFile(file, 'utf8'));
      if (isDeepStrictEqual(doc, A)) seen.A++;
      else if (isDeepStrictEqual(doc, B)) seen.B++;
      else expect.fail(`after kill ${k} the file is neither A nor B`);
      expect(await modeOf(file)).toBe(0o600);
      // A temp file left by the dead writer proves this kill landed inside a save.
      if ((await tempFiles(stateDir)).length > 0) seen.killedMidWrite++;
    }
  }

  const laneDirs = await Promise.all(Array.from({ length: LANES }, () => tempDir('mcp-fleet-kill-')));
  dirs.push(...laneDirs);
  const lanes = await Promise.allSettled(
    laneDirs.map((stateDir) =>
      runLane(stateDir).catch((err: unknown) => {
        failed = true; // stop the other lanes at their next kill, so no writer outlives the test
        throw err;
      }),
    ),
  );
  for (const lane of lanes) if (lane.status === 'rejected') throw lane.reason;

  expect(seen.A + seen.B).toBe(KILLS);
  expect(seen.A).toBeGreaterThan(0);
  expect(seen.B).toBeGreaterThan(0);
  expect(seen.killedMidWrite).toBeGreaterThan(0);

  // The next save clears what the dead writers left.
  for (const stateDir of laneDirs) {
    await createConfigStore({ stateDir: () => stateDir, logger: recordingLogger() }).save(DOC_A);
    expect(await tempFiles(stateDir)).toEqual([]);
  }
  // Each kill respawns a writer: on a busy 2-core machine this takes a while, and that is not a failure.
}, 120_000);
