// Prompts as slash commands: host.prompts() / host.renderPrompt() and the
// HTTP routes GET /api/mcp/prompts and POST /api/mcp/prompts/:name/render.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PromptNotFoundError } from '../../src/index.js';
import { untilListed } from '../host/helpers.js';
import { serve, type Served } from '../http/helpers.js';
import { catalogServer, startHost, type Running } from './helpers.js';

const EVERYTHING = ['node', 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];

let running: Running;
let served: Served;
beforeAll(async () => {
  running = await startHost(
    (dir) => ({ cat: catalogServer(dir, 'cat'), everything: { type: 'local', command: EVERYTHING, timeout_seconds: 30 } }),
    ['cat', 'everything'],
  );
  served = await serve(running.host);
  // Their prompts are listed once they are ready: the catalog says when (not listed: null).
  for (const name of ['cat', 'everything']) await untilListed(running.host, name);
});
afterAll(async () => {
  await served?.close();
  await running?.close();
});

const render = (name: string, body: unknown) =>
  served.request(`/api/mcp/prompts/${encodeURIComponent(name)}/render`, { method: 'POST', body });

describe('library', () => {
  test('prompts() lists every ready server prompt with its slash command and arguments', () => {
    const greet = running.host.prompts().find((prompt) => prompt.command === '/cat:greet');
    expect(greet).toEqual({
      command: '/cat:greet',
      server: 'cat',
      name: 'greet',
      description: 'Greets someone',
      arguments: [{ name: 'name', required: true }, { name: 'style', required: false }],
    });
    expect(running.host.prompts().map((prompt) => prompt.command)).toEqual(
      expect.arrayContaining(['/everything:simple-prompt', '/everything:args-prompt']),
    );
  });

  test('renderPrompt() fills in the arguments through the live connection', async () => {
    const rendered = await running.host.renderPrompt('/cat:greet', { name: 'Ada', style: 'warm' });
    expect(rendered).toEqual({
      command: '/cat:greet',
      server: 'cat',
      name: 'greet',
      messages: [{ role: 'user', content: { type: 'text', text: 'Say hello to Ada (warm)' } }],
    });
    const everything = await running.host.renderPrompt('everything:args-prompt', { city: 'Paris' });
    expect(JSON.stringify(everything.messages)).toContain('Paris');
  });

  test('an unknown prompt is a PromptNotFoundError', async () => {
    await expect(running.host.renderPrompt('cat:nope')).rejects.toBeInstanceOf(PromptNotFoundError);
    await expect(running.host.renderPrompt('nobody:greet')).rejects.toBeInstanceOf(PromptNotFoundError);
  });
});

describe('HTTP', () => {
  test('GET /api/mcp/prompts lists them, wrapped', async () => {
    const reply = await served.request('/api/mcp/prompts');
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.json)).toEqual(['prompts']);
    expect(reply.json.prompts).toContainEqual(expect.objectContaining({ command: '/cat:greet', server: 'cat', name: 'greet' }));
  });

  test('POST /api/mcp/prompts/:server:prompt/render renders with arguments', async () => {
    const reply = await render('cat:greet', { arguments: { name: 'Grace' } });
    expect(reply.status).toBe(200);
    expect(reply.json.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Say hello to Grace' } }]);
    // The colon needs no encoding.
    const plain = await served.request('/api/mcp/prompts/everything:simple-prompt/render', { method: 'POST', body: {} });
    expect(plain.status).toBe(200);
    expect(plain.json.messages.length).toBeGreaterThan(0);
  });

  test('a missing required argument is a 400 naming it; an unknown one too', async () => {
    const missing = await render('cat:greet', { arguments: {} });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ code: 'invalid_request', field: 'arguments.name' });
    const unknown = await render('cat:greet', { arguments: { name: 'x', colour: 'red' } });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toMatchObject({ code: 'invalid_request', field: 'arguments.colour' });
    const notString = await render('cat:greet', { arguments: { name: 42 } });
    expect(notString.status).toBe(400);
    expect(notString.json.error.field).toBe('arguments.name');
  });

  test('an unknown prompt is a 404', async () => {
    const reply = await render('cat:nope', {});
    expect(reply.status).toBe(404);
    expect(reply.json.error.code).toBe('not_found');
  });
});

describe('a server just ready, its prompts still being listed', () => {
  test('renderPrompt() waits for that listing rather than calling the prompt unknown', async () => {
    const slow = await startHost((dir) => ({ cat: catalogServer(dir, 'cat', {}, '--slow-prompt-list', '400') }), ['cat']);
    try {
      // Ready, and nothing listed yet.
      expect(slow.host.prompts()).toEqual([]);
      const rendered = await slow.host.renderPrompt('/cat:greet', { name: 'Ada' });
      expect(rendered.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Say hello to Ada' } }]);
      // Once listed, a name the server does not offer is still unknown.
      await expect(slow.host.renderPrompt('cat:nope')).rejects.toBeInstanceOf(PromptNotFoundError);
    } finally {
      await slow.close();
    }
  });
});
