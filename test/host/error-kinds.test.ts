// The host's view of a server nobody answers at: state `error` with
// `error_kind: "unreachable"` in the status, the journal (and its replay by the
// next host) and an add through management; for an OAuth server too, which
// must not read as a protocol error or as waiting for consent.
import { createServer as createHttpServer } from 'node:http';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { StartFailedError } from '../../src/errors.js';
import { fixtureCommand } from '../fixtures/index.js';
import { readConfigFile, stateDirWith, untilState } from './helpers.js';
import { storedJournalLines } from '../support/journal-files.js';
import { freePort } from '../support/ports.js';

let host: McpHost | undefined;
afterEach(async () => {
  await host?.shutdown();
  host = undefined;
});

describe('a remote server nobody answers at', () => {
  test('is in error as unreachable (plain and OAuth), in the status, the journal and the next host', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/mcp`;
    const expected = `could not reach http://127.0.0.1:${port}: connection refused (ECONNREFUSED)`;
    const dir = stateDirWith({
      plain: { type: 'remote', url, reconnect: { max_attempts: 0 } },
      oauth: { type: 'remote', url, auth: { kind: 'oauth' }, reconnect: { max_attempts: 0 } },
    });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'plain', 'error');
    await untilState(host, 'oauth', 'error');
    for (const name of ['plain', 'oauth']) {
      expect(host.server(name)).toMatchObject({ state: 'error', ready: false, error_kind: 'unreachable', error: expected });
    }
    // The OAuth server was never asked for consent: nothing answered to ask for it.
    expect(host.events().some((event) => event.type === 'server.transitioned' && event.server === 'oauth' && event.to === 'needs_reauth')).toBe(false);

    const failed = host.events().flatMap((event) => (event.type === 'server.transitioned' && event.to === 'error' ? [[event.server, event.error_kind]] : []));
    expect(failed).toEqual([
      ['plain', 'unreachable'],
      ['oauth', 'unreachable'],
    ]);
    await host.shutdown();
    expect(storedJournalLines(dir).filter((line) => line.includes('"error_kind":"unreachable"'))).toHaveLength(2);

    // The next host replays the journal through its schema: the last run keeps the kind.
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'plain', 'error');
    expect(host.server('plain')?.last_run).toMatchObject({ state: 'error', error_kind: 'unreachable', error: expected });
  });

  test('an OAuth server whose authorization server cannot be reached: unreachable, naming that server', async () => {
    const deadAs = `http://127.0.0.1:${await freePort()}`;
    // A real MCP endpoint's answer without a token: 401, and metadata naming an authorization server that is gone.
    const mcp = createHttpServer((req, res) => {
      const self = `http://127.0.0.1:${(mcp.address() as { port: number }).port}`;
      if (req.url?.startsWith('/.well-known/oauth-protected-resource')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource: `${self}/mcp`, authorization_servers: [deadAs] }));
        return;
      }
      res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${self}/.well-known/oauth-protected-resource"` }).end();
    });
    await new Promise<void>((resolve) => mcp.listen(0, '127.0.0.1', resolve));
    try {
      const origin = `http://127.0.0.1:${(mcp.address() as { port: number }).port}`;
      const dir = stateDirWith({ o: { type: 'remote', url: `${origin}/mcp`, auth: { kind: 'oauth' }, reconnect: { max_attempts: 0 } } });
      host = createMcpHost({ stateDir: dir });
      await host.start();
      await untilState(host, 'o', 'error');
      expect(host.server('o')).toMatchObject({
        error_kind: 'unreachable',
        error: `could not reach the authorization server ${deadAs} (of ${origin}): connection refused (ECONNREFUSED)`,
      });

      // The same server added through management fails so, and leaves no trace: no config entry, no credentials file.
      const added = await host.addServer('added', { type: 'remote', url: `${origin}/mcp`, auth: { kind: 'oauth' } }).then(
        () => new Error('it succeeded'),
        (err: unknown) => err,
      );
      expect(added).toBeInstanceOf(StartFailedError);
      expect((added as StartFailedError).kind).toBe('unreachable');
      expect(Object.keys(readConfigFile(dir).servers as object)).toEqual(['o']);
      expect(existsSync(join(dir, 'oauth', 'added.json'))).toBe(false);
    } finally {
      await host?.shutdown();
      host = undefined;
      await new Promise((resolve) => mcp.close(resolve));
    }
  });

  test('an add and a change whose start times out fail as timeout and are not saved; the change is rolled back', async () => {
    const dir = stateDirWith({ h: { type: 'local', command: fixtureCommand('healthy') } });
    host = createMcpHost({ stateDir: dir });
    await host.start();
    await untilState(host, 'h', 'ready');
    const before = readConfigFile(dir);
    const hanging = { type: 'local' as const, command: fixtureCommand('hang-on-init'), timeout_seconds: 1 };
    const failureOf = (attempt: Promise<unknown>) => attempt.then(() => new Error('it succeeded'), (err: unknown) => err);

    const added = await failureOf(host.addServer('slow', hanging));
    expect(added).toBeInstanceOf(StartFailedError);
    expect((added as StartFailedError).kind).toBe('timeout');
    expect(host.server('slow')).toBeUndefined();

    const changed = await failureOf(host.updateServer('h', { command: hanging.command, timeout_seconds: 1 }));
    expect(changed).toBeInstanceOf(StartFailedError);
    expect((changed as StartFailedError).kind).toBe('timeout');
    // Rolled back: the server runs on its old config again.
    await untilState(host, 'h', 'ready');
    expect(readConfigFile(dir)).toEqual(before);
  });

  test('an add through management fails as unreachable and is not saved', async () => {
    const dir = stateDirWith({});
    host = createMcpHost({ stateDir: dir });
    await host.start();
    const failure = await host.addServer('r2', { type: 'remote', url: 'http://127.0.0.1:1/mcp' }).then(
      () => new Error('the add succeeded'),
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(StartFailedError);
    expect((failure as StartFailedError).kind).toBe('unreachable');
    expect((failure as Error).message).toBe(
      'server "r2" failed to start (unreachable): could not reach http://127.0.0.1:1: fetch does not connect to this port (bad port)',
    );
    expect(readConfigFile(dir).servers).toEqual({});
  });
});

describe("another server's secret in a failing server's stderr", () => {
  test('is redacted from the refusal, the status and the journal, as its own secrets are', async () => {
    const shared = 'shared-key-0123456789-SECRET';
    const dir = stateDirWith({ a: { type: 'local', command: fixtureCommand('healthy'), env: { SHARED_KEY: shared } } });
    // B knows the key another way (a file of its own) and prints it as it fails.
    const keyFile = join(dir, 'key.txt');
    writeFileSync(keyFile, shared);
    host = createMcpHost({ stateDir: dir, logger: { info() {}, warn() {} } });
    await host.start();
    await untilState(host, 'a', 'ready');
    const failed = await host
      .addServer('b', { type: 'local', command: [process.execPath, '-e', `console.error('key is ' + require('fs').readFileSync(${JSON.stringify(keyFile)}, 'utf8')); process.exit(3)`] })
      .then(() => new Error('the add succeeded'), (err: unknown) => err);
    expect(failed).toBeInstanceOf(StartFailedError);
    expect((failed as Error).message).toContain('key is ••••');
    expect((failed as Error).message).not.toContain(shared);
    expect(JSON.stringify(host.events())).not.toContain(shared);
  });

  test("is redacted from a call's failure, when the server printed it as it crashed mid-call", async () => {
    const shared = 'shared-key-9876543210-SECRET';
    const dir = stateDirWith({});
    const keyFile = join(dir, 'key.txt');
    writeFileSync(keyFile, shared);
    writeFileSync(
      join(dir, 'mcp_servers.json'),
      JSON.stringify({
        servers: {
          a: { type: 'local', command: fixtureCommand('healthy'), env: { SHARED_KEY: shared } },
          b: { type: 'local', command: fixtureCommand('crash-mid-call'), env: { FIXTURE_CRASH_SAY: keyFile }, reconnect: { max_attempts: 0 } },
        },
      }),
    );
    host = createMcpHost({ stateDir: dir, logger: { info() {}, warn() {} } });
    await host.start();
    await untilState(host, 'a', 'ready');
    await untilState(host, 'b', 'ready');
    const result = await host.callTool('b__crash', {});
    expect(result.details.is_error).toBe(true);
    const text = JSON.stringify(result.content);
    expect(text).toContain('crash-mid-call: ••••');
    expect(text).not.toContain(shared);
    expect(JSON.stringify(host.events())).not.toContain(shared);
  });
});
