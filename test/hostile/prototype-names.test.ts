// Names that are also members of Object.prototype (`constructor`, `toString`,
// …) are valid server, tool, prompt and resource names: servers so named load
// from the config file, are added, patched, restarted, called and removed
// through the API, survive a restart of the worker (the journal replayed), and
// nothing reaches or changes a prototype on the way. `__proto__` is a valid
// tool name but refused, by name, as a server name. The fixture, like many
// servers of older SDKs, offers resources without a template handler.
import { createMcpHost } from '../../src/host.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { untilListed } from '../host/helpers.js';
import { whoamiPerUser } from '../fixtures/index.js';
import { healthy, startFleet } from '../http/fleet.js';
import { closeAndExpectNoChild, expectStillServing, hostile, untilState, type Fleet } from './helpers.js';

/** The fixture's tool, prompt and resource names. */
const TOOLS = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'prototype'];
const NAMES = ['constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype', 'isPrototypeOf'];
// Three load from the file; the other three are added through the API.
const FROM_FILE = NAMES.slice(0, 3);
const ADDED = NAMES.slice(3);
const prototypeKeys = () => Object.getOwnPropertyNames(Object.prototype).sort();
const keysBefore = prototypeKeys();

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet(
    (dir) => ({ ...Object.fromEntries(FROM_FILE.map((name) => [name, hostile(dir, name, 'prototype-names')])), healthy: healthy(dir, 'healthy') }),
    {},
    { persistJournal: true },
  );
  await fleet.host.settled();
});
afterAll(async () => {
  if (fleet) await closeAndExpectNoChild(fleet, []);
});

const text = (result: { content: unknown[] }) => (result.content[0] as { text: string }).text;

describe('servers, tools, prompts and resources named like Object.prototype members', () => {
  test('servers so named load from the file and reach ready, with every tool so named', async () => {
    for (const name of FROM_FILE) {
      expect(fleet.host.server(name)?.state, name).toBe('ready');
      expect(fleet.host.server(name)?.name).toBe(name);
    }
    expect(fleet.host.status().map((view) => view.name).sort()).toEqual([...FROM_FILE, 'healthy'].sort());
    const tools = fleet.host.tools().map((tool) => tool.name);
    for (const server of FROM_FILE) for (const tool of TOOLS) expect(tools).toContain(`${server}__${tool}`);
    expect(fleet.host.server('valueOf')).toBeUndefined();
    expect(fleet.host.server('isPrototypeOf')).toBeUndefined();
    expect(fleet.host.server('__defineGetter__')).toBeUndefined();
  });

  test('every tool answers as itself, its argument named like a member too', async () => {
    for (const server of FROM_FILE) {
      for (const tool of TOOLS) {
        const args = tool === '__proto__' ? { x: 'x' } : { [tool]: 'x' };
        const result = await fleet.host.callTool(`${server}__${tool}`, args);
        expect(result.details.is_error, `${server}__${tool}`).toBe(false);
        expect(text(result)).toBe(`called ${tool} with ${JSON.stringify(args)}`);
      }
    }
    // A name no server has is an unknown tool, not a member of some record.
    const unknown = await fleet.host.callTool('valueOf__echo', {});
    expect(unknown.details.is_error).toBe(true);
    expect(text(unknown)).toBe('unknown tool "valueOf__echo"');
  });

  test('the catalog names every prompt and resource; a resource so named is read', async () => {
    for (const server of FROM_FILE) {
      const entry = await untilListed(fleet.host, server);
      // The server's own tools, besides the resource tools the host adds for a server with resources.
      expect(entry?.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(TOOLS.map((tool) => `${server}__${tool}`)));
      expect(entry?.prompts?.map((prompt) => prompt.name).sort()).toEqual([...TOOLS].sort());
      expect(entry?.resources?.map((resource) => resource.name).sort()).toEqual([...TOOLS].sort());
      // The fixture has no template handler: it has no templates, and its resources still list.
      expect(entry?.resource_templates).toEqual([]);
    }
    const templates = await fleet.host.callTool('toString__list_resource_templates', {});
    expect(templates.details.is_error).toBe(false);
    expect(JSON.parse(text(templates))).toEqual({ resourceTemplates: [] });
    const read = await fleet.host.readResource('toString', 'note://constructor');
    expect(read.contents[0]).toMatchObject({ text: 'note://constructor' });
  });

  test('through the API: added, patched, restarted, called and removed', async () => {
    for (const name of ADDED) {
      const added = await fleet.request('/api/mcp/servers', { method: 'POST', body: { name, ...hostile(fleet.dir, name, 'prototype-names') } });
      expect(added.status, added.text).toBe(201);
      await untilState(fleet.host, name, 'ready');
      const called = await fleet.request(`/api/mcp/tools/${name}__constructor/call`, { method: 'POST', body: { arguments: {} } });
      expect(called.status, called.text).toBe(200);
      expect(called.json.content[0].text).toBe('called constructor with {}');
      const patched = await fleet.request(`/api/mcp/servers/${name}`, { method: 'PATCH', body: { timeout_seconds: 12 } });
      expect(patched.status, patched.text).toBe(200);
      await untilState(fleet.host, name, 'ready');
      expect(fleet.config().servers[name].timeout_seconds).toBe(12);
      const restarted = await fleet.request(`/api/mcp/servers/${name}/restart`, { method: 'POST' });
      expect(restarted.status, restarted.text).toBeLessThan(300);
      await untilState(fleet.host, name, 'ready');
    }
    expect(Object.keys(fleet.config().servers).sort()).toEqual([...NAMES, 'healthy'].sort());
    const listed = await fleet.request('/api/mcp/servers');
    expect(listed.status).toBe(200);
    const removed = await fleet.request('/api/mcp/servers/valueOf', { method: 'DELETE' });
    expect(removed.status, removed.text).toBeLessThan(300);
    expect(fleet.host.server('valueOf')).toBeUndefined();
    expect(Object.keys(fleet.config().servers)).not.toContain('valueOf');
    expect(fleet.host.tools().map((tool) => tool.name)).not.toContain('valueOf__valueOf');
    await expectStillServing(fleet);
  });

  test('`__proto__` is refused as a server name, by the API and the library, and nothing is written', async () => {
    const before = fleet.configText();
    const refused = await fleet.request('/api/mcp/servers', { method: 'POST', body: { name: '__proto__', ...hostile(fleet.dir, 'x', 'prototype-names') } });
    expect(refused.status).toBe(400);
    expect(refused.json.error.message).toContain('not "__proto__"');
    await expect(fleet.host.addServer('__proto__', { type: 'local', command: ['node'] })).rejects.toThrow(/not "__proto__"/);
    expect(fleet.configText()).toBe(before);
  });

  test('a per_user input named like a member: unset until the user sets it, then it reaches their process', async () => {
    const principal = { principal: { id: 'alice' } };
    await fleet.host.addServer('hasOwnProperty_user', {
      ...(whoamiPerUser({ env: { USER_TOKEN: '${user.constructor}' }, user_inputs: { constructor: { description: 'a token' } } }) as object),
    } as never);
    expect((await fleet.host.inputs('hasOwnProperty_user', principal)).inputs).toEqual({
      constructor: { set: false, secret: true, description: 'a token' },
    });
    const before = await fleet.host.callTool('hasOwnProperty_user__whoami', {}, principal);
    expect(before.details.is_error).toBe(true);
    expect(text(before)).toContain('constructor');
    await fleet.host.setInputs('hasOwnProperty_user', { constructor: 'alice-token-1' }, principal);
    expect((await fleet.host.inputs('hasOwnProperty_user', principal)).inputs).toEqual({
      constructor: { set: true, secret: true, description: 'a token' },
    });
    const after = await fleet.host.callTool('hasOwnProperty_user__whoami', {}, principal);
    expect(text(after)).toContain('alice-token-1');
    // A user named like a member has values of their own; `__proto__` is no principal.
    const member = { principal: { id: 'constructor' } };
    expect((await fleet.host.inputs('hasOwnProperty_user', member)).inputs).toEqual({
      constructor: { set: false, secret: true, description: 'a token' },
    });
    await fleet.host.setInputs('hasOwnProperty_user', { constructor: 'member-token-2' }, member);
    expect(text(await fleet.host.callTool('hasOwnProperty_user__whoami', {}, member))).toContain('member-token-2');
    expect(text(await fleet.host.callTool('hasOwnProperty_user__whoami', {}, principal))).toContain('alice-token-1');
    expect(() => fleet.host.tools({ principal: { id: '__proto__' } })).toThrow(/__proto__/);
    await fleet.host.removeServer('hasOwnProperty_user');
  });

  test('the worker restarted on the same state dir: the journal replays and every server is ready again', async () => {
    const before = fleet.host.events().filter((event) => event.type === 'server.transitioned' && event.server === 'constructor').length;
    await fleet.host.shutdown();
    const again = createMcpHost({ stateDir: fleet.dir, logger: { info: () => {}, warn: () => {} } });
    try {
      await again.start();
      await again.settled();
      const remaining = NAMES.filter((name) => name !== 'valueOf');
      for (const name of remaining) await untilState(again, name, 'ready');
      expect(again.status().map((view) => view.name).sort()).toEqual([...remaining, 'healthy'].sort());
      const replayed = again.events().filter((event) => event.type === 'server.transitioned' && event.server === 'constructor').length;
      expect(replayed).toBeGreaterThan(before);
      expect(text(await again.callTool('constructor____proto__', {}))).toBe('called __proto__ with {}');
    } finally {
      await again.shutdown();
    }
  });

  test('no prototype gained or lost a member', () => {
    expect(prototypeKeys()).toEqual(keysBefore);
    expect(({} as Record<string, unknown>).ready).toBeUndefined();
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });
});
