// Quotas: the counting itself on a clock the test moves, then real calls to
// a real fixture server through the API, with the worker's defaults, a
// user's own values stored with the user, and the admin unlimited.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQuotas } from '../../src/users/index.js';
import { healthy, startFleet, untilState, type Fleet } from '../http/fleet.js';
import type { Reply, RequestOptions } from '../http/helpers.js';
import { untilValue } from '../support/wait.js';
import type { JournalEvent } from '../../src/journal/events.js';

describe('createQuotas', () => {
  it('counts calls in a sliding minute and names the seconds until the oldest leaves it', () => {
    let now = 1_000_000;
    const quotas = createQuotas({ calls_per_minute: 2 }, () => now);
    for (let i = 0; i < 2; i++) {
      const admitted = quotas.admit('alice', undefined);
      expect(admitted.admitted).toBe(true);
      if (admitted.admitted) admitted.release();
      now += 10_000;
    }
    // Calls at 0 s and 10 s; at 20 s the first leaves the window at 60 s: 40 s to wait.
    const refused = quotas.admit('alice', undefined);
    expect(refused).toMatchObject({ admitted: false, refusal: { limit: 'calls_per_minute', retry_after_seconds: 40 } });
    if (!refused.admitted) expect(refused.refusal.message).toBe('quota: calls_per_minute (2) reached; try again in 40 s. The call was not made.');
    // Another user has their own count.
    expect(quotas.admit('bob', undefined).admitted).toBe(true);
    // A refused call is not counted: at 60 s exactly one slot is free again.
    now = 1_000_000 + 60_000;
    expect(quotas.admit('alice', undefined).admitted).toBe(true);
    expect(quotas.admit('alice', undefined).admitted).toBe(false);
  });

  it('refuses a call over max_concurrent_calls until one ends; a release counts once', () => {
    const quotas = createQuotas({ max_concurrent_calls: 1 });
    const first = quotas.admit('alice', undefined);
    expect(first.admitted).toBe(true);
    expect(quotas.admit('alice', undefined)).toMatchObject({
      admitted: false,
      refusal: { limit: 'max_concurrent_calls', retry_after_seconds: 1 },
    });
    if (first.admitted) {
      first.release();
      first.release();
    }
    const second = quotas.admit('alice', undefined);
    expect(second.admitted).toBe(true);
    expect(quotas.admit('alice', undefined).admitted).toBe(false);
  });

  it("a user's own values win over the defaults, null lifting a limit; without either nothing is limited", () => {
    const quotas = createQuotas({ calls_per_minute: 1, max_concurrent_calls: 1 });
    for (let i = 0; i < 5; i++) expect(quotas.admit('svc', { calls_per_minute: null, max_concurrent_calls: null }).admitted).toBe(true);
    expect(quotas.admit('tight', { calls_per_minute: 3 }).admitted).toBe(true);
    // Concurrency still the default (1), and that call was never released.
    expect(quotas.admit('tight', { calls_per_minute: 3 })).toMatchObject({ refusal: { limit: 'max_concurrent_calls' } });
    const free = createQuotas();
    for (let i = 0; i < 100; i++) expect(free.admit('anyone', undefined).admitted).toBe(true);
  });

  it('refuses defaults that are not positive integers', () => {
    expect(() => createQuotas({ calls_per_minute: 0 })).toThrow();
    expect(() => createQuotas({ max_concurrent_calls: 1.5 })).toThrow();
  });
});

describe('quotas on real calls', () => {
  let fleet: Fleet;
  const keys: Record<string, string> = {};

  beforeAll(async () => {
    fleet = await startFleet((dir) => ({ tools: healthy(dir, 'tools') }), {}, { userQuota: { calls_per_minute: 3, max_concurrent_calls: 1 } });
    await untilState(fleet, 'tools', 'ready');
    const users = [
      { name: 'alice' },
      // Unlimited calls per minute, two at once.
      { name: 'bob', calls_per_minute: null, max_concurrent_calls: 2 },
    ];
    for (const user of users) {
      const reply = await fleet.request('/api/mcp/users', { method: 'POST', body: user });
      expect(reply.status).toBe(201);
      keys[user.name] = reply.json.key;
    }
  });
  afterAll(async () => {
    await fleet?.close();
  });

  const as = (user: string, path: string, options: RequestOptions = {}): Promise<Reply> =>
    fleet.request(path, { ...options, headers: { authorization: `Bearer ${keys[user]}`, ...options.headers } });
  const echo = (user: string | null, text: string): Promise<Reply> => {
    const options = { method: 'POST', body: { arguments: { text } } };
    return user === null ? fleet.request('/api/mcp/tools/tools__echo/call', options) : as(user, '/api/mcp/tools/tools__echo/call', options);
  };

  it('the users list shows a user’s own limits, and only theirs', async () => {
    const listed = await fleet.request('/api/mcp/users');
    expect(listed.json.users).toEqual([
      { name: 'alice', groups: [] },
      { name: 'bob', groups: [], calls_per_minute: null, max_concurrent_calls: 2 },
    ]);
    const bad = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'zed', calls_per_minute: 0 } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.field).toBe('calls_per_minute');
  });

  it("a user's fourth call in a minute is refused with the limit and the wait; the call is journaled as refused; the admin is not limited", async () => {
    for (let i = 0; i < 3; i++) {
      const reply = await echo('alice', `hello ${i}`);
      expect(reply.json.details.is_error).toBe(false);
      expect(reply.json.content[0].text).toContain(`hello ${i}`);
    }
    const refused = await echo('alice', 'one too many');
    expect(refused.status).toBe(200);
    expect(refused.json.details).toMatchObject({ is_error: true, server: 'tools', tool: 'echo', quota: { limit: 'calls_per_minute' } });
    const wait = refused.json.details.quota.retry_after_seconds as number;
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(60);
    expect(refused.json.content[0].text).toBe(`quota: calls_per_minute (3) reached; try again in ${wait} s. The call was not made.`);

    const calls = await untilValue(async () => {
      const events = (await as('alice', '/api/mcp/events')).json.events as JournalEvent[];
      const called = events.filter((event) => event.type === 'tool.called');
      return called.length === 4 ? called : undefined;
    }, 'alice sees her four calls');
    expect(calls.map((event) => event.type === 'tool.called' && [event.principal, event.outcome, event.refused_by])).toEqual([
      ['alice', 'ok', undefined],
      ['alice', 'ok', undefined],
      ['alice', 'ok', undefined],
      ['alice', 'error', 'calls_per_minute'],
    ]);

    for (let i = 0; i < 6; i++) expect((await echo(null, `admin ${i}`)).json.details.is_error).toBe(false);
  });

  it('a call over max_concurrent_calls is refused while the others run, and admitted once they end', async () => {
    const slow = (ms: number) => as('bob', '/api/mcp/tools/tools__slow/call', { method: 'POST', body: { arguments: { ms } } });
    const running = [slow(3_000), slow(3_000)];
    // The two slow calls are admitted as their requests arrive; until then bob's echoes still pass (no per-minute limit for him).
    const refused = await untilValue(async () => {
      const reply = await echo('bob', 'third');
      return reply.json.details.quota === undefined ? undefined : reply;
    }, "bob's third call at once is refused");
    expect(refused.json.details.quota).toEqual({ limit: 'max_concurrent_calls', retry_after_seconds: 1 });
    expect(refused.json.content[0].text).toMatch(/^quota: max_concurrent_calls \(2\) reached — 2 of your calls are running; try again in 1 s or once one of them ends\./);
    for (const reply of await Promise.all(running)) expect(reply.json.details.is_error).toBe(false);
    expect((await echo('bob', 'after')).json.details.is_error).toBe(false);
  });

  it("PUT /api/mcp/users/:name/quota changes a user's limits for their next call; it is the admin's to do", async () => {
    const carol = await fleet.request('/api/mcp/users', { method: 'POST', body: { name: 'carol', calls_per_minute: 1 } });
    const key = carol.json.key as string;
    const echoAsCarol = () =>
      fleet.request('/api/mcp/tools/tools__echo/call', { method: 'POST', body: { arguments: { text: 'c' } }, headers: { authorization: `Bearer ${key}` } });
    expect((await echoAsCarol()).json.details.is_error).toBe(false);
    expect((await echoAsCarol()).json.details.quota.limit).toBe('calls_per_minute');
    const raised = await fleet.request('/api/mcp/users/carol/quota', { method: 'PUT', body: { calls_per_minute: null } });
    expect(raised.json).toEqual({ name: 'carol', groups: [], calls_per_minute: null });
    for (let i = 0; i < 4; i++) expect((await echoAsCarol()).json.details.is_error).toBe(false);
    const byUser = await fleet.request('/api/mcp/users/carol/quota', { method: 'PUT', body: {}, headers: { authorization: `Bearer ${key}` } });
    expect(byUser.status).toBe(403);
    expect((await fleet.request('/api/mcp/users/nobody/quota', { method: 'PUT', body: {} })).status).toBe(404);
    expect((await fleet.request('/api/mcp/users/carol/quota', { method: 'PUT', body: { calls_per_minute: -1 } })).status).toBe(400);
  });

  it('the library: a principal with no quota of its own has the host’s defaults; none at all is the admin', async () => {
    const host = fleet.host;
    const principal = { id: 'lib-user', groups: [] };
    const first = host.callTool('tools__slow', { ms: 500 }, { principal });
    // Admitted synchronously: the second call at once is over max_concurrent_calls (1).
    const second = await host.callTool('tools__echo', { text: 'x' }, { principal });
    expect(second.details.quota?.limit).toBe('max_concurrent_calls');
    const unlimited = await host.callTool('tools__echo', { text: 'x' });
    expect(unlimited.details.is_error).toBe(false);
    expect((await first).details.is_error).toBe(false);
  });

  it('a name no server offers is answered without using up the quota', async () => {
    const host = fleet.host;
    const principal = { id: 'guesser', groups: [], quota: { calls_per_minute: 1 } };
    for (const name of ['tools__no_such_tool', 'nobody__echo']) {
      const missing = await host.callTool(name, {}, { principal });
      expect(missing.details.is_error).toBe(true);
      expect(missing.details.quota).toBeUndefined();
    }
    // The one call of the minute is still theirs; the next is over it.
    expect((await host.callTool('tools__echo', { text: 'x' }, { principal })).details.is_error).toBe(false);
    expect((await host.callTool('tools__echo', { text: 'x' }, { principal })).details.quota?.limit).toBe('calls_per_minute');
  });
});
