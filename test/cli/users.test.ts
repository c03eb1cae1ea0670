// `mcp-fleet users …` as real child processes against a real `serve`: the key
// is printed once (on stdout alone, so it can be captured), a user's key works
// with the other commands (it sees only its servers), rotation and removal
// take effect at once, and a bad value is one line with exit code 2.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { cli, startServe, type ServeWorker } from '../support/cli.js';

let dir: string;
let url: string;
let worker: ServeWorker | undefined;

beforeAll(async () => {
  worker = await startServe('mcp-fleet-cli-users-', {
    open: { type: 'local', command: fixtureCommand('healthy') },
    team: { type: 'local', command: fixtureCommand('healthy'), access: { groups: ['eng'] } },
  }, ['--user-calls-per-minute', '2']);
  dir = worker.dir;
  url = (JSON.parse(readFileSync(join(dir, 'worker.json'), 'utf8')) as { url: string }).url;
}, 60_000);

afterAll(() => worker?.stop());

/** A client command run with `key` instead of the worker's API token. */
const asUser = (key: string, args: string[]) => cli([...args, '--url', url], { MCP_FLEET_API_TOKEN: key });

describe('mcp-fleet users', () => {
  it('add prints the key once; list shows names and groups; the key lists only what the user may see', async () => {
    const added = await cli(['users', 'add', 'alice', '--group', 'eng', '--group', 'ops', '--state-dir', dir]);
    expect(added.code).toBe(0);
    expect(added.stdout).toMatch(/^mcpf_[A-Za-z0-9_-]{43}\n$/);
    expect(added.stderr).toBe('added alice (groups: eng, ops); the key is shown this once:\n');
    const bob = await cli(['users', 'add', 'bob', '--state-dir', dir]);
    expect(bob.code).toBe(0);

    const listed = await cli(['users', 'list', '--state-dir', dir]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toBe('NAME   GROUPS    CALLS/MIN  CONCURRENT\nalice  eng, ops  default    default\nbob              default    default\n');
    expect(listed.stdout).not.toContain('mcpf_');
    const json = await cli(['users', 'list', '--json', '--state-dir', dir]);
    expect(JSON.parse(json.stdout)).toEqual({ users: [{ name: 'alice', groups: ['eng', 'ops'] }, { name: 'bob', groups: [] }] });

    const aliceKey = added.stdout.trim();
    const bobKey = bob.stdout.trim();
    const aliceList = await asUser(aliceKey, ['list', '--json']);
    expect(aliceList.code).toBe(0);
    expect((JSON.parse(aliceList.stdout) as { servers: Array<{ name: string }> }).servers.map((s) => s.name).sort()).toEqual(['open', 'team']);
    const bobList = await asUser(bobKey, ['list', '--json']);
    expect((JSON.parse(bobList.stdout) as { servers: Array<{ name: string }> }).servers.map((s) => s.name)).toEqual(['open']);
    // A user manages nothing.
    const refused = await asUser(bobKey, ['remove', 'open']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('error: only the admin may do this\n');
    const duplicate = await cli(['users', 'add', 'bob', '--state-dir', dir]);
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toBe('error: a user named "bob" already exists\n');
  });

  it('list shows a per_user server as "per user" (it waits for each user\'s first call), not as pending with 0 tools', async () => {
    const [command, ...args] = fixtureCommand('healthy');
    const config = JSON.stringify({ scope: 'per_user', user_inputs: { TOKEN: { description: 'yours' } }, env: { TOKEN: '${user.TOKEN}' } });
    const added = await cli(['add', 'mine', '--config', config, '--state-dir', dir, '--', command!, ...args]);
    expect(added.code, added.stderr).toBe(0);
    const listed = await cli(['list', '--state-dir', dir]);
    expect(listed.stdout).toMatch(/^mine +per user +- *$/m);
    expect(listed.stdout).toMatch(/^open +ready +\d+ *$/m);
    expect((await cli(['remove', 'mine', '--state-dir', dir])).code).toBe(0);
  });

  it('rotate prints a new key and the old one stops working; remove ends the user', async () => {
    const added = await cli(['users', 'add', 'carol', '--state-dir', dir]);
    const oldKey = added.stdout.trim();
    const rotated = await cli(['users', 'rotate', 'carol', '--state-dir', dir]);
    expect(rotated.code).toBe(0);
    expect(rotated.stderr).toBe('new key for carol; the key is shown this once:\n');
    const newKey = rotated.stdout.trim();
    expect(newKey).not.toBe(oldKey);
    expect((await asUser(oldKey, ['list'])).code).toBe(1);
    expect((await asUser(newKey, ['list'])).code).toBe(0);

    const removed = await cli(['users', 'remove', 'carol', '--state-dir', dir]);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toBe('removed carol\n');
    expect((await asUser(newKey, ['list'])).stderr).toBe('error: missing or wrong bearer token\n');
    const again = await cli(['users', 'remove', 'carol', '--state-dir', dir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('error: no user named "carol"\n');
  });

  it("serve's --user-calls-per-minute limits a user; a user's own --calls-per-minute none lifts it", async () => {
    const limited = (await cli(['users', 'add', 'erin', '--state-dir', dir])).stdout.trim();
    const svc = await cli(['users', 'add', 'svc', '--calls-per-minute', 'none', '--max-concurrent-calls', '3', '--state-dir', dir]);
    expect(svc.code).toBe(0);
    const listed = await cli(['users', 'list', '--state-dir', dir]);
    expect(listed.stdout).toContain('erin             default    default\n');
    expect(listed.stdout).toContain('svc              none       3\n');
    const call = (key: string) => asUser(key, ['call', 'open__echo', '{"text":"hi"}']);
    expect((await call(limited)).code).toBe(0);
    expect((await call(limited)).code).toBe(0);
    const refused = await call(limited);
    expect(refused.code).toBe(1);
    expect(refused.stdout + refused.stderr).toMatch(/quota: calls_per_minute \(2\) reached; try again in \d+ s\. The call was not made\./);
    for (let i = 0; i < 3; i++) expect((await call(svc.stdout.trim())).code).toBe(0);
    const lifted = await cli(['users', 'quota', 'erin', '--calls-per-minute', 'none', '--state-dir', dir]);
    expect(lifted.code).toBe(0);
    expect(lifted.stdout).toBe('erin: none calls per minute, default at once\n');
    expect((await call(limited)).code).toBe(0);
    await cli(['users', 'remove', 'erin', '--state-dir', dir]);
    await cli(['users', 'remove', 'svc', '--state-dir', dir]);
  });

  it('a bad value is one line naming it, exit code 2, and nothing is sent', async () => {
    const badName = await cli(['users', 'add', 'no spaces', '--state-dir', dir]);
    expect(badName.code).toBe(2);
    expect(badName.stderr).toBe('error: NAME: must be 1 to 64 characters, each a letter, a digit, "_" or "-", and not "__proto__": "no spaces"\n');
    const admin = await cli(['users', 'add', 'admin', '--state-dir', dir]);
    expect(admin.code).toBe(2);
    expect(admin.stderr).toBe('error: NAME: "admin" is the admin token\'s principal: "admin"\n');
    const badGroup = await cli(['users', 'add', 'dave', '--group', '', '--state-dir', dir]);
    expect(badGroup.code).toBe(2);
    expect(badGroup.stderr).toBe('error: --group: must not be empty: ""\n');
    // A flag right after --group would be taken as the group's name.
    const flagAsGroup = await cli(['users', 'add', 'dave', '--group', '--json', '--state-dir', dir]);
    expect([flagAsGroup.code, flagAsGroup.stderr]).toEqual([2, 'error: --group: needs a group name, not a flag: "--json"\n']);
    const badLimit = await cli(['users', 'add', 'dave', '--calls-per-minute', '0', '--state-dir', dir]);
    expect(badLimit.code).toBe(2);
    expect(badLimit.stderr).toBe('error: --calls-per-minute: not an integer from 1 to 1000000 or "none": "0"\n');
    const listed = await cli(['users', 'list', '--json', '--state-dir', dir]);
    expect((JSON.parse(listed.stdout) as { users: Array<{ name: string }> }).users.map((u) => u.name)).toEqual(['alice', 'bob']);
  });
});
