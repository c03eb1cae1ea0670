// per_user servers on a fleet: two real workers (`mcp-fleet serve
// --database-url`) on one real PostgreSQL. A user sets their input on one
// worker; their call on the other connects with it (the inputs live sealed in
// the shared database), and the session is that worker's alone.
import { describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { fleetTestBed, untilStateOn, type FleetWorkerProcess } from './workers.js';

const bed = fleetTestBed();
const TOKEN = 'sam-token-SECRET-9090';

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
    const server = {
      name: 'mine',
      type: 'local',
      command: fixtureCommand('whoami.mjs'),
      env: { USER_TOKEN: '${user.TOKEN}' },
      scope: 'per_user',
      user_inputs: { TOKEN: { description: 'your token' } },
    };
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
});
