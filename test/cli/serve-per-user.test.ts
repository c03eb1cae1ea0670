// A real `mcp-fleet serve` with a `per_user` server: that server stays pending
// (it has no shared connection until a user calls it), and the startup summary
// still comes, counting it as ready for users. On SIGTERM the worker ends the
// 2025 MCP sessions of `/mcp` and `/mcp/servers/:name` itself: a client's open
// stream ends cleanly instead of being cut with its socket, and a 2026
// listen stream ends with the result that says so.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { fixtureCommand, whoamiPerUser } from '../fixtures/index.js';
import { TOKEN } from '../http/helpers.js';
import { spawnServe } from '../support/cli.js';
import { until } from '../support/wait.js';

const servers = {
  one: { type: 'local', command: fixtureCommand('healthy'), timeout_seconds: 15 },
  mine: whoamiPerUser(),
  off: { type: 'local', command: fixtureCommand('healthy'), enabled: false },
};

/** A 2025 session on `url`: its id, and its GET stream read to the end (resolves `ended` or the read's error). */
async function sessionWithStream(url: string): Promise<{ session: string; stream: Promise<string> }> {
  const headers = { authorization: `Bearer ${TOKEN}`, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  const init = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  expect(init.status).toBe(200);
  await init.body?.cancel();
  const session = init.headers.get('mcp-session-id')!;
  const initialized = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  expect(initialized.status).toBe(202);
  const get = await fetch(url, { headers: { ...headers, 'mcp-session-id': session } });
  expect(get.status).toBe(200);
  const reader = get.body!.getReader();
  const stream = (async () => {
    try {
      while (!(await reader.read()).done);
      return 'ended';
    } catch (error) {
      return `cut: ${(error as Error).message}`;
    }
  })();
  return { session, stream };
}

test('prints the summary with a per_user server configured, and ends both MCP endpoints’ sessions on SIGTERM', { timeout: 90_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-per-user-'));
  writeFileSync(join(dir, 'mcp_servers.json'), JSON.stringify({ servers }));
  const { child: worker, stdout: printed, exited } = spawnServe(['--state-dir', dir, '--port', '0'], { env: { MCP_FLEET_API_TOKEN: TOKEN } });
  try {
    await until(() => /servers ready/.test(printed()) || worker.exitCode !== null, 'the startup summary', 60_000);
    const stdout = printed();
    expect(stdout).toContain("2 of 2 enabled servers ready, 1 of them per_user (ready for users: a session opens on each user's first call) (1 disabled)");
    expect(stdout).toMatch(/one\s+pending → ready/);
    const base = /API\s+(http:\/\/127\.0\.0\.1:\d+)\//.exec(stdout)![1]!;

    const gateway = await sessionWithStream(`${base}/mcp`);
    const server = await sessionWithStream(`${base}/mcp/servers/one`);
    // A 2026 client listening for changes: its stream is ended as meant, not cut.
    const modern = new Client({ name: 'listener', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await modern.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
    expect(modern.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const listening = await modern.listen({ toolsListChanged: true });
    worker.kill('SIGTERM');
    await exited;
    expect(await gateway.stream).toBe('ended');
    expect(await server.stream).toBe('ended');
    expect(await listening.closed).toBe('graceful');
    await modern.close();
  } finally {
    if (worker.exitCode === null && worker.signalCode === null) {
      worker.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
});
