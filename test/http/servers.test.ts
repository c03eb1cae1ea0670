// The server routes against a real host with real stdio fixture servers.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ServerConfig } from '../../src/config/schema.js';
import { ErrorKind } from '../../src/errors.js';
import { ServerView } from '../../src/journal/server-view.js';
import { fixtureCommand } from '../fixtures/index.js';
import { fieldCases } from '../config/field-samples.js';
import { allGone, CANARIES, healthy, isAlive, readPid, startFleet, untilState, type Fleet } from './fleet.js';

const [ENV_SECRET, REPLACED_SECRET, HEADER_SECRET, TOKEN_SECRET] = CANARIES as [string, string, string, string];

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

const bearerRemote = {
  type: 'remote',
  url: 'https://example.invalid/mcp',
  enabled: false,
  headers: { 'X-Team': HEADER_SECRET },
  auth: { kind: 'bearer', token: TOKEN_SECRET },
};
const oauthRemote = { type: 'remote', url: 'https://example.invalid/mcp', enabled: false, auth: { kind: 'oauth' } };
/** Servers that never start: a PATCH or POST of them only validates, stores and journals. */
const disabledLocal = { type: 'local', command: ['node', 'never-started.js'], enabled: false };
const disabledRemote = { type: 'remote', url: 'https://example.invalid/mcp', enabled: false };

/** The env tool of the healthy fixture: is `name` set in the running process, and how long is it. */
async function envOf(f: Fleet, server: string, name: string): Promise<{ set: boolean; length: number }> {
  const reply = await f.request(`/api/mcp/tools/${server}__env/call`, { method: 'POST', body: { arguments: { name } } });
  expect(reply.status).toBe(200);
  return JSON.parse(reply.json.content[0].text);
}

describe('GET /api/mcp/servers and /:name', () => {
  it('lists every server as a ServerView with its config masked', async () => {
    fleet = await startFleet((dir) => ({
      alpha: healthy(dir, 'alpha', { env: { API_KEY: ENV_SECRET, SHORT: 'abc' } }),
      remote: bearerRemote,
    }));
    await untilState(fleet, 'alpha', 'ready');
    const reply = await fleet.request('/api/mcp/servers');
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.json)).toEqual(['servers']);
    const views = (reply.json.servers as unknown[]).map((view) => ServerView.parse(view));
    const alpha = views.find((view) => view.name === 'alpha')!;
    const remote = views.find((view) => view.name === 'remote')!;
    expect(alpha).toMatchObject({ state: 'ready', ready: true, error: null, error_kind: null, tool_count: 8 });
    expect(alpha.config).toMatchObject({
      env: { API_KEY: { has_value: true, masked: '••••0001' }, SHORT: { has_value: true, masked: '••••' } },
    });
    expect(remote).toMatchObject({ state: 'disabled', ready: false, auth: { kind: 'bearer' } });
    expect(remote.config).toHaveProperty('headers', { 'X-Team': { has_value: true, masked: '••••0003' } });
    expect(remote.config).toMatchObject({ auth: { kind: 'bearer', has_token: true, token_masked: '••••0004' } });

    const one = await fleet.request('/api/mcp/servers/alpha');
    expect(one.status).toBe(200);
    expect(one.json).toEqual(reply.json.servers.find((view: { name: string }) => view.name === 'alpha'));
  });

  it('the list is served from one serialization until a server changes, then follows the change', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha'), beta: healthy(dir, 'beta') }));
    await untilState(fleet, 'alpha', 'ready');
    await untilState(fleet, 'beta', 'ready');
    const first = await fleet.request('/api/mcp/servers');
    const again = await fleet.request('/api/mcp/servers');
    expect(again.json).toEqual(first.json);
    expect(again.headers['content-type']).toBe('application/json; charset=utf-8');

    expect((await fleet.request('/api/mcp/servers/beta', { method: 'DELETE' })).status).toBe(204);
    const after = await fleet.request('/api/mcp/servers');
    expect(after.json.servers.map((view: { name: string }) => view.name)).toEqual(['alpha']);
    expect((await fleet.request('/api/mcp/servers/alpha/restart', { method: 'POST' })).status).toBe(200);
    const restarted = (await fleet.request('/api/mcp/servers')).json.servers[0];
    expect(restarted).toMatchObject({ name: 'alpha', state: 'ready' });
    expect(restarted.since).not.toBe(first.json.servers[0].since);
  });

  it('an unknown server → 404', async () => {
    fleet = await startFleet(() => ({}));
    const reply = await fleet.request('/api/mcp/servers/ghost');
    expect(reply.status).toBe(404);
    expect(reply.json).toEqual({ error: { code: 'not_found', message: 'no server named "ghost"' } });
  });
});

describe('POST /api/mcp/servers', () => {
  it('starts the server, persists it and answers 201 with its view', async () => {
    fleet = await startFleet(() => ({}));
    const body = { name: 'beta', ...healthy(fleet.dir, 'beta', { env: { API_KEY: ENV_SECRET } }) };
    const reply = await fleet.request('/api/mcp/servers', { method: 'POST', body });
    expect(reply.status).toBe(201);
    expect(reply.headers.location).toBe('/api/mcp/servers/beta');
    expect(ServerView.parse(reply.json)).toMatchObject({ name: 'beta', state: 'ready', tool_count: 8 });
    expect(reply.json.config.env.API_KEY).toEqual({ has_value: true, masked: '••••0001' });
    // Stored in full (the file is the one place a secret lives), and live in the process.
    expect(fleet.config().servers.beta.env.API_KEY).toBe(ENV_SECRET);
    expect(await envOf(fleet, 'beta', 'API_KEY')).toEqual({ set: true, length: ENV_SECRET.length });
  });

  it('a duplicate name → 409, whether running or only configured', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha'), remote: bearerRemote }));
    for (const name of ['alpha', 'remote']) {
      const reply = await fleet.request('/api/mcp/servers', { method: 'POST', body: { name, ...healthy(fleet.dir, 'x') } });
      expect(reply.status, name).toBe(409);
      expect(reply.json.error.code).toBe('conflict');
    }
  });

  it.each([
    ['no name', { type: 'local', command: ['node'] }, 'name'],
    ['a bad name', { name: 'no spaces', type: 'local', command: ['node'] }, 'name'],
    ['no command', { name: 'x', type: 'local', env: { K: ENV_SECRET } }, 'command'],
    ['an unknown field', { name: 'x', type: 'local', command: ['node'], env: { K: ENV_SECRET }, bogus: ENV_SECRET }, 'bogus'],
    ['a non-string env value', { name: 'x', type: 'local', command: ['node'], env: { K: 42, S: ENV_SECRET } }, 'env.K'],
    ['a bad type', { name: 'x', type: 'teleport', command: ['node'] }, 'type'],
    ['a non-http url', { name: 'x', type: 'remote', url: 'ftp://example.invalid', headers: { H: HEADER_SECRET } }, 'url'],
    ['bearer auth without a token', { name: 'x', type: 'remote', url: 'https://e.invalid', auth: { kind: 'bearer' } }, 'auth.token'],
    ['a negative timeout', { name: 'x', type: 'local', command: ['node'], timeout_seconds: -1 }, 'timeout_seconds'],
  ])('%s → 400 naming the field, echoing no secret', async (_label, body, field) => {
    fleet = await startFleet(() => ({}));
    const before = fleet.configText();
    const reply = await fleet.request('/api/mcp/servers', { method: 'POST', body });
    expect(reply.status).toBe(400);
    expect(reply.json.error).toMatchObject({ field });
    expect(reply.json.error.message).toContain(field);
    expect(fleet.configText()).toBe(before);
  });

  it('a body that is not an object → 400', async () => {
    fleet = await startFleet(() => ({}));
    const reply = await fleet.request('/api/mcp/servers', { method: 'POST', body: [1, 2] });
    expect(reply.status).toBe(400);
    // JSON, but not an object: as for null or a number.
    expect(reply.json.error.code).toBe('invalid_json');
  });

  it('a server that fails to start → 422 start_failed, nothing persisted, no secret in the reason', async () => {
    fleet = await startFleet(() => ({}));
    const before = fleet.configText();
    // This fixture prints its whole environment to stderr before exiting.
    const body = { name: 'leaky', type: 'local', command: fixtureCommand('stderr-env'), env: { LEAK: ENV_SECRET } };
    const reply = await fleet.request('/api/mcp/servers', { method: 'POST', body });
    expect(reply.status).toBe(422);
    expect(reply.json.error).toMatchObject({ code: 'start_failed', message: expect.stringContaining('leaky') });
    expect(ErrorKind.options).toContain(reply.json.error.error_kind);
    expect(fleet.configText()).toBe(before);
    expect((await fleet.request('/api/mcp/servers/leaky')).status).toBe(404);
  });
});

describe('PATCH /api/mcp/servers/:name', () => {
  const initialEnv = { KEEP: 'keep-value-01', REPLACE: ENV_SECRET, DROP: 'drop-value-03' };

  it('omitted keys are preserved, strings replace, null deletes — in the view, the file and the process', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha', { env: initialEnv }) }));
    await untilState(fleet, 'alpha', 'ready');
    const pidBefore = readPid(join(fleet.dir, 'alpha.pid'));

    const reply = await fleet.request('/api/mcp/servers/alpha', {
      method: 'PATCH',
      body: { env: { REPLACE: REPLACED_SECRET, DROP: null, ADDED: 'added-value-04' } },
    });
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ name: 'alpha', state: 'ready' });
    expect(Object.keys(reply.json.config.env).sort()).toEqual(['ADDED', 'FIXTURE_PID_FILE', 'KEEP', 'REPLACE']);
    expect(reply.json.config.env.REPLACE).toEqual({ has_value: true, masked: '••••0002' });

    const stored = fleet.config().servers.alpha.env;
    expect(stored).toMatchObject({ KEEP: 'keep-value-01', REPLACE: REPLACED_SECRET, ADDED: 'added-value-04' });
    expect(stored).not.toHaveProperty('DROP');

    // Applied by restarting: a new process with the merged environment.
    expect(readPid(join(fleet.dir, 'alpha.pid'))).not.toBe(pidBefore);
    expect(await allGone([pidBefore])).toBe(true);
    expect(await envOf(fleet, 'alpha', 'KEEP')).toEqual({ set: true, length: 'keep-value-01'.length });
    expect(await envOf(fleet, 'alpha', 'REPLACE')).toEqual({ set: true, length: REPLACED_SECRET.length });
    expect(await envOf(fleet, 'alpha', 'DROP')).toEqual({ set: false, length: 0 });
  });

  it('a PATCH that changes nothing leaves the process and the file as they were: an empty one, the same values, null onto a field that is not there', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha') }));
    await untilState(fleet, 'alpha', 'ready');
    const pidBefore = readPid(join(fleet.dir, 'alpha.pid'));
    const fileBefore = readFileSync(join(fleet.dir, 'mcp_servers.json'), 'utf8');
    for (const body of [{}, { enabled: true }, { tools: { exclude: [] } }, { log_level: null, catalog_max_age_seconds: null, max_total_timeout_seconds: null }]) {
      const reply = await fleet.request('/api/mcp/servers/alpha', { method: 'PATCH', body });
      expect(reply.status, JSON.stringify(body)).toBe(200);
      expect(reply.json.state).toBe('ready');
    }
    expect(readPid(join(fleet.dir, 'alpha.pid'))).toBe(pidBefore);
    expect(readFileSync(join(fleet.dir, 'mcp_servers.json'), 'utf8')).toBe(fileBefore);
    // null onto a field that is set deletes it, as leaving it out would.
    expect((await fleet.request('/api/mcp/servers/alpha', { method: 'PATCH', body: { log_level: 'debug' } })).json.config.log_level).toBe('debug');
    await fleet.request('/api/mcp/servers/alpha', { method: 'PATCH', body: { log_level: null } });
    expect(fleet.config().servers.alpha).not.toHaveProperty('log_level');
  });

  it('a restart that fails leaves the file byte for byte and the server on its old config, and says why', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha', { env: initialEnv }) }));
    await untilState(fleet, 'alpha', 'ready');
    const before = fleet.configText();

    const reply = await fleet.request('/api/mcp/servers/alpha', {
      method: 'PATCH',
      body: { command: fixtureCommand('crash-on-start'), env: { REPLACE: REPLACED_SECRET } },
    });
    expect(reply.status).toBe(422);
    expect(reply.json.error).toMatchObject({ code: 'start_failed', message: expect.stringMatching(/alpha.*failed to start/) });
    expect(ErrorKind.options).toContain(reply.json.error.error_kind);

    expect(fleet.configText()).toBe(before);
    await untilState(fleet, 'alpha', 'ready');
    const view = (await fleet.request('/api/mcp/servers/alpha')).json;
    expect(view.config.command).toEqual(fixtureCommand('healthy'));
    expect(await envOf(fleet, 'alpha', 'REPLACE')).toEqual({ set: true, length: ENV_SECRET.length });
  });

  it('changing auth.kind drops the old kind’s secret', async () => {
    fleet = await startFleet(() => ({ remote: bearerRemote }));
    const reply = await fleet.request('/api/mcp/servers/remote', { method: 'PATCH', body: { auth: { kind: 'none' } } });
    expect(reply.status).toBe(200);
    expect(reply.json.config.auth).toEqual({ kind: 'none' });
    // `none` is auth's default, so the stored entry has no auth at all, and the token is gone from the file.
    expect(fleet.config().servers.remote).not.toHaveProperty('auth');
    expect(fleet.configText()).not.toContain(TOKEN_SECRET);
    expect(fleet.config().servers.remote.headers['X-Team']).toBe(HEADER_SECRET);
  });

  it.each([
    ['a rename', { name: 'other' }, 'name'],
    ['an unknown field', { bogus: true, env: { K: ENV_SECRET } }, 'bogus'],
    ['a non-string env value', { env: { K: 5 } }, 'env.K'],
    ['a negative timeout', { timeout_seconds: -1 }, 'timeout_seconds'],
    ['a type change without its required fields', { type: 'remote' }, 'url'],
  ])('%s → 400 naming the field, file untouched', async (_label, body, field) => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha', { env: initialEnv }) }));
    const before = fleet.configText();
    const reply = await fleet.request('/api/mcp/servers/alpha', { method: 'PATCH', body });
    expect(reply.status).toBe(400);
    expect(reply.json.error.field).toBe(field);
    expect(fleet.configText()).toBe(before);
  });

  it('takes every documented field: max_result_bytes, and one field of reconnect keeping the others', async () => {
    const reconnect = { max_attempts: 9, initial_delay_seconds: 3, max_delay_seconds: 50 };
    fleet = await startFleet(() => ({ off: { ...disabledLocal, reconnect } }));
    for (const body of [{ max_result_bytes: 4096 }, { reconnect: { max_attempts: 2 } }]) {
      const reply = await fleet.request('/api/mcp/servers/off', { method: 'PATCH', body });
      expect(reply.status, JSON.stringify(reply.json)).toBe(200);
    }
    expect(fleet.config().servers.off).toMatchObject({ max_result_bytes: 4096, reconnect: { ...reconnect, max_attempts: 2 } });
  });

  it('a type change keeps every field both types share', async () => {
    const shared = {
      max_result_bytes: 4096,
      reconnect: { max_attempts: 2, initial_delay_seconds: 2, max_delay_seconds: 40 },
      ping_interval_seconds: 0,
    };
    fleet = await startFleet(() => ({ off: { ...disabledLocal, ...shared } }));
    const reply = await fleet.request('/api/mcp/servers/off', {
      method: 'PATCH',
      body: { type: 'remote', url: 'https://example.invalid/mcp' },
    });
    expect(reply.status, JSON.stringify(reply.json)).toBe(200);
    expect(reply.json.config).toMatchObject({ type: 'remote', enabled: false, ...shared });
    expect(fleet.config().servers.off).toMatchObject({ type: 'remote', enabled: false, ...shared });
    expect(fleet.config().servers.off).not.toHaveProperty('command');
  });

  it('an unknown server → 404', async () => {
    fleet = await startFleet(() => ({}));
    const reply = await fleet.request('/api/mcp/servers/ghost', { method: 'PATCH', body: { enabled: false } });
    expect(reply.status).toBe(404);
  });
});

describe('versions: ETag and If-Match on the file store', () => {
  it('each view carries the version of the config it runs; a PATCH with a stale If-Match is 412 and changes nothing', async () => {
    fleet = await startFleet(() => ({ off: disabledLocal, other: { ...disabledLocal, command: ['node', 'other.js'] } }));
    const first = await fleet.request('/api/mcp/servers/off');
    expect(first.json.version).toEqual(expect.any(Number));
    expect(first.headers.etag).toBe(`"${first.json.version}"`);
    // A version is the server's own: another server's config does not share it.
    expect((await fleet.request('/api/mcp/servers/other')).json.version).not.toBe(first.json.version);

    const changed = await fleet.request('/api/mcp/servers/off', {
      method: 'PATCH',
      body: { timeout_seconds: 17 },
      headers: { 'if-match': first.headers.etag as string },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json.version).toBeGreaterThan(first.json.version);
    expect((await fleet.request('/api/mcp/servers/off')).json.version).toBe(changed.json.version);

    const before = fleet.configText();
    const stale = await fleet.request('/api/mcp/servers/off', {
      method: 'PATCH',
      body: { timeout_seconds: 99 },
      headers: { 'if-match': `"${first.json.version}"` },
    });
    expect(stale.status).toBe(412);
    expect(stale.json.error).toMatchObject({ code: 'version_mismatch', version: changed.json.version });
    expect(fleet.configText()).toBe(before);
    const bad = await fleet.request('/api/mcp/servers/off', { method: 'PATCH', body: { timeout_seconds: 9 }, headers: { 'if-match': 'yesterday' } });
    expect(bad.status).toBe(400);
    // A removal at a version the server moved past removes nothing.
    const staleRemoval = await fleet.request('/api/mcp/servers/off', { method: 'DELETE', headers: { 'if-match': `"${first.json.version}"` } });
    expect(staleRemoval.status).toBe(412);
    expect(staleRemoval.json.error).toMatchObject({ code: 'version_mismatch', version: changed.json.version });
    expect(fleet.configText()).toBe(before);
    expect((await fleet.request('/api/mcp/servers/off')).status).toBe(200);
    // A hand edit moves the version too.
    writeFileSync(
      join(fleet.dir, 'mcp_servers.json'),
      JSON.stringify({ servers: { off: { ...disabledLocal, timeout_seconds: 33 }, other: { ...disabledLocal, command: ['node', 'other.js'] } } }),
    );
    await expect.poll(async () => (await fleet!.request('/api/mcp/servers/off')).json.config.timeout_seconds).toBe(33);
    const current = await fleet.request(`/api/mcp/servers/off`);
    expect(current.json.version).toBeGreaterThan(changed.json.version);
    // At the version it is at, the removal goes ahead.
    expect((await fleet.request('/api/mcp/servers/off', { method: 'DELETE', headers: { 'if-match': current.headers.etag as string } })).status).toBe(204);
    expect(fleet.config().servers.off).toBeUndefined();
  });
});

describe('a write answers the version it stored', () => {
  it('POST and each PATCH answer their version and a matching ETag, so If-Match chains without a GET', async () => {
    fleet = await startFleet(() => ({}));
    const added = await fleet.request('/api/mcp/servers', { method: 'POST', body: { name: 'chain', ...disabledLocal } });
    expect(added.status, added.text).toBe(201);
    expect(added.json.version).toEqual(expect.any(Number));
    expect(added.headers.etag).toBe(`"${added.json.version}"`);
    let etag = added.headers.etag as string;
    const versions = [added.json.version as number];
    for (const timeout of [11, 12, 13, 14]) {
      const patched = await fleet.request('/api/mcp/servers/chain', { method: 'PATCH', body: { timeout_seconds: timeout }, headers: { 'if-match': etag } });
      expect(patched.status, patched.text).toBe(200);
      expect(patched.json.config.timeout_seconds).toBe(timeout);
      expect(patched.headers.etag).toBe(`"${patched.json.version}"`);
      versions.push(patched.json.version);
      etag = patched.headers.etag as string;
    }
    expect(versions).toEqual([...versions].sort((x, y) => x - y));
    expect(new Set(versions).size).toBe(versions.length);
    expect((await fleet.request('/api/mcp/servers/chain')).json.version).toBe(versions.at(-1));
  });

  it('concurrent PATCHes of several servers each answer the version of their own write', async () => {
    const names = ['p0', 'p1', 'p2'];
    fleet = await startFleet(() => Object.fromEntries(names.map((name) => [name, { ...disabledLocal, command: ['node', `${name}.js`] }])));
    const answers = await Promise.all(
      Array.from({ length: 15 }, (_, index) =>
        fleet!.request(`/api/mcp/servers/${names[index % 3]}`, { method: 'PATCH', body: { env: { [`K${index}`]: `v${index}` } } }),
      ),
    );
    for (const answer of answers) {
      expect(answer.status, answer.text).toBe(200);
      expect(answer.json.version).toEqual(expect.any(Number));
      expect(answer.headers.etag).toBe(`"${answer.json.version}"`);
    }
    expect(new Set(answers.map((answer) => answer.json.version)).size).toBe(answers.length);
    // Each server's last answer is where it ended, and chaining from it applies.
    for (const name of names) {
      const last = answers.filter((answer) => answer.json.name === name).sort((x, y) => y.json.version - x.json.version)[0]!;
      const next = await fleet.request(`/api/mcp/servers/${name}`, { method: 'PATCH', body: { timeout_seconds: 19 }, headers: { 'if-match': last.headers.etag as string } });
      expect(next.status, next.text).toBe(200);
      expect(next.json.version).toBeGreaterThan(last.json.version);
    }
  });
});

describe('every field of the config schemas goes through POST and PATCH', () => {
  // Walked from schema.ts: a field added there is tested here without a change (once it has a sample).
  const cases = fieldCases();
  const base = { local: disabledLocal, remote: disabledRemote };

  it(`${cases.length} fields of both types, each added with it and patched onto a server without it`, async () => {
    fleet = await startFleet(() => ({}));
    const stored = (name: string) => ServerConfig.parse(fleet!.config().servers[name]);
    for (const [i, { type, label, patch }] of cases.entries()) {
      const created = await fleet.request('/api/mcp/servers', { method: 'POST', body: { name: `post-${i}`, ...base[type], ...patch } });
      expect(created.status, `POST ${type}:${label} ${JSON.stringify(created.json)}`).toBe(201);
      // Read back as the worker reads the file: a sample that is the field's default is not written out.
      expect(stored(`post-${i}`), `POST ${type}:${label}`).toMatchObject(patch);

      expect((await fleet.request('/api/mcp/servers', { method: 'POST', body: { name: `patch-${i}`, ...base[type] } })).status).toBe(201);
      const patched = await fleet.request(`/api/mcp/servers/patch-${i}`, { method: 'PATCH', body: patch });
      expect(patched.status, `PATCH ${type}:${label} ${JSON.stringify(patched.json)}`).toBe(200);
      expect(stored(`patch-${i}`), `PATCH ${type}:${label}`).toMatchObject(patch);
    }
  });
});

describe('DELETE /api/mcp/servers/:name', () => {
  it('stops the server, unregisters its tools, persists, answers 204', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha'), keep: healthy(dir, 'keep') }));
    await untilState(fleet, 'alpha', 'ready');
    await untilState(fleet, 'keep', 'ready');
    const pid = readPid(join(fleet.dir, 'alpha.pid'));

    const reply = await fleet.request('/api/mcp/servers/alpha', { method: 'DELETE' });
    expect(reply.status).toBe(204);
    expect(reply.text).toBe('');
    expect(await allGone([pid])).toBe(true);
    expect((await fleet.request('/api/mcp/servers/alpha')).status).toBe(404);
    const tools = (await fleet.request('/api/mcp/tools')).json.tools.map((t: { name: string }) => t.name);
    expect(tools.some((name: string) => name.startsWith('alpha__'))).toBe(false);
    expect(tools).toContain('keep__echo');
    expect(Object.keys(fleet.config().servers)).toEqual(['keep']);
  });

  it('an unknown server → 404', async () => {
    fleet = await startFleet(() => ({}));
    expect((await fleet.request('/api/mcp/servers/ghost', { method: 'DELETE' })).status).toBe(404);
  });

  it('while the file does not parse → 409 config_file_broken, the server still running; a PATCH of an entry broken by hand → 409 config_entry_invalid', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha') }));
    await untilState(fleet, 'alpha', 'ready');
    const pid = readPid(join(fleet.dir, 'alpha.pid'));
    const file = join(fleet.dir, 'mcp_servers.json');
    const valid = readFileSync(file, 'utf8');

    writeFileSync(file, '{ "servers": {');
    const removal = await fleet.request('/api/mcp/servers/alpha', { method: 'DELETE' });
    expect(removal.status).toBe(409);
    expect(removal.json.error).toMatchObject({ code: 'config_file_broken' });
    expect(readPid(join(fleet.dir, 'alpha.pid'))).toBe(pid);
    expect((await fleet.request('/api/mcp/servers/alpha')).json.state).toBe('ready');

    // Valid JSON again, but alpha's entry now has a field nobody knows.
    const entry = JSON.parse(valid) as { servers: Record<string, Record<string, unknown>> };
    entry.servers['alpha']!['oops'] = 1;
    writeFileSync(file, JSON.stringify(entry));
    const change = await fleet.request('/api/mcp/servers/alpha', { method: 'PATCH', body: { timeout_seconds: 30 } });
    expect(change.status).toBe(409);
    // `field` names the field that fails, not the server.
    expect(change.json.error).toMatchObject({ code: 'config_entry_invalid', field: 'servers.alpha.oops' });
    expect(change.json.error.message).toContain('servers.alpha.oops: unknown field');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(entry);
    // An add of a name whose entry does not validate, and that runs nothing: refused before anything starts.
    const ghost = { ...(healthy(fleet.dir, 'ghost') as Record<string, unknown>), oops: 1 };
    writeFileSync(file, JSON.stringify({ servers: { ...entry.servers, ghost } }));
    const { oops: _, ...ghostConfig } = ghost;
    const add = await fleet.request('/api/mcp/servers', { method: 'POST', body: { name: 'ghost', ...ghostConfig } });
    expect(add.status).toBe(409);
    expect(add.json.error).toMatchObject({ code: 'conflict' });
    expect(add.json.error.message).toMatch(/^a server named "ghost" is already in the file, in an entry that does not validate \(servers\.ghost\.oops: unknown field\); fix it in the file, or remove that server first$/);
    expect(existsSync(join(fleet.dir, 'ghost.pid'))).toBe(false);
    // Such an entry, with no server running: a PATCH is refused naming the problem, a DELETE takes it out of the file.
    const patched = await fleet.request('/api/mcp/servers/ghost', { method: 'PATCH', body: { timeout_seconds: 30 } });
    expect([patched.status, patched.json.error.code]).toEqual([409, 'config_entry_invalid']);
    expect((await fleet.request('/api/mcp/servers/ghost', { method: 'DELETE' })).status).toBe(204);
    expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')).servers)).toEqual(['alpha']);
    expect((await fleet.request('/api/mcp/servers/ghost', { method: 'DELETE' })).status).toBe(404);
    // And alpha's, running on its last valid config: DELETE stops it and removes the entry.
    expect((await fleet.request('/api/mcp/servers/alpha', { method: 'DELETE' })).status).toBe(204);
    expect(JSON.parse(readFileSync(file, 'utf8')).servers).toEqual({});
    expect(isAlive(pid)).toBe(false);
  });
});

describe('POST /api/mcp/servers/:name/restart', () => {
  it('restarts that server alone with a new process', async () => {
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha'), other: healthy(dir, 'other') }));
    await untilState(fleet, 'alpha', 'ready');
    await untilState(fleet, 'other', 'ready');
    const [alphaPid, otherPid] = ['alpha', 'other'].map((name) => readPid(join(fleet!.dir, `${name}.pid`)));

    const reply = await fleet.request('/api/mcp/servers/alpha/restart', { method: 'POST' });
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ name: 'alpha', state: 'ready', tool_count: 8 });
    expect(readPid(join(fleet.dir, 'alpha.pid'))).not.toBe(alphaPid);
    expect(await allGone([alphaPid!])).toBe(true);
    expect(readPid(join(fleet.dir, 'other.pid'))).toBe(otherPid);
  });

  it('an unknown server → 404', async () => {
    fleet = await startFleet(() => ({}));
    expect((await fleet.request('/api/mcp/servers/ghost/restart', { method: 'POST' })).status).toBe(404);
  });
});

describe('POST /api/mcp/servers/:name/auth', () => {
  it('refuses servers that do not use OAuth (409), and an OAuth server that is not waiting for consent (409)', async () => {
    const perUser = (dir: string) => ({ ...healthy(dir, 'mine'), scope: 'per_user', env: { X: '${user.X}' }, user_inputs: { X: {} } });
    fleet = await startFleet((dir) => ({ alpha: healthy(dir, 'alpha'), bearer: bearerRemote, oauth: oauthRemote, mine: perUser(dir) }));
    // A per_user server too: it has no account to connect unless it uses OAuth.
    for (const name of ['alpha', 'bearer', 'mine']) {
      const reply = await fleet.request(`/api/mcp/servers/${name}/auth`, { method: 'POST' });
      expect(reply.status, name).toBe(409);
      expect(reply.json.error.code).toBe('not_oauth');
    }
    const oauth = await fleet.request('/api/mcp/servers/oauth/auth', { method: 'POST' });
    expect(oauth.status).toBe(409);
    expect(oauth.json).toEqual({
      error: { code: 'not_needed', message: 'server "oauth" is disabled: consent starts only from needs_reauth' },
    });
    expect((await fleet.request('/api/mcp/servers/ghost/auth', { method: 'POST' })).status).toBe(404);
  });
});

describe('GET /api/mcp/servers: ETag and If-None-Match', () => {
  /** The list as the host has it now, serialized the way the route must answer it. */
  const listJson = (f: Fleet) => JSON.stringify({ servers: f.host.status() });

  it('answers the list with a strong ETag that stays while nothing changes', async () => {
    fleet = await startFleet(() => ({ one: disabledLocal, two: disabledRemote }));
    const first = await fleet.request('/api/mcp/servers');
    expect(first.status).toBe(200);
    expect(first.text).toBe(listJson(fleet));
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(first.headers['content-length']).toBe(String(Buffer.byteLength(first.text)));
    const etag = first.headers.etag;
    // Strong: quoted, no W/ prefix.
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await fleet.request('/api/mcp/servers');
    expect(again.status).toBe(200);
    expect(again.headers.etag).toBe(etag);
    expect(again.text).toBe(first.text);
    // HEAD: the same headers, no body.
    const head = await fleet.request('/api/mcp/servers', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers['content-length']).toBe(first.headers['content-length']);
    expect(head.headers.etag).toBe(etag);
  });

  it('answers 304 with no body to If-None-Match naming the current tag (also in a list, weak or *), 200 to another', async () => {
    fleet = await startFleet(() => ({ one: disabledLocal }));
    const { headers, text } = await fleet.request('/api/mcp/servers');
    const etag = headers.etag!;
    for (const ifNoneMatch of [etag, `"other", ${etag}`, `W/${etag}`, '*']) {
      const reply = await fleet.request('/api/mcp/servers', { headers: { 'if-none-match': ifNoneMatch } });
      expect(reply.status, ifNoneMatch).toBe(304);
      expect(reply.text, ifNoneMatch).toBe('');
      expect(reply.headers.etag, ifNoneMatch).toBe(etag);
      expect(reply.headers['content-length'], ifNoneMatch).toBeUndefined();
    }
    const stale = await fleet.request('/api/mcp/servers', { headers: { 'if-none-match': '"not-the-tag"' } });
    expect(stale.status).toBe(200);
    expect(stale.text).toBe(text);
    expect(stale.headers.etag).toBe(etag);
    // HEAD is conditional alike.
    expect((await fleet.request('/api/mcp/servers', { method: 'HEAD', headers: { 'if-none-match': etag } })).status).toBe(304);
  });

  it('a change to any server gives new bytes and a new tag; the old tag then gets the new list', async () => {
    fleet = await startFleet(() => ({ one: disabledLocal, two: disabledRemote }));
    const before = await fleet.request('/api/mcp/servers');
    expect((await fleet.request('/api/mcp/servers', { method: 'POST', body: { name: 'three', ...disabledLocal } })).status).toBe(201);
    const added = await fleet.request('/api/mcp/servers', { headers: { 'if-none-match': before.headers.etag } });
    expect(added.status).toBe(200);
    expect(added.headers.etag).not.toBe(before.headers.etag);
    expect(added.text).toBe(listJson(fleet));
    expect(added.json.servers.map((view: { name: string }) => view.name)).toEqual(['one', 'two', 'three']);

    // A change of one server's view: the others' bytes are kept, the whole list is still exact.
    expect((await fleet.request('/api/mcp/servers/two', { method: 'PATCH', body: { timeout_seconds: 7 } })).status).toBe(200);
    const patched = await fleet.request('/api/mcp/servers', { headers: { 'if-none-match': added.headers.etag } });
    expect(patched.status).toBe(200);
    expect(patched.headers.etag).not.toBe(added.headers.etag);
    expect(patched.text).toBe(listJson(fleet));
    expect(patched.json.servers.find((view: { name: string }) => view.name === 'two').config.timeout_seconds).toBe(7);

    // A removal changes the list too.
    expect((await fleet.request('/api/mcp/servers/three', { method: 'DELETE' })).status).toBe(204);
    const removed = await fleet.request('/api/mcp/servers', { headers: { 'if-none-match': patched.headers.etag } });
    expect(removed.status).toBe(200);
    expect(removed.text).toBe(listJson(fleet));
    expect([before.headers.etag, added.headers.etag, patched.headers.etag]).not.toContain(removed.headers.etag);
  });

  it('a conditional request still needs the token: 401, not 304', async () => {
    fleet = await startFleet(() => ({ one: disabledLocal }));
    const { headers } = await fleet.request('/api/mcp/servers');
    const reply = await fleet.request('/api/mcp/servers', { noAuth: true, headers: { 'if-none-match': headers.etag } });
    expect(reply.status).toBe(401);
    expect(reply.headers.etag).toBeUndefined();
  });
});
