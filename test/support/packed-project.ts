// The package as users get it: `npm pack` the project and install the tarball
// into an empty project, where nothing can reach tsx or src/. Shared by the
// package tests and the documentation examples, so both test the same install.
//
// Offline: the empty project gets a lockfile made of the root lockfile's
// runtime entries, so `npm ci --offline` takes every dependency, at the very
// version the tests ran with, from the npm cache the root `npm ci` filled (a
// plain `npm install --offline <tarball>` needs registry metadata that the
// cache may not hold). Only a cache missing some tarball goes to the registry.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cleanEnv } from './env.js';

const run = promisify(execFile);

/** The repository's root directory (with a trailing separator). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The repository's package.json: what the tarball is made of. */
export const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  license: string;
  dependencies: Record<string, string>;
  bin: Record<string, string>;
  engines: Record<string, string>;
};

/** Runs a command to completion in `cwd` with the clean environment; rejects on a non-zero exit. */
export function exec(command: string, args: string[], cwd: string, timeout = 120_000) {
  return run(command, args, { cwd, env: cleanEnv(), timeout, maxBuffer: 64 << 20 });
}

/** An empty project with the packed tarball installed. */
export interface PackedProject {
  /** Temporary directory holding the tarball and the project; `cleanup()` removes it. */
  temp: string;
  /** The project: package.json (`"type": "module"`), package-lock.json, node_modules/ with mcp-fleet. */
  app: string;
  /** Every path inside the tarball, as `npm pack` lists them. */
  packed: string[];
  /** Removes `temp` and everything in it. */
  cleanup(): void;
}

interface LockEntry {
  name?: string;
  version?: string;
  resolved?: string;
  link?: boolean;
  dev?: boolean;
  devOptional?: boolean;
}

/**
 * The entry with its tarball URL, which the root lockfile leaves out
 * (omit-lockfile-registry-resolved): with it and the integrity, npm takes the
 * tarball from the cache by its hash and needs no registry metadata.
 */
function withResolved(path: string, entry: LockEntry, registry: string): LockEntry {
  if (entry.resolved || entry.link || !entry.version) return entry;
  const name = entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
  return { ...entry, resolved: `${registry}${name}/-/${name.split('/').at(-1)}-${entry.version}.tgz` };
}

/**
 * Packs the repository (its current dist/) and installs the tarball into a new
 * project under a temporary directory whose name starts with `prefix`.
 */
export async function installPackedProject(prefix: string): Promise<PackedProject> {
  const temp = mkdtempSync(join(tmpdir(), prefix));
  const cleanup = () => rmSync(temp, { recursive: true, force: true });
  try {
    // --ignore-scripts: no `prepare` rebuild of the dist/ that other test files are running right now.
    const { stdout } = await exec('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', temp], ROOT);
    const [report] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
    const tarball = join(temp, report.filename);

    const app = join(temp, 'app');
    mkdirSync(app);
    const spec = `file:${relative(app, tarball)}`;
    const rootLock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
    const registry = (await exec('npm', ['config', 'get', 'registry'], ROOT)).stdout.trim().replace(/\/?$/, '/');
    const runtime = Object.entries(rootLock.packages)
      .filter(([path, entry]) => path.startsWith('node_modules/') && !entry.dev && !entry.devOptional)
      .map(([path, entry]) => [path, withResolved(path, entry, registry)]);
    const packages = {
      '': { name: 'app', dependencies: { [pkg.name]: spec } },
      [`node_modules/${pkg.name}`]: {
        version: pkg.version,
        resolved: spec,
        integrity: `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`,
        license: pkg.license,
        dependencies: pkg.dependencies,
        bin: pkg.bin,
        engines: pkg.engines,
      },
      ...Object.fromEntries(runtime),
    };
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module', dependencies: { [pkg.name]: spec } }));
    writeFileSync(join(app, 'package-lock.json'), JSON.stringify({ name: 'app', lockfileVersion: 3, requires: true, packages }));
    await exec('npm', ['ci', '--offline', '--no-audit', '--no-fund'], app).catch(async (error: { stderr?: string }) => {
      // A cache that never held some tarball (cleaned, or another cache filled node_modules): fetch only those.
      if (!error.stderr?.includes('ENOTCACHED')) throw error;
      console.warn('npm ci --offline: a dependency is not in the npm cache; installing with --prefer-offline');
      await exec('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund'], app);
    });
    return { temp, app, packed: report.files.map((file) => file.path), cleanup };
  } catch (error) {
    cleanup();
    throw error;
  }
}
