import { copyFile, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli.js';
import type { CliIO } from '../../src/cli.js';
import { runImport } from '../../src/cli/import.js';
import { createConfigStore } from '../../src/config/store.js';
import { cli } from '../support/cli.js';
import { modeOf, recordingLogger, removeDirs, tempDir, tempFiles } from './helpers.js';

const claudeFixture = fileURLToPath(new URL('./fixtures/claude_desktop_config.json', import.meta.url));
const FIXTURE_SECRETS = ['ghp_FIXTURESECRET0000000000000001', 'FIXTURESECRET-linear-0002'];

const dirs: string[] = [];
let dir: string;
beforeEach(async () => {
  dir = await tempDir();
  dirs.push(dir);
});
afterEach(() => removeDirs(dirs));

function captureIO(): CliIO & { out: string; err: string; code: number | undefined } {
  const io = {
    out: '',
    err: '',
    code: undefined as number | undefined,
    stdout: (text: string) => void (io.out += text),
    stderr: (text: string) => void (io.err += text),
    setExitCode: (code: number) => void (io.code = code),
  };
  return io;
}

const store = (stateDir: string) => createConfigStore({ stateDir: () => stateDir, logger: recordingLogger() });

describe('mcp-fleet import (in process)', () => {
  it('imports through the program, reporting names and skips, no secrets', async () => {
    const io = captureIO();
    const stateDir = path.join(dir, 'state');
    await buildProgram(io).parseAsync(['node', 'mcp-fleet', 'import', claudeFixture, '--state-dir', stateDir]);
    expect(io.code).toBe(0);
    expect(io.out).toContain(`imported 4 servers into ${path.join(stateDir, 'mcp_servers.json')}: filesystem, github, linear, paused`);
    expect(io.out).toContain('skipped 1:\n  "not a valid name": name must be 1 to 64 characters');
    for (const secret of FIXTURE_SECRETS) expect(io.out + io.err).not.toContain(secret);
    const loaded = await store(stateDir).load();
    expect(loaded.servers.map(([n]) => n)).toEqual(['filesystem', 'github', 'linear', 'paused']);
  });

  it('never overwrites an existing name, valid or not, and keeps the other servers', async () => {
    await writeFile(
      path.join(dir, 'mcp_servers.json'),
      JSON.stringify({
        servers: {
          github: { type: 'local', command: ['mine'] },
          linear: { type: 'local', command: [] },
          other: { type: 'remote', url: 'https://o.example' },
        },
      }),
    );
    const io = captureIO();
    expect(await runImport(claudeFixture, { stateDir: dir }, io)).toBe(0);
    expect(io.out).toContain('"github": already configured (not overwritten)');
    expect(io.out).toContain('"linear": already configured (not overwritten)');
    expect(io.out).toContain('imported 2 servers');
    // The store's warnings are told once the import went through.
    expect(io.err).toContain('warning: skipping server "linear": servers.linear.command');
    const loaded = await store(dir).load();
    expect(loaded.servers.map(([n]) => n)).toEqual(['github', 'other', 'filesystem', 'paused']);
    const github = loaded.servers.find(([n]) => n === 'github')?.[1];
    expect(github?.type === 'local' && github.command).toEqual(['mine']);
    expect(loaded.warnings).toEqual([expect.stringContaining('skipping server "linear"')]);
  });

  it.each([
    ['an unreadable file', () => path.join(dir, 'missing.json'), /cannot read .*missing\.json \(ENOENT\)/],
    [
      'invalid JSON',
      async () => {
        const file = path.join(dir, 'bad.json');
        await writeFile(file, '{"mcpServers": {"a": {"env": {"K": sk-Zq9Kv8WmXp3Jd7Hn}}}}');
        return file;
      },
      /bad\.json: invalid JSON: line 1 column 36: expected a value/,
    ],
    [
      'no server map',
      async () => {
        const file = path.join(dir, 'empty.json');
        await writeFile(file, '{}');
        return file;
      },
      /empty\.json: no "mcpServers" or "servers" object/,
    ],
  ])('exits 1 with a clear message for %s, writing nothing', async (_what, makeFile, message) => {
    const io = captureIO();
    const stateDir = path.join(dir, 'state');
    expect(await runImport(await makeFile(), { stateDir }, io)).toBe(1);
    expect(io.err).toMatch(message);
    expect(io.err).not.toContain('Zq9Kv8WmXp3Jd7Hn');
    expect(io.out).toBe('');
    expect((await store(stateDir).load()).warnings[0]).toContain('no config file');
  });

  it('a state dir that cannot be one is a usage error naming where it came from, before the file is read', async () => {
    const blocker = path.join(dir, 'not-a-dir');
    await writeFile(blocker, '');
    const io = captureIO();
    expect(await runImport(path.join(dir, 'no-such-file.json'), { stateDir: path.join(blocker, 'state') }, io)).toBe(2);
    expect(io.err).toBe(`error: --state-dir: cannot use "${path.join(blocker, 'state')}" as a directory (ENOTDIR)\n`);
    const fromEnv = captureIO();
    const saved = process.env.MCP_FLEET_STATE_DIR;
    process.env.MCP_FLEET_STATE_DIR = blocker;
    try {
      expect(await runImport(claudeFixture, {}, fromEnv)).toBe(2);
    } finally {
      if (saved === undefined) delete process.env.MCP_FLEET_STATE_DIR;
      else process.env.MCP_FLEET_STATE_DIR = saved;
    }
    expect(fromEnv.err).toBe(`error: $MCP_FLEET_STATE_DIR: not a directory: "${blocker}"\n`);
  });

  it('exits 1 when the config file is broken, leaving it as it is, told in one line naming the file and its problem', async () => {
    const file = path.join(dir, 'mcp_servers.json');
    await writeFile(file, '{"servers": ');
    const io = captureIO();
    expect(await runImport(claudeFixture, { stateDir: dir }, io)).toBe(1);
    // The refusal alone: not the store's warning that the file does not parse before it.
    expect(io.err).toBe(
      `mcp-fleet import: refusing to write ${file}: it exists but does not parse (invalid JSON: line 1 column 13: expected a value, found end of file); fix or move it first\n`,
    );
    expect(io.out).toBe('');
    expect(await readFile(file, 'utf8')).toBe('{"servers": ');
  });
});

describe('mcp-fleet import (the binary)', () => {
  it('writes a valid 0600 config from a Claude Desktop file', async () => {
    await copyFile(claudeFixture, path.join(dir, 'claude_desktop_config.json'));
    const stateDir = path.join(dir, 'state');
    const { code, stdout, stderr } = await cli(['import', 'claude_desktop_config.json', '--state-dir', stateDir], {}, { cwd: dir });
    expect(code).toBe(0);
    expect(stdout).toContain('imported 4 servers');
    for (const secret of FIXTURE_SECRETS) expect(stdout + stderr).not.toContain(secret);
    const file = path.join(stateDir, 'mcp_servers.json');
    expect(await modeOf(file)).toBe(0o600);
    expect(await modeOf(stateDir)).toBe(0o700);
    expect(await tempFiles(stateDir)).toEqual([]);
    const loaded = await store(stateDir).load();
    expect(loaded.warnings).toEqual([]);
    expect(loaded.servers.map(([n]) => n)).toEqual(['filesystem', 'github', 'linear', 'paused']);
  });

  it('exits 1 on an invalid file', async () => {
    await writeFile(path.join(dir, 'bad.json'), '{"mcpServers": [}');
    const failure = await cli(['import', 'bad.json', '--state-dir', dir], {}, { cwd: dir });
    expect(failure.code).toBe(1);
    expect(failure.stderr).toContain('mcp-fleet import: bad.json: invalid JSON: line 1 column 17: expected a value');
  });
});
