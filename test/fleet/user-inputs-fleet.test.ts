// per_user servers on a fleet: two real workers (`mcp-fleet serve
// --database-url`) on one real PostgreSQL. A user sets their input on one
// worker; their call on the other connects with it (the inputs live sealed in
// the shared database), and the session is that worker's alone.
import { describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { until } from '../support/wait.js';
import { fleetTestBed, untilStateOn, type FleetWorkerProcess } from './workers.js';

const bed = fleetTestBed();
const TOKEN = 'sam-token-SECRET-9090';
const NEW_TOKEN = 'sam-token-NEW-4242';

const server = {
  name: 'mine',
  type: 'local',
  command: fixtureCommand('whoami.mjs'),
  env: { USER_TOKEN: '${user.TOKEN}' },
  scope: 'per_user',
  user_inputs: { TOKEN: { description: 'your token' } },
};

/** A request with a user's key instead of the admin token. */
async function asUser(worker: FleetWorkerProcess, key: string, path: string, init: { method?: string; body?: unknown; echoes?: boolean } = {}) {
  const response = await fetch(`${worker.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${key}`, ...(init.body !== undefined && { 'content-type': 'application/json' }) },
    ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  // Only the fixture's own answer may hold it (it echoes what it was given).
  if (init.echoes !== true) expect(text, `${path} answered the user's value`).not.toContain(TOKEN);
  return { status: response.status, json: JSON.parse(text) };
}

describe('per_user inputs on several workers', { timeout: 120_000 }, () => {
  it('an input set on one worker is what the call on the other connects with', async () => {
    const url = await bed.database();
    const a = await bed.worker('w1', url);
    const b = await bed.worker('w2', url);
    const added = await a.request('/api/mcp/servers', { method: 'POST', json: server });
    expect(added.status, added.text).toBe(201);
    await untilStateOn(b, 'mine', 'pending');
    const key: string = (await a.request('/api/mcp/users', { method: 'POST', json: { name: 'sam' } })).json.key;

    const put = await asUser(a, key, '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { TOKEN } });
    expect(put.status).toBe(200);
    expect((await asUser(b, key, '/api/mcp/servers/mine/inputs')).json.inputs.TOKEN.set).toBe(true);

    const call = await asUser(b, key, '/api/mcp/tools/mine__whoami/call', { method: 'POST', body: { arguments: {} }, echoes: true });
    expect(call.status).toBe(200);
    expect(JSON.parse(call.json.content[0].text).token).toBe(TOKEN);
    expect((await asUser(b, key, '/api/mcp/sessions')).json.sessions.map((s: { principal: string; state: string }) => [s.principal, s.state])).toEqual([
      ['sam', 'ready'],
    ]);
    expect((await a.request('/api/mcp/sessions')).json.sessions).toEqual([]);
  });

  it("a value changed, cleared or forgotten on one worker ends the user's session on the other", async () => {
    const url = await bed.database();
    const a = await bed.worker('w1', url);
    const b = await bed.worker('w2', url);
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: server })).status).toBe(201);
    await untilStateOn(b, 'mine', 'pending');
    const addSam = async () => (await a.request('/api/mcp/users', { method: 'POST', json: { name: 'sam' } })).json.key as string;
    const whoami = async (key: string) => asUser(b, key, '/api/mcp/tools/mine__whoami/call', { method: 'POST', body: { arguments: {} }, echoes: true });
    const tokenOf = (call: Awaited<ReturnType<typeof whoami>>) => JSON.parse(call.json.content[0].text).token as string;
    // b's session of sam has ended (the next call there connects anew).
    const untilNoSessionOnB = () =>
      until(async () => (await b.request('/api/mcp/sessions')).json.sessions.length === 0, "b's session of sam to end");

    const key = await addSam();
    expect((await asUser(a, key, '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { TOKEN } })).status).toBe(200);
    expect(tokenOf(await whoami(key))).toBe(TOKEN);

    // Changed on a: b's next call connects with the new value.
    expect((await asUser(a, key, '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { TOKEN: NEW_TOKEN } })).status).toBe(200);
    await untilNoSessionOnB();
    expect(tokenOf(await whoami(key))).toBe(NEW_TOKEN);

    // Cleared on a: b's next call fails for want of the input.
    expect((await asUser(a, key, '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { TOKEN: null } })).status).toBe(200);
    await untilNoSessionOnB();
    const cleared = await whoami(key);
    expect(cleared.json.details.is_error).toBe(true);
    expect(cleared.json.content[0].text).toContain('needs your own input TOKEN');

    // Removed on a while b serves them: a new sam is not served through the old sam's session.
    expect((await asUser(a, key, '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { TOKEN } })).status).toBe(200);
    expect(tokenOf(await whoami(key))).toBe(TOKEN);
    expect((await a.request('/api/mcp/users/sam', { method: 'DELETE' })).status).toBe(204);
    await untilNoSessionOnB();
    const again = await whoami(await addSam());
    expect(again.json.details.is_error).toBe(true);
    expect(again.json.content[0].text).toContain('needs your own input TOKEN');
  });

  it("a removed user's session on the worker that removed them ends too", async () => {
    const url = await bed.database();
    const a = await bed.worker('w1', url);
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: server })).status).toBe(201);
    const key: string = (await a.request('/api/mcp/users', { method: 'POST', json: { name: 'sam' } })).json.key;
    expect((await asUser(a, key, '/api/mcp/servers/mine/inputs', { method: 'PUT', body: { TOKEN } })).status).toBe(200);
    const call = await asUser(a, key, '/api/mcp/tools/mine__whoami/call', { method: 'POST', body: { arguments: {} }, echoes: true });
    expect(call.status).toBe(200);
    expect((await a.request('/api/mcp/users/sam', { method: 'DELETE' })).status).toBe(204);
    // Ended before the DELETE answered.
    expect((await a.request('/api/mcp/sessions')).json.sessions).toEqual([]);
    const newKey: string = (await a.request('/api/mcp/users', { method: 'POST', json: { name: 'sam' } })).json.key;
    const again = await asUser(a, newKey, '/api/mcp/tools/mine__whoami/call', { method: 'POST', body: { arguments: {} } });
    expect(again.json.content[0].text).toContain('needs your own input TOKEN');
  });

  it('while the database is away, a user key and the users and inputs writes answer 503 database_unavailable', async () => {
    const url = await bed.database();
    const a = await bed.worker('w1', url);
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: server })).status).toBe(201);
    const key: string = (await a.request('/api/mcp/users', { method: 'POST', json: { name: 'sam' } })).json.key;
    await bed.cluster().stop('immediate');
    try {
      const answers = [
        await asUser(a, key, '/api/mcp/servers'),
        await asUser(a, key, '/api/mcp/tools/mine__whoami/call', { method: 'POST', body: { arguments: {} } }),
        await a.request('/api/mcp/users', { method: 'POST', json: { name: 'frank' } }),
        await a.request('/api/mcp/servers/mine/inputs', { method: 'PUT', json: { TOKEN } }),
      ];
      for (const answer of answers) {
        expect(answer.status, JSON.stringify(answer.json)).toBe(503);
        expect(answer.json.error.code).toBe('database_unavailable');
      }
      // The admin's own session cannot read its inputs: the call says why, not the driver's bare refusal.
      const admin = await a.request('/api/mcp/tools/mine__whoami/call', { method: 'POST', json: { arguments: {} } });
      expect(admin.json.details.is_error).toBe(true);
      expect(admin.json.content[0].text).toMatch(/^the database at 127\.0\.0\.1:\d+ is unavailable/);
    } finally {
      await bed.cluster().start();
    }
    expect((await asUser(a, key, '/api/mcp/servers')).status).toBe(200);
  });
});
