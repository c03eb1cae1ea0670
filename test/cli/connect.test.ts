// `mcp-fleet connect URL` as a real child process against the real HTTP
// fixture server, its one-line errors, and the headless consent step
// (followConsentRedirect) against a real HTTP authorization endpoint.
// The OAuth flows themselves run in test/conformance against the suite's
// mock authorization servers.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/client.js';
import { followConsentRedirect, parseConnectContext } from '../../src/cli/connect-auth.js';
import { deadPort, startHttpFixture as startFixtureProcess } from '../security/processes.js';
import { cli, type Run } from '../support/cli.js';

const REDIRECT = 'http://127.0.0.1:5999/oauth/callback';

const children: ChildProcess[] = [];
const servers: Server[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(
    children.splice(0).map(
      (child) =>
        new Promise((done) => {
          if (child.exitCode !== null) return done(undefined);
          child.once('exit', done);
          child.kill('SIGTERM');
        }),
    ),
  );
  await Promise.all(servers.splice(0).map((server) => new Promise((done) => server.close(done))));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-fleet-connect-'));
  dirs.push(dir);
  return dir;
}

const connectCli = (args: string[], env: Record<string, string> = {}): Promise<Run> => cli(['connect', ...args], env);

/** Starts the HTTP fixture server (Streamable HTTP at /mcp), stopped after the test; resolves with its URL. */
async function startHttpFixture(): Promise<string> {
  const started = await startFixtureProcess({});
  children.push(started.child);
  return started.url;
}

/** An authorization endpoint that answers every request with `status` and `location`. */
async function authorizationEndpoint(answer: (url: URL) => { status: number; location?: string }): Promise<string> {
  const server = createServer((req, res) => {
    const { status, location } = answer(new URL(req.url ?? '/', 'http://127.0.0.1'));
    res.writeHead(status, location === undefined ? {} : { location }).end();
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/authorize`;
}

describe('mcp-fleet connect', () => {
  it('connects, lists the tools and exits 0', async () => {
    const url = await startHttpFixture();
    const run = await connectCli([url, '--state-dir', stateDir()]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('connected to http-fixture-streamable 1.0.0: 2 tools');
    expect(run.stdout).toMatch(/^ {2}echo$/m);
    expect(run.stdout).toMatch(/^ {2}whoami$/m);
  });

  it('refuses a scenario tool the server does not list, in one line', async () => {
    const url = await startHttpFixture();
    const run = await connectCli([url, '--state-dir', stateDir()], { MCP_CONFORMANCE_SCENARIO: 'tools_call' });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('error: scenario tools_call calls tool "add_numbers", which the server does not list\n');
  });

  it('exits 2 with one line for a bad URL; 1 for an unreachable server and a broken context', async () => {
    const bad = await connectCli(['ftp://example.com/mcp', '--state-dir', stateDir()]);
    expect(bad).toMatchObject({ code: 2, stderr: 'error: URL: not an http(s) URL: "ftp://example.com/mcp"\n' });

    const notUrl = await connectCli(['not a url', '--state-dir', stateDir()]);
    expect(notUrl).toMatchObject({ code: 2, stderr: 'error: URL: not a URL: "not a url"\n' });

    // A port that was free a moment ago: nothing listens there.
    const port = await deadPort();
    const unreachable = await connectCli([`http://127.0.0.1:${port}/mcp`, '--state-dir', stateDir()]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^error: .*127\.0\.0\.1:\d+.*ECONNREFUSED.*\n$/);
    expect(unreachable.stderr.split('\n')).toHaveLength(2);

    const context = await connectCli(['http://127.0.0.1:1/mcp', '--state-dir', stateDir()], { MCP_CONFORMANCE_CONTEXT: '{' });
    expect(context).toMatchObject({ code: 1, stderr: 'error: MCP_CONFORMANCE_CONTEXT is not valid JSON\n' });
  }, 90_000);
});

describe('parseConnectContext', () => {
  it('reads the credentials a scenario hands over, and nothing when unset', () => {
    expect(parseConnectContext(undefined)).toEqual({});
    expect(parseConnectContext('{"name":"auth/pre-registration","client_id":"c","client_secret":"s"}')).toEqual({
      name: 'auth/pre-registration',
      client_id: 'c',
      client_secret: 's',
    });
    expect(() => parseConnectContext('{"client_id":7}')).toThrow('MCP_CONFORMANCE_CONTEXT: client_id:');
  });
});

describe('followConsentRedirect (headless consent)', () => {
  it('returns the whole answer of a redirect back to the redirect URI with our state: code, state and iss', async () => {
    const endpoint = await authorizationEndpoint((url) => ({
      status: 302,
      location: `${REDIRECT}?code=abc&state=${url.searchParams.get('state')}&iss=${encodeURIComponent('http://as.example/tenant')}`,
    }));
    const answer = await followConsentRedirect(new URL(`${endpoint}?state=s1`), REDIRECT, 's1');
    // The issuer goes on to the exchange, which compares it with the one discovery recorded (RFC 9207).
    expect(Object.fromEntries(answer)).toEqual({ code: 'abc', state: 's1', iss: 'http://as.example/tenant' });
  });

  it('refuses a wrong state, an error, a foreign redirect, a missing code and a non-redirect', async () => {
    const cases: Array<[{ status: number; location?: string }, string]> = [
      [{ status: 302, location: `${REDIRECT}?code=abc&state=other` }, 'state that does not match'],
      [{ status: 302, location: `${REDIRECT}?error=access_denied&state=s1` }, 'refused consent: access_denied'],
      [{ status: 302, location: `https://evil.example/cb?code=abc&state=s1` }, 'redirected to https://evil.example/cb'],
      [{ status: 302, location: `${REDIRECT}?state=s1` }, 'carried no code'],
      [{ status: 200 }, 'answered HTTP 200 instead of redirecting'],
    ];
    for (const [answer, message] of cases) {
      const endpoint = await authorizationEndpoint(() => answer);
      const consent = followConsentRedirect(new URL(`${endpoint}?state=s1`), REDIRECT, 's1');
      await expect(consent).rejects.toThrow(CliError);
      await expect(consent).rejects.toThrow(message);
    }
  });
});
