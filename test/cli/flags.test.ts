// Every bad flag or argument value of every command, through the real
// binary: one `error: <flag>: …` line on stderr, nothing on stdout, exit
// code 2, no stack trace, and nothing started (a worker would outlive the
// run and fail the test on its timeout).
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli } from '../support/cli.js';

const root = mkdtempSync(join(tmpdir(), 'mcp-fleet-cli-flags-'));
const file = join(root, 'a-file');
/** What making a directory in /sys gives here (EPERM as root, EACCES otherwise). */
const SYS_CODE = (() => {
  try {
    mkdirSync('/sys/mcp-fleet-nope');
    return 'none';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code;
  }
})();
writeFileSync(file, 'not a directory\n');
afterAll(() => rmSync(root, { recursive: true, force: true }));

let next = 0;
/** A state dir of its own per case, so no two serve runs meet. */
function dir(): string {
  const path = join(root, `state-${(next += 1)}`);
  mkdirSync(path);
  return path;
}

/** [the command line, the one line expected on stderr] */
const cases: Array<[string[], string]> = [
  // The client commands' shared flags.
  [['list', '--url', 'not-a-url'], 'error: --url: not a URL: "not-a-url"'],
  [['list', '--url', 'ftp://example.com/'], 'error: --url: not an http(s) URL: "ftp://example.com/"'],
  [['list', '--state-dir', file], `error: --state-dir: not a directory: ${JSON.stringify(file)}`],
  [['list', '--state-dir', join(file, 'below')], `error: --state-dir: cannot use ${JSON.stringify(join(file, 'below'))} as a directory (ENOTDIR)`],
  [['approvals', '--url', 'nope'], 'error: --url: not a URL: "nope"'],
  [['approve', 'some-id', '--url', 'nope'], 'error: --url: not a URL: "nope"'],
  [['deny', 'some-id', '--state-dir', file], `error: --state-dir: not a directory: ${JSON.stringify(file)}`],
  [['remove', 'x', '--url', 'nope'], 'error: --url: not a URL: "nope"'],
  [['auth', 'x', '--url', 'nope'], 'error: --url: not a URL: "nope"'],
  // A value that may hold a secret: the URL's password and credential query values masked, JSON not quoted.
  [['list', '--url', 'ftp://u:pw-secret-1234@w/?token=listtokensecret-123456'], 'error: --url: not an http(s) URL: "ftp://u:••••@w/?token=••••3456"'],
  [['list', '--url', 'nope?api_key=not-a-url-secret-99'], 'error: --url: not a URL: "nope?api_key=••••t-99"'],
  [['list', '--url', 'http://user:pwleak-1234@127.0.0.1:9/'], 'error: --url: must not contain credentials (user:password@): "http://user:••••@127.0.0.1:9/"'],
  [['call', 'a__b', '{"key":"sk-call-secret-123456",}', '--url', 'http://127.0.0.1:9/'], `error: JSON: not valid JSON (at character 32); e.g. '{"text":"hi"}'`],
  // call: its JSON arguments.
  [['call', 'a__b', '{', '--url', 'http://127.0.0.1:9/'], `error: JSON: not valid JSON (at character 2); e.g. '{"text":"hi"}'`],
  [['call', 'a__b', '[1]', '--url', 'http://127.0.0.1:9/'], `error: JSON: not a JSON object: got an array; e.g. '{"text":"hi"}'`],
  [['call', 'a__b', '{}', '--url', 'x'], 'error: --url: not a URL: "x"'],
  // search
  [['search', 'echo', '--limit', 'many'], 'error: --limit: not an integer from 1 to 100: "many"'],
  [['search', 'echo', '--limit', '0'], 'error: --limit: not an integer from 1 to 100: "0"'],
  [['search', ' '], 'error: QUERY: empty; give a search query, e.g. `mcp-fleet search read a file`'],
  // add
  [['add', 'bad name', '--', 'node', 'x.js'], 'error: NAME: must be 1 to 64 characters, each a letter, a digit, "_" or "-", and not "__proto__": "bad name"'],
  [['add', 'x', '--url', 'nope'], 'error: --url: not a URL: "nope"'],
  [['add', 'x', '--worker-url', 'nope', '--', 'node'], 'error: --worker-url: not a URL: "nope"'],
  [['add', 'x', '--url', 'http://a.example/', '--transport', 'pigeon'], 'error: --transport: expected one of auto, streamable_http, sse: "pigeon"'],
  [['add', 'x', '--config', '{"type":"local","command":["node","a"],"timeout_seconds":5000}'], 'error: --config: timeout_seconds: must be at most 3600'],
  [['add', 'x', '--config', '{"type":"local","command":["node","a"],"bogus":1}'], 'error: --config: bogus: unknown field'],
  [['add', 'x', '--var', 'a=b', '--', 'node'], 'error: --var: is for --from-registry: it fills in a registry entry'],
  [['add', 'x', '--arg', 'v', '--', 'node'], 'error: --arg: is for --from-registry: it fills in a registry entry'],
  [['add', 'x', '--timeout', '-3', '--', 'node'], 'error: --timeout: not a number of seconds > 0: "-3"'],
  [['add', 'x', '--timeout', 'soon', '--', 'node'], 'error: --timeout: not a number of seconds > 0: "soon"'],
  [['add', 'x', '--env', '=v', '--', 'node'], 'error: --env: expected KEY or KEY=VALUE: the key is empty'],
  [['add', 'x', '--url', 'http://a.example/', '--header', '=v'], 'error: --header: expected KEY or KEY=VALUE: the key is empty'],
  [['add', 'x', '--env', 'FLEET_FLAGS_UNSET', '--', 'node'], 'error: --env: $FLEET_FLAGS_UNSET is not set in this shell'],
  [['add', 'x', '--url', 'http://a.example/', '--token-env', '1-bad'], 'error: --token-env: not an environment variable name: "1-bad"'],
  [['add', 'x', '--config', '[', '--', 'node'], `error: --config: not valid JSON (it ends too early); e.g. '{"type":"local","command":["npx","-y","some-server"]}'`],
  [['add', 'x', '--from-registry', 'some/server@'], 'error: --from-registry: expected SERVER[@version]: "some/server@"'],
  [['add', 'x', '--from-registry', 'a/b', '--registry-url', 'nope'], 'error: --registry-url: not a URL: "nope"'],
  [['add', 'x', '--from-registry', 'a/b', '--var', '=1'], 'error: --var: expected NAME=VALUE: the name is empty'],
  [['add', 'x', '--from-registry', 'a/b', '--var', 'novalue'], 'error: --var: expected NAME=VALUE: "novalue"'],
  // What the worker would refuse, refused before it is asked.
  [['add', 'x', '--timeout', '99999999999', '--', 'node'], 'error: --timeout: at most 3600 seconds: "99999999999"'],
  [['add', 'x', '--url', 'http://a.example/', '--header', 'Bad Header=x'], `error: --header: "Bad Header" is not an HTTP header name: letters, digits and !#$%&'*+-.^_\`|~ only`],
  [['add', 'x', '--url', 'http://a.example/', '--header', 'X-Key=sk-line\nbreak-secret'], 'error: --header: the value of X-Key holds a line break or NUL character'],
  [['add', 'x', '--config', '{"name":"other","type":"local","command":["node"]}'], 'error: --config: its name "other" is not the NAME given ("x"): leave it out'],
  [['add', 'x', '--config', '{"command":["node","s.js"]}', '--url', 'http://a.example/'], "error: --config: holds a local server's command, cwd or env, for a remote server (--url): leave them out"],
  // registry search
  [['registry', 'search', '--limit', '0'], 'error: --limit: not an integer >= 1: "0"'],
  [['registry', 'search', '--registry-url', 'nope'], 'error: --registry-url: not a URL: "nope"'],
  // import
  [['import', 'whatever.json', '--database-url', 'nope'], 'error: --database-url: not a URL: "nope"; expected postgres://user[:password]@host[:port]/database'],
  [['import', 'whatever.json', '--database-url', 'postgres://u:hunter2pw@h:notaport/db'], 'error: --database-url: the port is not a number from 0 to 65535: "postgres://…@h:notaport/db"; expected postgres://user[:password]@host[:port]/database'],
  [['import', 'whatever.json', '--database-url', ''], 'error: --database-url: empty; give postgres://user[:password]@host[:port]/database, or leave it out to keep the config in the state dir'],
  [['import', 'whatever.json', '--state-dir', file], `error: --state-dir: not a directory: ${JSON.stringify(file)}`],
  // diagrams
  [['diagrams', '--out', file], `error: --out: not a directory: ${JSON.stringify(file)}`],
  // A directory the OS refuses to make: one line naming it, never a stack.
  [['diagrams', '--out', '/sys/mcp-fleet-nope'], `error: --out: cannot create "/sys/mcp-fleet-nope" (${SYS_CODE})`],
  [['import', 'whatever.json', '--state-dir', '/sys/mcp-fleet-nope'], `error: --state-dir: cannot create "/sys/mcp-fleet-nope" (${SYS_CODE})`],
  [['connect', 'http://127.0.0.1:9/mcp', '--state-dir', '/sys/mcp-fleet-nope'], `error: --state-dir: cannot create "/sys/mcp-fleet-nope" (${SYS_CODE})`],
  // connect
  [['connect', 'nope'], 'error: URL: not a URL: "nope"'],
  [['connect', 'ftp://example.com/mcp'], 'error: URL: not an http(s) URL: "ftp://example.com/mcp"'],
  [['connect', 'http://127.0.0.1:9/mcp', '--client-metadata-url', 'nope'], 'error: --client-metadata-url: not a URL: "nope"'],
  // commander's own: unknown option, missing value, missing argument, unknown command.
  [['list', '--bogus'], "error: unknown option '--bogus'"],
  [['list', '--url'], "error: option '--url <url>' argument missing"],
  [['approve'], "error: missing required argument 'id'"],
  [['registry', 'search'], "error: missing required argument 'query'"],
  [['nosuchcommand'], "error: unknown command 'nosuchcommand'"],
  // Commander's suggestion joins the line rather than start a second.
  [['lst'], "error: unknown command 'lst' (did you mean list?)"],
  [['list', '--tool'], "error: unknown option '--tool' (did you mean --tools?)"],
  // add: a flag of the other kind of server, no command.
  [['add', 'zh', '--header', 'X-Secret=v', '--', 'node', 'x.js'], 'error: --header: is for a remote server (--url); a local server takes --env'],
  [['add', 'okname'], 'error: COMMAND: give the command to run after --, or --url for a remote server'],
];

/** serve's flags: each case gets a fresh state dir and `--port 0`, so only the bad value can stop it. */
const serveCases: Array<[string[], string]> = [
  [['--port', 'abc'], 'error: --port: not an integer from 0 to 65535: "abc"'],
  [['--port', '70000'], 'error: --port: not an integer from 0 to 65535: "70000"'],
  [['--apps-port', 'x1'], 'error: --apps-port: not an integer from 0 to 65535: "x1"'],
  [['--host', 'bad host!'], 'error: --host: not a host name or IP address: "bad host!"'],
  // TEST-NET-1: a well-formed address no machine here has.
  [['--host', '192.0.2.1'], 'error: --host: cannot bind "192.0.2.1" (EADDRNOTAVAIL)'],
  [['--public-url', 'nope'], 'error: --public-url: not a URL: "nope"'],
  [['--public-url', 'https://mcp.example.com/?x=1'], 'error: --public-url: expected an http(s) URL without query, fragment or credentials (e.g. https://mcp.example.com): "https://mcp.example.com/?x=1"'],
  [['--apps-url', 'nope'], 'error: --apps-url: not a URL: "nope"'],
  [['--apps-url', 'ftp://apps.example.com'], 'error: --apps-url: expected an http or https URL: "ftp://apps.example.com"'],
  [['--apps-url', 'https://apps.example.com/app'], 'error: --apps-url: expected an origin without path, query or fragment, e.g. https://apps.example.com: "https://apps.example.com/app"'],
  [['--apps-url', 'https://u:p@apps.example.com'], 'error: --apps-url: expected no credentials: "https://u:••••@apps.example.com"'],
  [['--public-url', 'https://mcp.example.com/fleet', '--apps-url', 'https://MCP.example.com'], 'error: --apps-url: must be another origin than --public-url\'s: "https://MCP.example.com"'],
  [['--database-url', 'nope'], 'error: --database-url: not a URL: "nope"; expected postgres://user[:password]@host[:port]/database'],
  // Given empty (a deploy script's unset variable), not taken as "no database": the worker would serve outside the fleet.
  [['--database-url', ''], 'error: --database-url: empty; give postgres://user[:password]@host[:port]/database, or leave it out to keep the config in the state dir'],
  [['--database-url', 'mysql://h/db'], 'error: --database-url: the scheme is mysql, not postgres: "mysql://h/db"; expected postgres://user[:password]@host[:port]/database'],
  // A password PostgreSQL's parser cannot read either: none of it is shown, and the message says how to write it.
  [['--database-url', 'postgres://fleet:pa/ss-SECRET@db/fleet'], 'error: --database-url: not a URL (in the password, write / ? # @ : as %2F %3F %23 %40 %3A): "postgres://…@db/fleet"; expected postgres://user[:password]@host[:port]/database'],
  // The port, not the password, is what the URL cannot carry: the message says so (and still shows no password).
  [['--database-url', 'postgres://u:hunter2pw@h:notaport/db'], 'error: --database-url: the port is not a number from 0 to 65535: "postgres://…@h:notaport/db"; expected postgres://user[:password]@host[:port]/database'],
  // An sslmode pg does not know is refused before any connect (pg took it as "SSL required" and failed on a server without it).
  [['--database-url', 'postgres://u:pw@127.0.0.1:5432/db?sslmode=bogus'], 'error: --database-url: sslmode is not one of disable, prefer, require, verify-ca, verify-full, no-verify: "postgres://u@127.0.0.1:5432/db?sslmode=bogus"; expected postgres://user[:password]@host[:port]/database'],
  // A missing : after the scheme is named as such: the password is fine, encoding it would not help.
  [['--database-url', 'postgres//fleet:pass-SECRET@db/fleet'], 'error: --database-url: the scheme is not followed by ://: "…@db/fleet"; expected postgres://user[:password]@host[:port]/database'],
  [['--worker-id', 'a b'], 'error: --worker-id: expected 1-128 letters, digits and . _ : @ -: "a b"'],
  [['--log-level', 'loud'], 'error: --log-level: expected one of trace, debug, info, warn, error, fatal, silent: "loud"'],
  [['--startup-concurrency', '0'], 'error: --startup-concurrency: not an integer >= 1: "0"'],
  [['--registry-url', 'nope'], 'error: --registry-url: not a URL: "nope"'],
  [['--allowed-host', 'x y'], 'error: --allowed-host: expected host:port as a Host header names it (e.g. mybox.lan:8787): "x y"'],
  [['--allowed-host', 'host:99999'], 'error: --allowed-host: expected host:port as a Host header names it (e.g. mybox.lan:8787): "host:99999"'],
  [['--user-calls-per-minute', '0'], 'error: --user-calls-per-minute: not an integer from 1 to 1000000 or "none": "0"'],
  [['--user-max-concurrent-calls', 'many'], 'error: --user-max-concurrent-calls: not an integer from 1 to 1000000 or "none": "many"'],
  [['--oidc-issuer', 'nope'], 'error: --oidc-issuer: not a URL: "nope"'],
  [['--oidc-issuer', 'https://idp.example.com'], 'error: --oidc-client-id: --oidc-issuer needs --oidc-client-id'],
  [['--oidc-client-id', 'fleet'], 'error: --oidc-issuer: --oidc-client-id needs --oidc-issuer'],
  [['--oidc-groups-claim', 'roles'], 'error: --oidc-issuer: the --oidc-*-claim flags need --oidc-issuer and --oidc-client-id'],
  [['--oidc-issuer', 'https://idp.example.com', '--oidc-client-id', ' '], 'error: --oidc-client-id: must not be empty'],
  [['--mcp-session-idle-seconds', '0'], 'error: --mcp-session-idle-seconds: not a number of seconds > 0: "0"'],
  [['--mcp-max-sessions', 'lots'], 'error: --mcp-max-sessions: not an integer from 1 to 1000000: "lots"'],
  [['--mcp-max-sessions-per-user', '0'], 'error: --mcp-max-sessions-per-user: not an integer from 1 to 1000000: "0"'],
];

/** Runs the cases a few at a time: each is a whole node process on a shared machine. */
async function runAll(list: Array<[string[], string]>, argsOf: (args: string[]) => string[]) {
  const results: Array<{ args: string[]; expected: string; run: Awaited<ReturnType<typeof cli>> }> = [];
  for (let start = 0; start < list.length; start += 4) {
    const batch = list.slice(start, start + 4);
    results.push(
      ...(await Promise.all(batch.map(async ([args, expected]) => ({ args, expected, run: await cli(argsOf(args)) })))),
    );
  }
  return results;
}

function expectUsageError({ args, expected, run }: { args: string[]; expected: string; run: { code: number | null; stdout: string; stderr: string } }) {
  expect({ args, ...run }).toEqual({ args, code: 2, stdout: '', stderr: `${expected}\n` });
}

describe('a bad flag value is one line naming the flag, exit 2', { timeout: 240_000 }, () => {
  it(`${cases.length} client, add, registry, import, diagrams and connect cases`, async () => {
    for (const result of await runAll(cases, (args) => args)) expectUsageError(result);
  });

  it(`${serveCases.length} serve cases`, async () => {
    for (const result of await runAll(serveCases, (args) => ['serve', '--state-dir', dir(), '--port', '0', ...args])) {
      expectUsageError(result);
    }
    // `--state-dir` itself: a file, and a path through one.
    expectUsageError({
      args: ['serve', '--state-dir', file],
      expected: `error: --state-dir: not a directory: ${JSON.stringify(file)}`,
      run: await cli(['serve', '--state-dir', file, '--port', '0']),
    });
    if (process.platform === 'linux') {
      // A folder the kernel refuses with ENOENT under a parent that exists (Node's recursive mkdir loops on it).
      expectUsageError({
        args: ['serve', '--state-dir', '/proc/mcp-fleet-nope'],
        expected: 'error: --state-dir: cannot create "/proc/mcp-fleet-nope" (ENOENT)',
        run: await cli(['serve', '--state-dir', '/proc/mcp-fleet-nope', '--port', '0']),
      });
    }
  });

  it('the environment standing in for a flag is named as such', async () => {
    const profile = await cli(['list'], { MCP_FLEET_PROFILE: '../up' });
    expect(profile).toEqual({ code: 2, stdout: '', stderr: 'error: $MCP_FLEET_PROFILE: not a profile name: "../up"; a profile name must be 1 to 64 characters, each a letter, a digit, \"_\" or \"-\", and not \"__proto__\"\n' });
    const stateDir = await cli(['list'], { MCP_FLEET_STATE_DIR: file });
    expect(stateDir).toEqual({ code: 2, stdout: '', stderr: `error: $MCP_FLEET_STATE_DIR: not a directory: ${JSON.stringify(file)}\n` });
    const databaseDir = join(root, 'never-made');
    const database = await cli(['serve', '--state-dir', databaseDir, '--port', '0'], { MCP_FLEET_DATABASE_URL: 'nope' });
    expect(database).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: $MCP_FLEET_DATABASE_URL: not a URL: "nope"; expected postgres://user[:password]@host[:port]/database\n',
    });
    // Refused before anything is written: no state dir, no token.
    expect(existsSync(databaseDir)).toBe(false);
    for (const args of [['registry', 'search', 'x'], ['serve', '--state-dir', dir(), '--port', '0']]) {
      expect(await cli(args, { MCP_FLEET_REGISTRY_URL: 'notaurl' })).toEqual({ code: 2, stdout: '', stderr: 'error: $MCP_FLEET_REGISTRY_URL: not a URL: "notaurl"\n' });
    }
  });

  it('a database worker without its secret key is refused before it writes its API token', async () => {
    const noKey = dir();
    const run = await cli(['serve', '--state-dir', noKey, '--port', '0', '--database-url', 'postgres://fleet:pw@127.0.0.1:9/fleet']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: no secret key: set MCP_FLEET_SECRET_KEY/);
    expect(existsSync(join(noKey, 'api_token'))).toBe(false);
  });

  it('help and version still exit 0; a failure that is not about a value still exits 1', async () => {
    expect(await cli(['--version'])).toMatchObject({ code: 0, stderr: '' });
    const help = await cli(['list', '--help']);
    expect(help).toMatchObject({ code: 0, stderr: '' });
    expect(help.stdout).toContain('--state-dir <dir>');
    const noWorker = await cli(['list', '--state-dir', dir()]);
    expect(noWorker.code).toBe(1);
    expect(noWorker.stderr).toMatch(/^error: no running worker for .*\n$/);
  });

  it('no command at all: the help of what was typed on stderr, exit 2', async () => {
    for (const args of [[], ['users'], ['registry']]) {
      const run = await cli(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(new RegExp(`^Usage: mcp-fleet ${args.join(' ')}`.trim()));
    }
  });
});
