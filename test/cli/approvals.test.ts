// `mcp-fleet approvals`, `approve` and `deny` as real child processes, talking
// to a real `serve` (itself a child process) with a real stdio fixture server
// whose `echo` asks for approval.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatApprovalsTable } from '../../src/cli/approvals.js';
import { approvalWait } from '../../src/cli/call.js';
import { thisCli } from '../../src/cli/invocation.js';
import { fixtureCommand } from '../fixtures/index.js';
import { BIN, cli, startServe, type ServeWorker, type Run } from '../support/cli.js';
import { cleanEnv } from '../support/env.js';

let dir: string;
let worker: ServeWorker | undefined;

beforeAll(async () => {
  worker = await startServe('mcp-fleet-cli-approvals-', {
    alpha: { type: 'local', command: fixtureCommand('healthy'), timeout_seconds: 15, tools: { approval: { echo: 'ask' } } },
  });
  dir = worker.dir;
}, 30_000);

afterAll(() => worker?.stop());


/** Starts `mcp-fleet call alpha__echo` (it waits for approval) and resolves with the id once listed. */
async function waitingCall(text: string): Promise<{ id: string; call: Promise<Run> }> {
  const call = cli(['call', 'alpha__echo', JSON.stringify({ text }), '--state-dir', dir]);
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const listed = await cli(['approvals', '--json', '--state-dir', dir]);
    const approvals = JSON.parse(listed.stdout).approvals as Array<{ id: string; arguments: { text?: string } }>;
    const found = approvals.find((approval) => approval.arguments.text === text);
    if (found) return { id: found.id, call };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('no approval appeared');
}

/**
 * Starts `mcp-fleet call alpha__echo` as a child and resolves once its stderr
 * says it waits, with what it said and the two commands it printed.
 */
async function announcedCall(text: string, where: string[]): Promise<{ said: string; approve: string[]; deny: string[]; call: Promise<Run> }> {
  const child = spawn(process.execPath, [BIN, 'call', 'alpha__echo', JSON.stringify({ text }), ...where], {
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const call = new Promise<Run>((done) => child.on('exit', (code) => done({ code, stdout, stderr })));
  const deadline = Date.now() + 20_000;
  const printed = (verb: string) => new RegExp(`^ {2}node ${BIN.replaceAll(/[.*+?^${}()|[\]\\/]/g, '\\$&')} (${verb} .*)$`, 'm');
  while (!printed('deny').test(stderr)) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`the call did not say it waits: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  // As this CLI was run, by the script's absolute path: the same program, pasted anywhere.
  const command = (verb: string) => stderr.match(printed(verb))![1]!.split(' ');
  return { said: stderr, approve: command('approve'), deny: command('deny'), call };
}

describe('mcp-fleet call of an ask tool', () => {
  it('says on stderr that it waits, with the id and the commands; approving with that command prints the result', { timeout: 90_000 }, async () => {
    const { said, approve, call } = await announcedCall('announced', ['--state-dir', dir]);
    const { approvals } = JSON.parse((await cli(['approvals', '--json', '--state-dir', dir])).stdout) as {
      approvals: Array<{ id: string; expires_at: string; arguments: { text?: string } }>;
    };
    const pending = approvals.find((approval) => approval.arguments.text === 'announced')!;
    expect(said).toBe(
      `waiting for approval ${pending.id} to call alpha__echo (until ${pending.expires_at}); decide with:\n` +
        // The script by its absolute path: the line works pasted in any directory.
        `  node ${BIN} approve ${pending.id} --state-dir ${dir}\n` +
        `  node ${BIN} deny ${pending.id} --state-dir ${dir}\n`,
    );
    expect(await cli(approve)).toMatchObject({ code: 0, stdout: `allowed ${pending.id}\n` });
    expect(await call).toEqual({ code: 0, stdout: 'announced\n', stderr: said });
  });

  it('names the --url it was given too; deny with the printed command refuses the call', { timeout: 90_000 }, async () => {
    const { url } = JSON.parse(readFileSync(join(dir, 'worker.json'), 'utf8')) as { url: string };
    const { deny, call } = await announcedCall('via url', ['--state-dir', dir, '--url', url]);
    expect(deny.slice(2)).toEqual(['--state-dir', dir, '--url', url]);
    expect((await cli(deny)).code).toBe(0);
    const result = await call;
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('approval denied (by api): the call to alpha__echo was not made');
  });

  it('quotes what a shell would split', () => {
    const text = approvalWait({ id: 'a1', tool: 's__t', expires_at: 'soon' }, { stateDir: "/tmp/my dir/it's" });
    expect(text).toContain(`  ${thisCli({ anywhere: true })} approve a1 --state-dir '/tmp/my dir/it'\\''s'\n`);
    // A relative state dir is made absolute: the command reaches the same worker from any directory.
    expect(approvalWait({ id: 'a1', tool: 's__t', expires_at: 'soon' }, { stateDir: 'rw' })).toContain(` deny a1 --state-dir ${join(process.cwd(), 'rw')}\n`);
    // A state dir the call found through $MCP_FLEET_STATE_DIR is named too: another terminal may not have the variable.
    const was = process.env.MCP_FLEET_STATE_DIR;
    process.env.MCP_FLEET_STATE_DIR = '/srv/fleet-from-env';
    try {
      expect(approvalWait({ id: 'a1', tool: 's__t', expires_at: 'soon' }, {})).toContain(' approve a1 --state-dir /srv/fleet-from-env\n');
    } finally {
      if (was === undefined) delete process.env.MCP_FLEET_STATE_DIR;
      else process.env.MCP_FLEET_STATE_DIR = was;
    }
  });
});

describe('mcp-fleet approvals / approve / deny', () => {
  it('lists nothing when nothing waits', async () => {
    const run = await cli(['approvals', '--state-dir', dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('no call waits for approval\n');
  });

  it('approvals shows a waiting call in a table; approve lets it run', { timeout: 90_000 }, async () => {
    const { id, call } = await waitingCall('first');
    const table = await cli(['approvals', '--state-dir', dir]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TOOL\s+WAITING\s+ARGUMENTS$/);
    expect(lines[1]).toMatch(new RegExp(`^${id}\\s+alpha__echo\\s+\\d+s\\s+\\{"text":"first"\\}$`));
    const approved = await cli(['approve', id, '--state-dir', dir]);
    expect(approved).toMatchObject({ code: 0, stdout: `allowed ${id}\n` });
    const result = await call;
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('first\n');
  });

  it('deny refuses it: the call prints the denial and exits 1', { timeout: 90_000 }, async () => {
    const { id, call } = await waitingCall('second');
    const denied = await cli(['deny', id, '--state-dir', dir]);
    expect(denied).toMatchObject({ code: 0, stdout: `denied ${id}\n` });
    const result = await call;
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('approval denied (by api)');
  });

  it('an unknown id is an error line and exit 1', async () => {
    const run = await cli(['approve', 'no-such-id', '--state-dir', dir]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('error: no call waits for approval no-such-id\n');
  });

  it('formats the table with arguments cut', () => {
    const now = Date.parse('2026-01-01T00:00:10Z');
    const table = formatApprovalsTable(
      [{ id: 'a1', server: 's', tool: 's__t', original: 't', arguments: { long: 'x'.repeat(100) }, requested_at: '2026-01-01T00:00:00Z', principal: 'admin', expires_at: '2026-01-01T00:05:00Z' }],
      now,
    );
    expect(table.split('\n')[1]).toMatch(/^a1\s+s__t\s+10s\s+\{"long":"x+…$/);
  });
});
