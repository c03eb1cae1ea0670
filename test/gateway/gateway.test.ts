// `/mcp` of a real `mcp-fleet serve` worker, the fleet as one MCP server, with
// real clients: the SDK v2 client in both eras and the v1 client, authenticated
// by user keys, the admin token, and JWT access tokens of a real OpenID Connect
// provider. Real backend servers: healthy fixtures per group, two copies of the
// modern fixture (their resource URIs clash) and a per_user whoami server.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, discoverOAuthProtectedResourceMetadata, extractResourceMetadataUrl, StreamableHTTPClientTransport, type OAuthClientProvider } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServe, type ServeWorker } from '../support/cli.js';
import { fixtureCommand, whoamiPerUser } from '../fixtures/index.js';
import { until, untilValue } from '../support/wait.js';
import { startIdp, type Idp } from './idp.js';
import { consentAsUser } from '../oauth/servers.js';

let idp: Idp;
let worker: ServeWorker;
let base: string;
let adminToken: string;
let logs: string;
const keys: Record<string, string> = {};
const clients: Array<{ close(): Promise<void> }> = [];

const healthy = (name: string, groups?: string[]) => ({
  type: 'local',
  command: fixtureCommand('healthy'),
  env: { FIXTURE_CANCEL_LOG: join(logs, `${name}.cancelled`), FIXTURE_WAIT_LOG: join(logs, `${name}.waiting`) },
  timeout_seconds: 15,
  ...(groups && { access: { groups } }),
});
const modern = { type: 'local', command: fixtureCommand('modern'), timeout_seconds: 15 };

beforeAll(async () => {
  logs = mkdtempSync(join(tmpdir(), 'mcp-fleet-gateway-'));
  idp = await startIdp();
  worker = await startServe(
    'mcp-fleet-gateway-',
    {
      eng: healthy('eng', ['eng']),
      sales: healthy('sales', ['sales']),
      docs: modern,
      notes: modern,
      changing: { type: 'local', command: fixtureCommand('changing-catalog'), timeout_seconds: 15 },
      colors: { type: 'local', command: fixtureCommand('completions'), timeout_seconds: 15 },
      // The same template as colors, for the sales group only: alice sees one, the admin two.
      hues: { type: 'local', command: fixtureCommand('completions'), timeout_seconds: 15, access: { groups: ['sales'] } },
      // Tools with an output schema (one titled), results above 1 KiB cut.
      typed: { type: 'local', command: fixtureCommand('output-schema'), max_result_bytes: 1024, large_results: 'truncate', timeout_seconds: 15 },
    },
    ['--oidc-issuer', idp.issuer, '--oidc-client-id', 'fleet-page'],
  );
  base = JSON.parse(readFileSync(join(worker.dir, 'worker.json'), 'utf8')).url.replace(/\/$/, '');
  adminToken = readFileSync(join(worker.dir, 'api_token'), 'utf8').trim();
  const mine = { name: 'mine', ...whoamiPerUser() };
  expect((await api('/api/mcp/servers', adminToken, { method: 'POST', body: JSON.stringify(mine) })).status).toBe(201);
  for (const name of ['alice', 'bob']) {
    const reply = await api('/api/mcp/users', adminToken, { method: 'POST', body: JSON.stringify({ name, groups: name === 'alice' ? ['eng'] : ['sales'] }) });
    expect(reply.status).toBe(201);
    keys[name] = ((await reply.json()) as { key: string }).key;
    const set = await api('/api/mcp/servers/mine/inputs', keys[name]!, { method: 'PUT', body: JSON.stringify({ TOKEN: `${name}-own-token` }) });
    expect(set.status).toBe(200);
  }
}, 90_000);

afterAll(async () => {
  await Promise.allSettled(clients.splice(0).map((client) => client.close()));
  await worker?.stop();
  await idp?.close();
  rmSync(logs, { recursive: true, force: true });
});

function api(path: string, token: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });
}

async function v2(token: string, mode: 'auto' | 'legacy'): Promise<Client> {
  const client = new Client({ name: 'gateway-test', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  clients.push(client);
  return client;
}

const names = (tools: Array<{ name: string }>) => tools.map((tool) => tool.name).sort();
const textOf = (result: { content?: unknown }) => ((result.content as Array<{ type: string; text?: string }>)[0]?.text ?? '');

describe('/mcp: the fleet as one MCP server', () => {
  it('answers 401 with the resource metadata without a token, and serves that metadata naming the issuer', async () => {
    const answer = await fetch(`${base}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(answer.status).toBe(401);
    expect(answer.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
    // What an OAuth-capable client does with the 401: the SDK's own discovery finds the issuer.
    const metadataUrl = extractResourceMetadataUrl(answer);
    expect(metadataUrl?.href).toBe(`${base}/.well-known/oauth-protected-resource/mcp`);
    const metadata = await discoverOAuthProtectedResourceMetadata(`${base}/mcp`, { resourceMetadataUrl: metadataUrl! });
    expect(metadata).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [idp.issuer] });
  });

  it('answers a body that is no JSON with a JSON-RPC parse error, as an MCP client reads one', async () => {
    const answer = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc": "2.0", "method": ',
    });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the request body is not valid JSON' }, id: null });
  });

  it('lists and calls as the v2 client in the 2026 era: a user sees the tools of their group only', async () => {
    const alice = await v2(keys.alice!, 'auto');
    expect(alice.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const tools = names((await alice.listTools()).tools);
    expect(tools).toContain('eng__echo');
    expect(tools).toContain('docs__echo');
    expect(tools.some((name) => name.startsWith('sales__'))).toBe(false);
    expect(textOf(await alice.callTool({ name: 'eng__echo', arguments: { text: 'hi' } }))).toBe('hi');
    // A tool they may not see answers as an unknown one.
    const refused = await alice.callTool({ name: 'sales__echo', arguments: { text: 'hi' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toBe('unknown tool "sales__echo"');
  });

  it('lists and calls as the v2 client in the 2025 era with a session, which DELETE ends', async () => {
    const bob = await v2(keys.bob!, 'legacy');
    expect(bob.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const transport = bob.transport as StreamableHTTPClientTransport;
    const session = transport.sessionId;
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    const tools = names((await bob.listTools()).tools);
    expect(tools).toContain('sales__echo');
    expect(tools.some((name) => name.startsWith('eng__'))).toBe(false);
    expect(textOf(await bob.callTool({ name: 'sales__add', arguments: { a: 2, b: 3 } }))).toBe('5');
    // Another principal cannot use bob's session: it does not exist for them.
    const stolen = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.alice}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session!, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(stolen.status).toBe(404);
    await transport.terminateSession();
    const after = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.bob}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session!, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    expect(after.status).toBe(404);
  });

  it('serves the v1 client with the admin token: every server', async () => {
    const client = new V1Client({ name: 'gateway-test-v1', version: '1.0.0' });
    await client.connect(new V1Transport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${adminToken}` } } }));
    clients.push(client);
    const tools = names((await client.listTools()).tools);
    expect(tools).toEqual(expect.arrayContaining(['eng__echo', 'sales__echo', 'docs__echo', 'notes__echo']));
    expect(textOf((await client.callTool({ name: 'notes__add', arguments: { a: 1, b: 1 } })) as { content?: unknown })).toBe('2');
  });

  it("lists a tool's title and output schema, and answers its structured content, which the client checks", async () => {
    for (const mode of ['auto', 'legacy'] as const) {
      const client = await v2(adminToken, mode);
      const { tools } = await client.listTools();
      const large = tools.find((tool) => tool.name === 'typed__large');
      expect(large).toMatchObject({ title: 'A large result', outputSchema: { type: 'object', required: ['n'] } });
      expect(tools.find((tool) => tool.name === 'typed__good')?.outputSchema).toBeDefined();
      // A schema no validator compiles would fail a client's whole listing (the v1 client's above): listed without it.
      expect(tools.find((tool) => tool.name === 'typed__broken')).toMatchObject({ name: 'typed__broken' });
      expect(tools.find((tool) => tool.name === 'typed__broken')?.outputSchema).toBeUndefined();
      expect((await client.callTool({ name: 'typed__good', arguments: {} })).structuredContent).toEqual({ n: 1 });
      // Too large to keep its structured content: an error saying so, not an answer the client's check refuses.
      const cut = await client.callTool({ name: 'typed__large', arguments: {} });
      expect(cut.isError).toBe(true);
      expect(JSON.stringify(cut.content)).toContain('omitted: structured content');
    }
  });

  it('passes a result’s blocks on as the server sent them: resource links and embedded resources stay what they are', async () => {
    const added = await api('/api/mcp/servers', adminToken, { method: 'POST', body: JSON.stringify({ name: 'odd', type: 'local', command: fixtureCommand('odd-content') }) });
    expect(added.status).toBe(201);
    try {
      for (const mode of ['legacy', 'auto'] as const) {
        const client = await v2(adminToken, mode);
        const result = await client.callTool({ name: 'odd__mixed', arguments: {} });
        expect(result.content).toEqual([
          { type: 'text', text: 'before' },
          // A block of a type no MCP revision defines is its JSON, as text.
          { type: 'text', text: '{"type":"mystery","z":1}' },
          { type: 'resource_link', uri: 'file:///notes.txt', name: 'notes' },
          { type: 'resource', resource: { uri: 'file:///a.bin', mimeType: 'application/octet-stream', blob: 'AAEC' } },
        ]);
        expect(result.structuredContent).toEqual({ answer: 42 });
      }
    } finally {
      expect((await api('/api/mcp/servers/odd', adminToken, { method: 'DELETE' })).status).toBeLessThan(300);
    }
  });

  it('calls a per_user server with each user’s own credentials, whichever way they authenticate', async () => {
    const aliceJwt = await idp.token('alice', `${base}/mcp`);
    for (const [user, token] of [['alice', keys.alice!], ['bob', keys.bob!], ['alice', aliceJwt]] as const) {
      const client = await v2(token, 'auto');
      const answer = JSON.parse(textOf(await client.callTool({ name: 'mine__whoami', arguments: {} })));
      expect(answer.token).toBe(`${user}-own-token`);
    }
  });

  it('a first tools/list opens the caller’s own session of a per_user server and lists its tools', async () => {
    const added = await api('/api/mcp/users', adminToken, { method: 'POST', body: JSON.stringify({ name: 'carol', groups: ['eng'] }) });
    expect(added.status).toBe(201);
    const carol = ((await added.json()) as { key: string }).key;
    expect((await api('/api/mcp/servers/mine/inputs', carol, { method: 'PUT', body: JSON.stringify({ TOKEN: 'carol-own-token' }) })).status).toBe(200);
    for (const mode of ['legacy', 'auto'] as const) {
      const client = await v2(carol, mode);
      expect(names((await client.listTools()).tools)).toContain('mine__whoami');
    }
    expect(JSON.parse(textOf(await (await v2(carol, 'auto')).callTool({ name: 'mine__whoami', arguments: {} }))).token).toBe('carol-own-token');
  });

  it('lists, reads and renders a per_user server’s resources and prompts through each user’s own session', async () => {
    for (const [user, mode] of [['alice', 'auto'], ['bob', 'legacy']] as const) {
      const client = await v2(keys[user]!, mode);
      const resources = (await client.listResources()).resources;
      expect(resources.find((resource) => resource.uri === 'whoami://token')).toMatchObject({ name: 'token', _meta: { 'mcp-fleet/server': 'mine' } });
      const read = await client.readResource({ uri: 'whoami://token' });
      expect(read.contents).toEqual([{ uri: 'whoami://token', mimeType: 'text/plain', text: `${user}-own-token` }]);
      const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
      expect(prompts).toContain('mine:introduce');
      const rendered = await client.getPrompt({ name: 'mine:introduce' });
      expect(rendered.messages[0]?.content).toEqual({ type: 'text', text: `I hold ${user}-own-token` });
      await expect(client.getPrompt({ name: 'mine:nothing' })).rejects.toThrow(/no prompt "mine:nothing"/);
    }
  });

  it('serves the MCP Inspector CLI: tools/list and tools/call as the user its key names', async () => {
    const build = join(dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/inspector-cli/package.json')), 'build');
    const inspect = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
        // Its cwd is its build folder: it finds its own package.json relative to the working directory.
        execFile(process.execPath, [join(build, 'index.js'), `${base}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${keys.alice}`, ...args], { cwd: build, timeout: 60_000 }, (error, stdout, stderr) =>
          done({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });
    const listed = await inspect(['--method', 'tools/list']);
    expect(listed.code, listed.stderr).toBe(0);
    const tools = names((JSON.parse(listed.stdout) as { tools: Array<{ name: string }> }).tools);
    expect(tools).toContain('eng__echo');
    expect(tools.some((name) => name.startsWith('sales__'))).toBe(false);
    const called = await inspect(['--method', 'tools/call', '--tool-name', 'eng__echo', '--tool-arg', 'text=inspected']);
    expect(called.code, called.stderr).toBe(0);
    expect(textOf(JSON.parse(called.stdout) as { content: unknown })).toBe('inspected');
    const refused = await inspect(['--method', 'tools/call', '--tool-name', 'sales__echo', '--tool-arg', 'text=inspected']);
    expect(textOf(JSON.parse(refused.stdout) as { content: unknown })).toBe('unknown tool "sales__echo"');
  });

  it('takes a JWT access token of the issuer for this resource: its subject and groups are the principal', async () => {
    const bob = await v2(await idp.token('bob', `${base}/mcp`), 'legacy');
    const tools = names((await bob.listTools()).tools);
    expect(tools).toContain('sales__echo');
    expect(tools.some((name) => name.startsWith('eng__'))).toBe(false);
  });

  it('refuses an access token for another audience, and an expired one, with invalid_token', async () => {
    const challenge = async (token: string) => {
      const answer = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
      });
      await answer.body?.cancel();
      return { status: answer.status, header: answer.headers.get('www-authenticate') ?? '' };
    };
    const elsewhere = await challenge(await idp.token('alice', 'https://elsewhere.example/mcp'));
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.header).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`);
    expect(elsewhere.header).toContain('error="invalid_token"');
    expect(elsewhere.header).toMatch(/aud/);

    const brief = await idp.token('brief', `${base}/mcp`);
    expect((await challenge(brief)).status).toBe(200);
    const expired = await untilValue(async () => {
      const answer = await challenge(brief);
      return answer.status === 401 ? answer : undefined;
    }, 'the one-second token to expire', 10_000);
    expect(expired.header).toContain('error="invalid_token"');
    expect(expired.header).toMatch(/exp/);
  });

  it('lists resources with URIs kept, and a URI two servers share under each server’s mcp-fleet:// URI', async () => {
    const alice = await v2(keys.alice!, 'auto');
    const resources = (await alice.listResources()).resources;
    const uris = resources.map((resource) => resource.uri);
    expect(uris).toContain('mcp-fleet://docs/fixture%3A%2F%2Fhello');
    expect(uris).toContain('mcp-fleet://notes/fixture%3A%2F%2Fhello');
    expect(uris).not.toContain('fixture://hello');
    const read = await alice.readResource({ uri: 'mcp-fleet://notes/fixture%3A%2F%2Fhello' });
    expect(read.contents[0]).toMatchObject({ uri: 'mcp-fleet://notes/fixture%3A%2F%2Fhello', text: 'hello from the modern fixture' });
    // The answer is the gateway's, in the caller's revision: nothing the backend's 2026 connection added, no backend serverInfo.
    const bob = await v2(keys.bob!, 'legacy');
    const legacyRead = await bob.readResource({ uri: 'mcp-fleet://notes/fixture%3A%2F%2Fhello' });
    expect(Object.keys(legacyRead).filter((key) => key === 'ttlMs' || key === 'cacheScope')).toEqual([]);
    expect(JSON.stringify(legacyRead._meta ?? {})).not.toContain('modern');
    // The bare shared URI names both servers' URIs; a server she may not see is not read for her.
    await expect(alice.readResource({ uri: 'fixture://hello' })).rejects.toThrow(/offered by docs and notes/);
    // A server she may not see, one that does not exist and a broken encoding are all "not found", alike: no name confirmed.
    const notFound = async (uri: string) => {
      const error = await alice.readResource({ uri }).then(() => undefined, (err: unknown) => err as { code: number; message: string; data?: unknown });
      return [error?.code, error?.message, error?.data];
    };
    // So is a URI its server says it does not have, in the backend's own words or code.
    for (const uri of ['mcp-fleet://sales/fixture%3A%2F%2Fhello', 'mcp-fleet://nosuch/fixture%3A%2F%2Fhello', 'mcp-fleet://notes/%E0', 'nowhere://x', 'mcp-fleet://notes/fixture%3A%2F%2Fnope']) {
      expect(await notFound(uri)).toEqual([-32602, `no server offers the resource ${uri}`, { uri }]);
    }
  });

  it('refuses a list cursor it did not issue with invalid params, in both eras, rather than listing from the start', async () => {
    for (const mode of ['legacy', 'auto'] as const) {
      const client = await v2(keys.bob!, mode);
      const lists = [
        () => client.listTools({ cursor: 'nonsense' }),
        () => client.listResources({ cursor: 'nonsense' }),
        () => client.listResourceTemplates({ cursor: 'nonsense' }),
        () => client.listPrompts({ cursor: 'nonsense' }),
      ];
      for (const list of lists) {
        const refused = await list().then(
          () => 'listed',
          (error: { code?: number; message?: string }) => [error.code, error.message],
        );
        expect(refused, `${mode}: ${String(list)}`).toEqual([-32602, expect.stringMatching(/invalid cursor "nonsense"/)]);
      }
    }
  });

  it('refuses a prompt argument that is not a string with invalid params naming it, in both eras', async () => {
    for (const mode of ['legacy', 'auto'] as const) {
      const client = await v2(keys.bob!, mode);
      // Raw, as a client that does not check its own request would send it.
      const refused = await client.request({ method: 'prompts/get', params: { name: 'docs:greet', arguments: { name: 5 } } } as never).then(
        () => 'rendered',
        (error: { code?: number; message?: string }) => [error.code, error.message],
      );
      expect(refused, mode).toEqual([-32602, 'prompts/get: argument "name" must be a string, not number']);
    }
  });

  it('lists prompts as server:prompt and renders them through their server', async () => {
    const bob = await v2(keys.bob!, 'legacy');
    const prompts = (await bob.listPrompts()).prompts.map((prompt) => prompt.name);
    expect(prompts).toEqual(expect.arrayContaining(['docs:greet', 'notes:greet']));
    const rendered = await bob.getPrompt({ name: 'docs:greet', arguments: { name: 'Ann' } });
    expect(rendered.messages[0]?.content).toMatchObject({ type: 'text', text: 'Say hello to Ann.' });
    // A required argument missing is the caller's invalid params, said in one line.
    const missing = await bob.getPrompt({ name: 'docs:greet', arguments: {} }).then(
      () => undefined,
      (error: { code?: number; message?: string }) => [error.code, error.message],
    );
    expect(missing).toEqual([-32602, expect.stringMatching(/prompt "docs:greet": arguments\.name: required/)]);
    // A server that offers no completions has none to give: no values, not an internal error.
    const none = await bob.complete({ ref: { type: 'ref/prompt', name: 'docs:greet' }, argument: { name: 'name', value: 'A' } });
    expect(none.completion.values).toEqual([]);
  });

  it('completes a prompt’s argument and a template’s variable through their server, and reads a URI of a template', async () => {
    const client = await v2(keys.alice!, 'auto');
    const prompt = await client.complete({ ref: { type: 'ref/prompt', name: 'colors:paint' }, argument: { name: 'color', value: 'gr' } });
    expect(prompt.completion.values).toEqual(['green', 'grey']);
    const templates = (await client.listResourceTemplates()).resourceTemplates.map((template) => template.uriTemplate);
    expect(templates).toContain('color://{name}');
    const variable = await client.complete({ ref: { type: 'ref/resource', uri: 'color://{name}' }, argument: { name: 'name', value: 'b' } });
    expect(variable.completion.values).toEqual(['blue']);
    const read = await client.readResource({ uri: 'color://red' });
    expect(read.contents[0]).toMatchObject({ uri: 'color://red', text: 'the color red' });
  });

  it('lists a template two servers share under each server’s mcp-fleet:// template, which reads and completes through that server', async () => {
    const client = await v2(adminToken, 'auto');
    const listed = (await client.listResourceTemplates()).resourceTemplates;
    const uris = listed.map((template) => template.uriTemplate);
    expect(uris).not.toContain('color://{name}');
    const hues = 'mcp-fleet://hues/color%3A%2F%2F{name}';
    expect(uris).toEqual(expect.arrayContaining(['mcp-fleet://colors/color%3A%2F%2F{name}', hues]));
    expect(listed.find((template) => template.uriTemplate === hues)?._meta).toEqual({ 'mcp-fleet/server': 'hues', 'mcp-fleet/uri-template': 'color://{name}' });
    // What a client's expansion of the listed template gives reads from that server.
    const read = await client.readResource({ uri: hues.replace('{name}', 'red') });
    expect(read.contents[0]).toMatchObject({ text: 'the color red' });
    const completed = await client.complete({ ref: { type: 'ref/resource', uri: hues }, argument: { name: 'name', value: 'b' } });
    expect(completed.completion.values).toEqual(['blue']);
    // The bare URI fits both: refused, naming the choices.
    const refused = await client.readResource({ uri: 'color://red' }).then(
      () => undefined,
      (error: { code?: number; message?: string }) => [error.code, error.message],
    );
    expect(refused).toEqual([-32602, '"color://red" fits templates of colors and hues; ask for mcp-fleet://colors/color%3A%2F%2Fred or mcp-fleet://hues/color%3A%2F%2Fred']);
  });

  it.each(['legacy', 'auto'] as const)('forwards progress of a backend call to the client (%s)', async (mode) => {
    const alice = await v2(keys.alice!, mode);
    const seen: number[] = [];
    const result = await alice.callTool({ name: 'eng__slow', arguments: { ms: 300, steps: 3 } }, { onprogress: (progress) => seen.push(progress.progress) });
    expect(textOf(result)).toContain('"done":true');
    expect(seen.slice(0, 2)).toEqual([1, 2]);
    // The SDK may drop a progress sent in the same instant as the result (docs/protocol-features.md), on the backend's leg as on the client's.
    expect(seen.length === 2 || seen[2] === 3).toBe(true);
  });

  it('refuses a rotated or removed user key on its next request, in an open session too', async () => {
    const made = await api('/api/mcp/users', adminToken, { method: 'POST', body: JSON.stringify({ name: 'dora', groups: ['eng'] }) });
    expect(made.status).toBe(201);
    const oldKey = ((await made.json()) as { key: string }).key;
    const session = await v2(oldKey, 'legacy');
    expect(textOf(await session.callTool({ name: 'eng__echo', arguments: { text: 'before' } }))).toBe('before');
    const rotated = await api('/api/mcp/users/dora/rotate', adminToken, { method: 'POST' });
    expect(rotated.status).toBe(200);
    const newKey = ((await rotated.json()) as { key: string }).key;
    const unauthorized = (token: string) =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
      }).then((answer) => answer.status);
    // The very next request with the old key, the open session's too, is refused.
    expect(await unauthorized(oldKey)).toBe(401);
    await expect(session.callTool({ name: 'eng__echo', arguments: { text: 'after' } })).rejects.toThrow();
    const fresh = await v2(newKey, 'auto');
    expect(textOf(await fresh.callTool({ name: 'eng__echo', arguments: { text: 'new key' } }))).toBe('new key');
    expect((await api('/api/mcp/users/dora', adminToken, { method: 'DELETE' })).status).toBeLessThan(300);
    expect(await unauthorized(newKey)).toBe(401);
    await expect(fresh.callTool({ name: 'eng__echo', arguments: { text: 'removed' } })).rejects.toThrow();
  });

  it('ends the open streams of a user whose key was rotated or who was removed: a 2025 session’s GET stream, a 2026 listen stream', async () => {
    const made = await api('/api/mcp/users', adminToken, { method: 'POST', body: JSON.stringify({ name: 'erin', groups: ['eng'] }) });
    expect(made.status).toBe(201);
    const key = ((await made.json()) as { key: string }).key;
    const post = (body: unknown, session?: string) =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          ...(session && { 'mcp-session-id': session }),
        },
        body: JSON.stringify(body),
      });
    const init = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    const session = init.headers.get('mcp-session-id')!;
    await init.text();
    await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session)).text();
    const stream = await fetch(`${base}/mcp`, {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
    });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let streamEnded = false;
    void (async () => {
      try {
        while (!(await reader.read()).done);
      } catch {
        // A destroyed response reads as an error: ended all the same.
      }
      streamEnded = true;
    })();
    const modern = await v2(key, 'auto');
    const listening = await modern.listen({ toolsListChanged: true });
    let listenEnded: string | undefined;
    void listening.closed.then((how) => (listenEnded = how));

    const rotated = await api('/api/mcp/users/erin/rotate', adminToken, { method: 'POST' });
    expect(rotated.status).toBe(200);
    await until(() => streamEnded, 'the 2025 GET stream to end');
    await until(() => listenEnded !== undefined, 'the 2026 listen stream to end');
    expect(listenEnded).toBe('remote');

    // Removed: the new key's stream ends too.
    const fresh = await v2(((await rotated.json()) as { key: string }).key, 'auto');
    const again = await fresh.listen({ toolsListChanged: true });
    let againEnded: string | undefined;
    void again.closed.then((how) => (againEnded = how));
    expect((await api('/api/mcp/users/erin', adminToken, { method: 'DELETE' })).status).toBeLessThan(300);
    await until(() => againEnded !== undefined, 'the removed user’s listen stream to end');
  });

  it.each([
    ['auto', {}, 'application/json'],
    ['legacy', {}, 'application/json'],
    // A 2025 client that may be asked for sampling gets a stream: a backend's request could come during any call.
    ['legacy', { sampling: {} }, 'text/event-stream'],
  ] as const)('answers a call that streams nothing in one body (%s, capabilities %j: %s), and streams a call that asks for progress as it happens', async (mode, capabilities, plain) => {
    const types: string[] = [];
    const client = new Client({ name: 'gateway-test', version: '1.0.0' }, { versionNegotiation: { mode }, capabilities });
    const recording: typeof fetch = async (input, init) => {
      const answer = await fetch(input, init);
      if (init?.method === 'POST') types.push(answer.headers.get('content-type') ?? '');
      return answer;
    };
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${keys.alice}` } }, fetch: recording }));
    clients.push(client);
    types.length = 0;
    expect(textOf(await client.callTool({ name: 'eng__echo', arguments: { text: 'hi' } }))).toBe('hi');
    expect(types).toEqual([plain]);
    types.length = 0;
    const progressAt: number[] = [];
    const result = await client.callTool({ name: 'eng__slow', arguments: { ms: 300, steps: 3 } }, { onprogress: () => progressAt.push(performance.now()) });
    const answeredAt = performance.now();
    expect(textOf(result)).toContain('"done":true');
    expect(types).toEqual(['text/event-stream']);
    // The first progress came while the call still ran (about 200 ms before its end), not with the answer.
    expect(answeredAt - progressAt[0]!).toBeGreaterThan(100);
  });

  it.each(['legacy', 'auto'] as const)('passes a client’s cancellation on to the backend (%s)', async (mode) => {
    const alice = await v2(keys.alice!, mode);
    const lines = (file: string) => readable(join(logs, file)).split('\n').filter(Boolean).length;
    const [waiting, cancelled] = [lines('eng.waiting'), lines('eng.cancelled')];
    const controller = new AbortController();
    const call = alice.callTool({ name: 'eng__wait_for_cancel', arguments: {} }, { signal: controller.signal });
    await until(() => lines('eng.waiting') > waiting, 'the call to reach the backend');
    controller.abort();
    await expect(call).rejects.toThrow();
    await until(() => lines('eng.cancelled') > cancelled, 'the backend to see the cancellation');
  });

  it('tells a session’s client when the fleet’s tools change', async () => {
    const client = await v2(adminToken, 'legacy');
    let changed = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      changed += 1;
    });
    const added = await api('/api/mcp/servers', adminToken, { method: 'POST', body: JSON.stringify({ name: 'extra', ...healthy('extra') }) });
    expect(added.status).toBeLessThan(300);
    await until(() => changed > 0, 'tools/list_changed on the session');
    expect(names((await client.listTools()).tools)).toContain('extra__echo');
  });

  it('tells a 2026 client listening for changes when a server’s tools change', async () => {
    const client = await v2(adminToken, 'auto');
    let changed = 0;
    client.setNotificationHandler('notifications/tools/list_changed', () => {
      changed += 1;
    });
    const subscription = await client.listen({ toolsListChanged: true });
    try {
      expect(textOf(await client.callTool({ name: 'changing__add_tool', arguments: { name: 'fresh' } }))).toContain('fresh');
      await until(() => changed > 0, 'tools/list_changed on the listen stream');
      expect(names((await client.listTools()).tools)).toContain('changing__fresh');
    } finally {
      await subscription.close();
    }
  });

  it('forwards a server’s log messages to a session at the level its client set', async () => {
    const client = await v2(adminToken, 'legacy');
    const seen: Array<{ level: string; data: unknown }> = [];
    client.setNotificationHandler('notifications/message', (notification) => {
      seen.push({ level: notification.params.level, data: notification.params.data });
    });
    await client.setLoggingLevel('warning');
    await client.callTool({ name: 'changing__log', arguments: { level: 'info', data: 'quiet line' } });
    await client.callTool({ name: 'changing__log', arguments: { level: 'error', data: 'loud line' } });
    await until(() => seen.some((message) => message.data === 'loud line'), 'the error line on the session');
    expect(seen.some((message) => message.data === 'quiet line')).toBe(false);
  });

  it('tells a session when a changed access policy takes tools away from its user', async () => {
    const bob = await v2(keys.bob!, 'legacy');
    let changed = 0;
    bob.setNotificationHandler('notifications/tools/list_changed', () => {
      changed += 1;
    });
    expect(names((await bob.listTools()).tools)).toContain('notes__echo');
    const patched = await api('/api/mcp/servers/notes', adminToken, { method: 'PATCH', body: JSON.stringify({ access: { groups: ['eng'] } }) });
    expect(patched.status).toBe(200);
    await until(() => changed > 0, 'tools/list_changed after the policy change');
    expect(names((await bob.listTools()).tools).some((name) => name.startsWith('notes__'))).toBe(false);
  });

  it('tells a user nothing of a change to a server they cannot see, on a 2025 session and on a 2026 listen stream alike', async () => {
    const admin = await v2(adminToken, 'legacy');
    let adminHeard = 0;
    admin.setNotificationHandler('notifications/tools/list_changed', () => {
      adminHeard += 1;
    });
    const bobOld = await v2(keys.bob!, 'legacy');
    const bobNew = await v2(keys.bob!, 'auto');
    const heard = { old: [] as string[], new: [] as string[] };
    for (const [client, log] of [[bobOld, heard.old], [bobNew, heard.new]] as const) {
      client.setNotificationHandler('notifications/tools/list_changed', () => void log.push('tools'));
      client.setNotificationHandler('notifications/prompts/list_changed', () => void log.push('prompts'));
    }
    const listening = await bobNew.listen({ toolsListChanged: true, promptsListChanged: true });
    try {
      // eng is for the eng group: bob (sales) does not see it, the admin does.
      expect((await api('/api/mcp/servers/eng/restart', adminToken, { method: 'POST' })).status).toBe(200);
      await until(() => adminHeard > 0, "the admin told of eng's tools");
      // Then a change bob sees. Each stream tells in order: anything told of eng would come before it.
      await bobOld.callTool({ name: 'changing__add_prompt', arguments: { name: 'after_eng' } });
      await until(() => heard.old.includes('prompts') && heard.new.includes('prompts'), 'bob told of the new prompt on both streams');
      expect(heard.old.slice(0, heard.old.indexOf('prompts'))).toEqual([]);
      expect(heard.new.slice(0, heard.new.indexOf('prompts'))).toEqual([]);
    } finally {
      await listening.close();
    }
  });
});

function readable(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

describe('/mcp with an MCP client that does OAuth', () => {
  it('finds the issuer from the 401, registers, signs bob in, and calls with the JWT it got for /mcp', async () => {
    const redirectUrl = 'http://127.0.0.1:9/oauth/callback';
    let stored: { client?: unknown; tokens?: unknown; verifier?: string } = {};
    let authorizationUrl: URL | undefined;
    const provider: OAuthClientProvider = {
      redirectUrl,
      clientMetadata: { client_name: 'gateway-oauth-test', redirect_uris: [redirectUrl], grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'none', scope: 'mcp' },
      clientInformation: () => stored.client as never,
      saveClientInformation: (client) => void (stored.client = client),
      tokens: () => stored.tokens as never,
      saveTokens: (tokens) => void (stored.tokens = tokens),
      redirectToAuthorization: (url) => void (authorizationUrl = url),
      saveCodeVerifier: (verifier) => void (stored.verifier = verifier),
      codeVerifier: () => stored.verifier!,
    };
    const url = new URL(`${base}/mcp`);
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
    const client = new Client({ name: 'gateway-oauth-test', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
    await expect(client.connect(first)).rejects.toThrow();
    expect(authorizationUrl?.origin).toBe(idp.issuer);
    expect(authorizationUrl?.searchParams.get('resource')).toBe(`${base}/mcp`);
    // The user signs in at the provider; the browser comes back to the client's redirect URI with the code.
    let callback: string | undefined;
    await consentAsUser(authorizationUrl!.href, 'bob', async (at) => {
      callback = at;
      return new Response('signed in');
    });
    await first.finishAuth(new URL(callback!).searchParams);
    const signedIn = new Client({ name: 'gateway-oauth-test', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
    await signedIn.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
    clients.push(signedIn);
    const tools = names((await signedIn.listTools()).tools);
    expect(tools).toContain('sales__echo');
    expect(tools.some((name) => name.startsWith('eng__'))).toBe(false);
    expect(textOf(await signedIn.callTool({ name: 'mine__whoami', arguments: {} }))).toContain('bob-own-token');
  });
});
