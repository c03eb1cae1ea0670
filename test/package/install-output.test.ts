// What a user sees when installing the package: `npm pack`, then
// `npm install ./mcp-fleet-<version>.tgz` in an empty project, and npm's whole
// output read. It must not warn: no EBADENGINE (a dependency refusing the Node
// versions package.json accepts), no install-scripts prompt (a lifecycle
// script that would run in the user's project). The packed package.json ships
// no prepare/install script, and every installed dependency accepts the
// oldest Node the package declares, whatever Node runs this test.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string; engines: { node: string } };
/** Scripts npm runs in the project that installs a package (prepare: for git and directory installs). */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'preprepare', 'prepare', 'postprepare'];

/** The environment of a user's shell: no npm_config_* inherited from the `npm test` running this. */
function userEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.toLowerCase().startsWith('npm_')) delete env[key];
  return env;
}

let temp: string;
let app: string;
let tarball: string;
let output: string;

beforeAll(async () => {
  temp = mkdtempSync(join(tmpdir(), 'mcp-fleet-install-'));
  // --ignore-scripts: no `prepack` rebuild of the dist/ that other test files are running right now (vitest built it).
  const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', temp], { cwd: ROOT, env: userEnv(), maxBuffer: 64 << 20 });
  const [report] = JSON.parse(stdout) as [{ filename: string }];
  app = join(temp, 'app');
  mkdirSync(app);
  tarball = join(app, report.filename);
  await run('cp', [join(temp, report.filename), tarball]);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  // As a user types it; --prefer-offline takes what the npm cache holds, the registry the rest.
  // loglevel notice is npm's default, stated so a user config cannot hide the warnings.
  const install = await run('npm', ['install', `./${report.filename}`, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel', 'notice'], {
    cwd: app,
    env: userEnv(),
    timeout: 240_000,
    maxBuffer: 64 << 20,
  });
  output = `${install.stdout}${install.stderr}`;
}, 300_000);

afterAll(() => {
  if (temp) rmSync(temp, { recursive: true, force: true });
});

describe('npm install ./mcp-fleet-<version>.tgz in an empty project', () => {
  it('prints no warning: no EBADENGINE, no install-scripts prompt', () => {
    const lines = output.split('\n');
    expect(lines.filter((line) => /EBADENGINE/.test(line))).toEqual([]);
    expect(lines.filter((line) => /install-scripts|allowScripts|install scripts/i.test(line))).toEqual([]);
    expect(lines.filter((line) => /^npm (warn|error|WARN|ERR)/.test(line))).toEqual([]);
    expect(output).toMatch(/added \d+ packages/);
    expect(existsSync(join(app, 'node_modules', pkg.name, 'dist', 'index.js'))).toBe(true);
  });

  it('ships no script that runs in the project installing it', async () => {
    const { stdout } = await run('tar', ['-xOzf', tarball, 'package/package.json']);
    const packed = JSON.parse(stdout) as { scripts?: Record<string, string>; engines?: { node?: string } };
    expect(Object.keys(packed.scripts ?? {}).filter((name) => INSTALL_SCRIPTS.includes(name))).toEqual([]);
    expect(packed.engines?.node).toBe(pkg.engines.node);
  });

  it('installs only dependencies whose engines accept the oldest Node the package declares', () => {
    const oldest = /^>=\s*(\d+)\.(\d+)(?:\.(\d+))?$/.exec(pkg.engines.node);
    expect(oldest, `package.json engines.node is ${pkg.engines.node}: expected >=MAJOR.MINOR`).not.toBeNull();
    const version = `${oldest![1]}.${oldest![2]}.${oldest![3] ?? 0}`;
    const semver = npmSemver();
    const refused: string[] = [];
    for (const dir of installedPackages(join(app, 'node_modules'))) {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; version: string; engines?: { node?: string } };
      const range = manifest.engines?.node;
      if (range !== undefined && !semver.satisfies(version, range)) refused.push(`${manifest.name}@${manifest.version} (node ${range})`);
    }
    expect(refused, `on Node ${version}`).toEqual([]);
    // The OpenTelemetry SDK is there, and one copy of the API: the one the SDK and mcp-fleet share.
    expect(existsSync(join(app, 'node_modules', '@opentelemetry', 'sdk-trace-base', 'package.json'))).toBe(true);
    expect(installedPackages(join(app, 'node_modules')).filter((dir) => dir.endsWith(join('@opentelemetry', 'api')))).toHaveLength(1);
  });
});

/** Every package directory under `nodeModules`, nested ones included. */
function installedPackages(nodeModules: string): string[] {
  const out: string[] = [];
  if (!existsSync(nodeModules)) return out;
  for (const entry of readdirSync(nodeModules)) {
    if (entry.startsWith('.')) continue;
    const dirs = entry.startsWith('@') ? readdirSync(join(nodeModules, entry)).map((name) => join(nodeModules, entry, name)) : [join(nodeModules, entry)];
    for (const dir of dirs) {
      if (!existsSync(join(dir, 'package.json'))) continue;
      out.push(dir, ...installedPackages(join(dir, 'node_modules')));
    }
  }
  return out;
}

/** The semver npm itself judges engines with (npm ships it; the project has no semver of its own). */
function npmSemver(): { satisfies(version: string, range: string): boolean } {
  const candidates = [
    join(process.execPath, '..', '..', 'lib', 'node_modules', 'npm', 'package.json'),
    join(process.execPath, '..', 'node_modules', 'npm', 'package.json'),
  ];
  for (const candidate of candidates) {
    try {
      return createRequire(candidate)('semver') as { satisfies(version: string, range: string): boolean };
    } catch {
      // not this layout; the next one
    }
  }
  throw new Error(`npm's semver not found beside ${process.execPath} (looked in ${candidates.join(', ')})`);
}
