// Users on a fleet: two real workers (`mcp-fleet serve --database-url`) on one
// real PostgreSQL. A user added on one signs in on the other, sees there only
// the servers the policy lets them, and a rotation on either shuts the old key
// out of both at once.
import { describe, expect, it } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { fleetTestBed, untilStateOn, type FleetWorkerProcess } from './workers.js';

const bed = fleetTestBed();

/** A GET with a user's key instead of the admin token. */
async function asUser(worker: FleetWorkerProcess, key: string, path: string): Promise<{ status: number; json: any }> {
  const response = await fetch(`${worker.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, json: await response.json() };
}

describe('users on several workers', { timeout: 120_000 }, () => {
  it('a key made on one worker works on the other, with the same policy, until it is rotated anywhere', async () => {
    const url = await bed.database();
    const a = await bed.worker('w1', url);
    const b = await bed.worker('w2', url);
    const healthy = { type: 'local', command: fixtureCommand('healthy.mjs') };
    expect((await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'open', ...healthy } })).status).toBe(201);
    expect(
      (await a.request('/api/mcp/servers', { method: 'POST', json: { name: 'team', ...healthy, access: { groups: ['eng'] } } })).status,
    ).toBe(201);
    await untilStateOn(b, 'open', 'ready');
    await untilStateOn(b, 'team', 'ready');

    const added = await a.request('/api/mcp/users', { method: 'POST', json: { name: 'sam', groups: ['sales'] } });
    expect(added.status, added.text).toBe(201);
    const key: string = added.json.key;
    expect((await asUser(b, key, '/api/mcp/me')).json).toEqual({ principal: 'sam', groups: ['sales'], admin: false });
    expect((await asUser(b, key, '/api/mcp/servers')).json.servers.map((s: { name: string }) => s.name)).toEqual(['open']);
    expect((await asUser(b, key, '/api/mcp/servers/team')).status).toBe(404);
    expect((await b.request('/api/mcp/users')).json).toEqual({ users: [{ name: 'sam', groups: ['sales'] }] });

    const rotated = await b.request('/api/mcp/users/sam/rotate', { method: 'POST' });
    expect(rotated.status).toBe(200);
    expect((await asUser(a, key, '/api/mcp/me')).status).toBe(401);
    expect((await asUser(a, rotated.json.key, '/api/mcp/me')).status).toBe(200);
  });
});
