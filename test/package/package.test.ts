// The package as users get it: `npm pack` the project, install the tarball into
// an empty project (test/support/packed-project.ts, offline), and there import
// it from plain Node, type-check a strict consumer against its declarations,
// run the `mcp-fleet` binary and a worker on a real server. Nothing in that
// project can reach tsx or src/.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { cleanEnv } from '../support/env.js';
import { exec, installPackedProject, pkg, ROOT, type PackedProject } from '../support/packed-project.js';

const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

let project: PackedProject | undefined;
let temp: string;
let app: string;
let packed: string[];
const workers: ChildProcess[] = [];

beforeAll(async () => {
  project = await installPackedProject('mcp-fleet-package-');
  ({ temp, app, packed } = project);
}, 300_000);

afterAll(() => {
  for (const child of workers) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  project?.cleanup();
});

/** A state dir whose only server is the healthy fixture, started with this Node by absolute path. */
function stateDir(): string {
  const dir = mkdtempSync(join(temp, 'state-'));
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers: { healthy: { type: 'local', command: fixtureCommand('healthy') } } }));
  return dir;
}

/** Every file under `dir`, relative to it, with `/` separators. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name), `${prefix}${entry.name}/`) : [`${prefix}${entry.name}`],
  );
}

describe('the packed package', { timeout: 180_000 }, () => {
  it('holds the compiled code with its declarations, every non-TypeScript file of src/, the diagrams; no source', () => {
    // Copied as they are: the management page's assets (dist/http/ui/) and data files read through import.meta.url.
    const assets = filesUnder(join(ROOT, 'src')).filter((file) => !file.endsWith('.ts'));
    expect(assets).toEqual(expect.arrayContaining(['http/ui/index.html', 'http/ui/app.js', 'http/ui/style.css']));
    for (const file of assets) expect(packed).toContain(`dist/${file}`);
    const compiled = packed.filter((path) => path.startsWith('dist/') && path.endsWith('.js') && !assets.includes(path.slice('dist/'.length)));
    for (const file of compiled) expect(packed).toContain(file.replace(/\.js$/, '.d.ts'));
    expect(packed).toEqual(
      expect.arrayContaining(['package.json', 'README.md', 'bin/mcp-fleet.js', 'dist/index.js', 'dist/index.d.ts', 'dist/fleet.js', 'dist/fleet.d.ts', 'dist/cli.js']),
    );
    expect(packed).toEqual(expect.arrayContaining(['diagrams/server.svg', 'diagrams/registry.svg']));
    // The documentation ships, so the README's links work from node_modules; notes not yet folded into it do not.
    expect(packed).toEqual(expect.arrayContaining(['docs/README.md', 'docs/contract.md', 'docs/library.md', 'docs/ui.png']));
    expect(packed.filter((path) => path.startsWith('docs/_incoming/'))).toEqual([]);
    expect(packed.filter((path) => /^(src|test|bench|examples)\//.test(path) || (path.endsWith('.ts') && !path.endsWith('.d.ts')))).toEqual([]);
    // The generators of the search tables (src/catalog/search/build-*.ts) need dev dependencies: not shipped.
    expect(packed.filter((path) => /\/build-[^/]*\.js$/.test(path))).toEqual([]);
    // Installed from it: no TypeScript loader anywhere in the tree (tsx is a devDependency).
    expect(existsSync(join(app, 'node_modules', 'tsx'))).toBe(false);
  });

  it('imports from plain Node ESM and runs a host on a real server; express loads with the first management app and pg with the first database, not the import', async () => {
    const script = `
      import { createRequire } from 'node:module';
      import { createManagementApp, createMcpHost } from 'mcp-fleet';
      import { openSharedStores } from 'mcp-fleet/fleet';
      const loaded = (name) => Object.keys(createRequire(import.meta.url).cache).some((path) => path.includes('/node_modules/' + name + '/'));
      const expressLoaded = () => loaded('express');
      const afterImport = expressLoaded();
      const host = createMcpHost({ stateDir: ${JSON.stringify(stateDir())} });
      await host.start();
      await host.settled();
      const result = await host.callTool('healthy__echo', { text: 'from the package' });
      const management = createManagementApp(host, { token: 'package-test-token-0123456789abcdef' });
      console.log(JSON.stringify({
        state: host.status()[0].state,
        text: result.content[0].text,
        fleet: typeof openSharedStores,
        express: [afterImport, expressLoaded(), typeof management.listen],
        pg: loaded('pg'),
      }));
      await host.shutdown();`;
    const { stdout } = await exec(process.execPath, ['--input-type=module', '-e', script], app, 60_000);
    expect(JSON.parse(stdout.trim())).toEqual({
      state: 'ready',
      text: 'from the package',
      fleet: 'function',
      express: [false, true, 'function'],
      pg: false,
    });
  });

  it('type-checks a strict NodeNext consumer against its declarations', async () => {
    // The declarations name Express's (createManagementApp) and pg's (mcp-fleet/fleet) types: their
    // @types come with the package. A consumer adds @types/node as any Node project does (here a
    // link, unless the @types above brought it already).
    for (const types of ['express', 'pg']) expect(existsSync(join(app, 'node_modules', '@types', types)), `@types/${types}`).toBe(true);
    const nodeTypes = join(app, 'node_modules', '@types', 'node');
    if (!existsSync(nodeTypes)) {
      mkdirSync(join(app, 'node_modules', '@types'), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), nodeTypes, 'dir');
    }
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, types: ['node'] },
        files: ['consumer.ts'],
      }),
    );
    writeFileSync(
      join(app, 'consumer.ts'),
      `import { createMcpHost, toOpenAITools, type AgentTool, type AgentToolResult, type McpHost } from 'mcp-fleet';
import { openSharedStores, type SharedStoresOptions } from 'mcp-fleet/fleet';
// @ts-expect-error: only the exported entry points resolve
import { createMcpHost as internal } from 'mcp-fleet/dist/host.js';

const host: McpHost = createMcpHost({ stateDir: 'state' });
const tools: AgentTool[] = host.tools();
const result: Promise<AgentToolResult> = host.callTool('files__read', { path: 'a' });
// @ts-expect-error: the declarations are real types, not any
host.callTool(42);
export const forModel = toOpenAITools(tools);
export type Options = SharedStoresOptions;
export { internal, openSharedStores, result };
`,
    );
    const checked = await exec(process.execPath, [TSC, '-p', 'tsconfig.json'], app).catch((error: { stdout: string }) => error);
    expect(checked.stdout).toBe('');
  });

  it('runs `npx mcp-fleet --help` with the version it was packed with', async () => {
    const help = await exec('npx', ['--offline', 'mcp-fleet', '--help'], app, 60_000);
    expect(help.stdout).toMatch(/^Usage: mcp-fleet \[options\] \[command\]/);
    expect(help.stdout).toContain('serve');
    const version = await exec('npx', ['--offline', 'mcp-fleet', '--version'], app, 60_000);
    expect(version.stdout.trim()).toBe(pkg.version);
  });

  it('starts a worker on a real server, serves /healthz and the management page, and stops on SIGTERM', async () => {
    const dir = stateDir();
    const child = spawn(process.execPath, [join(app, 'node_modules', '.bin', 'mcp-fleet'), 'serve', '--state-dir', dir, '--port', '0'], {
      cwd: app,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    workers.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

    await expect.poll(() => stdout, { timeout: 60_000, interval: 100 }).toMatch(/servers ready/);
    // The next command to try, as a project that installed the package runs it.
    expect(stdout, stderr).toContain(`1 of 1 enabled servers ready. Tools: npx mcp-fleet list --tools --state-dir ${dir}\n`);
    const { url } = JSON.parse(readFileSync(join(dir, 'worker.json'), 'utf8')) as { url: string };
    const health = await fetch(new URL('healthz', url));
    expect([health.status, await health.json()]).toEqual([200, { ok: true }]);
    for (const path of ['', 'ui/app.js', 'ui/style.css', 'ui/diagrams/server.svg']) {
      const page = await fetch(new URL(path, url));
      expect([path, page.status]).toEqual([path, 200]);
    }

    child.kill('SIGTERM');
    expect(await exit).toBe(0);
  });
});
