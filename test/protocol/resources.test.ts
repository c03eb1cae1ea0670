// Resource meta tools ({server}__list_resources / read_resource /
// list_resource_templates) through the live connection, only while ready.
import { afterEach, describe, expect, test } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { catalogServer, startHost, textOf, type Running } from './helpers.js';

let running: Running | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const EVERYTHING = ['node', 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];

describe('resource meta tools', () => {
  test('list, read (text as text, blobs summarized) and list templates on the fixture', async () => {
    running = await startHost((dir) => ({ cat: catalogServer(dir, 'cat') }), ['cat']);
    const { host } = running;
    const names = host.tools().map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['cat__list_resources', 'cat__read_resource', 'cat__list_resource_templates']));
    const read = host.tools().find((tool) => tool.name === 'cat__read_resource')!;
    expect(read.parameters).toMatchObject({ required: ['uri'] });

    const listed = JSON.parse(textOf(await host.callTool('cat__list_resources', {})));
    expect(listed.resources.map((r: { uri: string }) => r.uri)).toEqual(['fixture://static', 'fixture://blob']);

    const text = await host.callTool('cat__read_resource', { uri: 'fixture://static' });
    expect(text).toEqual({ content: [{ type: 'text', text: 'static body' }], details: { is_error: false, server: 'cat', tool: 'read_resource' } });

    const blob = await host.callTool('cat__read_resource', { uri: 'fixture://blob' });
    expect(textOf(blob)).toBe('[binary resource fixture://blob (application/octet-stream, 10 bytes)]');

    const templated = await host.callTool('cat__read_resource', { uri: 'fixture://item/7' });
    expect(textOf(templated)).toBe('item 7');

    const templates = JSON.parse(textOf(await host.callTool('cat__list_resource_templates', {})));
    expect(templates.resourceTemplates).toEqual([expect.objectContaining({ uriTemplate: 'fixture://item/{id}', name: 'item' })]);

    const missing = await host.callTool('cat__read_resource', { uri: 'fixture://nope' });
    expect(missing.details.is_error).toBe(true);
    expect(textOf(missing)).toMatch(/^read_resource failed: .*fixture:\/\/nope/);
  });

  test('a read, completion or prompt its caller cancelled rejects with the abort, not as the server failing', async () => {
    running = await startHost((dir) => ({ cat: catalogServer(dir, 'cat') }), ['cat']);
    const { host } = running;
    const aborted = () => AbortSignal.abort();
    const reason = (promise: Promise<unknown>) => promise.then(() => 'resolved', (error: Error) => error.name);
    expect(await reason(host.readResource('cat', 'fixture://static', { signal: aborted() }))).toBe('AbortError');
    expect(await reason(host.complete('cat', { ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'name', value: 'A' } }, { signal: aborted() }))).toBe('AbortError');
    expect(await reason(host.renderPrompt('cat:greet', { name: 'Ada' }, { signal: aborted() }))).toBe('AbortError');
    // Not cancelled, the same read answers.
    expect((await host.readResource('cat', 'fixture://static')).contents[0]).toMatchObject({ text: 'static body' });
  });

  test('a server without the resources capability gets none; the tool filter applies to them', async () => {
    running = await startHost(
      (dir) => ({
        plain: { type: 'local', command: fixtureCommand('healthy'), env: { FIXTURE_PID_FILE: `${dir}/plain.pid` } },
        cat: catalogServer(dir, 'cat', { tools: { include: null, exclude: ['list_resource_templates'] } }),
      }),
      ['plain', 'cat'],
    );
    const names = running.host.tools().map((tool) => tool.name);
    expect(names.filter((name) => name.startsWith('plain__') && name.includes('resource'))).toEqual([]);
    expect(names).toContain('cat__read_resource');
    expect(names).not.toContain('cat__list_resource_templates');
  });

  test('they go with the server: not callable once it stopped', async () => {
    running = await startHost((dir) => ({ cat: catalogServer(dir, 'cat') }), ['cat']);
    const { host } = running;
    // An agent may still hold the tool it was given before the server went.
    const held = host.tools().find((tool) => tool.name === 'cat__read_resource');
    expect(held).toBeDefined();
    await host.removeServer('cat');
    expect(host.tools()).toEqual([]);
    // It calls as callTool does: the server is gone, so its tool is an unknown one.
    const result = await held!.execute({ uri: 'fixture://static' });
    expect(result.details.is_error).toBe(true);
    expect(result.content[0]).toMatchObject({ type: 'text', text: 'unknown tool "cat__read_resource"' });
  });

  test('server-everything: its resources are readable through the meta tools', async () => {
    running = await startHost(() => ({ everything: { type: 'local', command: EVERYTHING, timeout_seconds: 30 } }), ['everything']);
    const { host } = running;
    const listed = JSON.parse(textOf(await host.callTool('everything__list_resources', {})));
    const uri = listed.resources.find((r: { mimeType?: string }) => r.mimeType === 'text/markdown')?.uri as string;
    expect(uri).toMatch(/^demo:\/\//);
    const read = await host.callTool('everything__read_resource', { uri });
    expect(read.details.is_error).toBe(false);
    expect(textOf(read).length).toBeGreaterThan(100);

    const blob = await host.callTool('everything__read_resource', { uri: 'demo://resource/dynamic/blob/1' });
    expect(textOf(blob)).toMatch(/^\[binary resource demo:\/\/resource\/dynamic\/blob\/1 \(.*\d+ bytes\)\]$/);
    const templates = JSON.parse(textOf(await host.callTool('everything__list_resource_templates', {})));
    expect(templates.resourceTemplates.map((t: { uriTemplate: string }) => t.uriTemplate)).toContain(
      'demo://resource/dynamic/text/{resourceId}',
    );
  });
});
