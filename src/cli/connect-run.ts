/**
 * What `mcp-fleet connect URL` does (registered in connect.ts, loaded when it
 * runs): connect through the worker's own connection and OAuth code,
 * authorize if asked (headless consent), list tools, do what the conformance
 * scenario needs, close.
 */
import type { Client } from '@modelcontextprotocol/client';
import { SkillsClient, SkillVerificationError, type Skill } from '@modelcontextprotocol/client/ext/skills';
import type { CliIO } from '../cli.js';
import { createClientHandlers } from '../connection/capabilities/client-handlers.js';
import type { RemoteServerConfig } from '../config/index.js';
import { resolveStateDir } from '../config/paths.js';
import { connect, type ConnectOptions, type ServerConnection } from '../connection/connection.js';
import { eraKey, verdictOf } from '../connection/era-negotiation.js';
import { memoryEraVerdicts } from '../connection/era-verdicts.js';
import { CliError } from './client.js';
import { httpUrl, makeStateDir, stateDirSource } from './flags.js';
import { CONTEXT_ENV, SCENARIO_ENV, type ConnectFlags } from './connect.js';
import { connectAuth, parseConnectContext, type ConnectAuth, type ConnectContext } from './connect-auth.js';

/** What a scenario's work may use: the connection, the context, output, and requests that consent again if asked. */
interface ScenarioRun {
  connection: ServerConnection;
  context: ConnectContext;
  print(line: string): void;
  /** Calls a listed tool and returns its text; a tool error fails the run. */
  call(tool: string, args: Record<string, unknown>): Promise<string>;
  /** Runs `request`, finishing a consent and retrying when the server asks for one. */
  authorized<T>(request: () => Promise<T>): Promise<T>;
}

type ScenarioWork = (run: ScenarioRun) => Promise<void>;

/**
 * What each scenario of the conformance suite expects its client to do once
 * connected and its tools listed. A scenario not named here (`initialize`,
 * `request-metadata`, …) only connects and lists; an `auth/*` one not named
 * here calls `test-tool` when a user's consent authorized it — the call that
 * triggers a scope step-up, which a grant with no user cannot have.
 */
const SCENARIOS: Record<string, ScenarioWork> = {
  tools_call: (run) => callEach(run, [['add_numbers', { a: 5, b: 3 }]]),
  'elicitation-sep1034-client-defaults': (run) => callEach(run, [['test_client_elicitation_defaults', {}]]),
  'sse-retry': (run) => callEach(run, [['test_reconnection', {}]]),
  // Input-required rounds (SEP-2322): with and without request state, another tool in between, a result without
  // resultType. What is judged is the requests; the last answer is one the SDK refuses from a 2026-07-28 server.
  'sep-2322-client-request-state': (run) =>
    callEachNotingFailures(run, ['test_mrtr_echo_state', 'test_mrtr_no_state', 'test_mrtr_unrelated', 'test_mrtr_no_result_type']),
  // One request of each kind that carries standard headers (Mcp-Method, Mcp-Name).
  'http-standard-headers': async (run) => {
    const { client } = run.connection;
    const [tool] = run.connection.tools;
    if (tool !== undefined) await run.call(tool.name, {});
    const [resource] = (await run.authorized(() => client.listResources())).resources;
    if (resource !== undefined) await run.authorized(() => client.readResource({ uri: resource.uri }));
    const [prompt] = (await run.authorized(() => client.listPrompts())).prompts;
    if (prompt !== undefined) await run.authorized(() => client.getPrompt({ name: prompt.name, arguments: {} }));
  },
  // Tool arguments mirrored into Mcp-Param headers (SEP-2243), as the context lists them.
  'http-custom-headers': (run) => callEach(run, (run.context.toolCalls ?? []).map((call) => [call.name, call.arguments])),
  // Tools with malformed header annotations are not listed; every tool that is must still be usable.
  'http-invalid-tool-headers': (run) => callEach(run, run.connection.tools.map((tool) => [tool.name, { region: 'us-west1' }])),
  // A 2020-12 input schema reaches the server again exactly as it was listed.
  'json-schema-2020-12-preservation': async (run) => {
    const focal = run.connection.tools.find((tool) => tool.name === 'json_schema_2020_12_tool');
    if (focal === undefined) throw new CliError('the server does not list json_schema_2020_12_tool');
    await run.call('json_schema_echo', { schema: focal.inputSchema });
  },
  // Skills (SEP-2640): listing loads nothing; loading a skill verifies every file it reads.
  'sep-2640-client-no-prefetch': (run) => listSkills(run).then(() => undefined),
  'sep-2640-client-verify-digest': loadSkills,
  'sep-2640-client-verify-size': loadSkills,
  'sep-2640-client-verify-frontmatter': loadSkills,
};
const AUTH_SCENARIO: ScenarioWork = (run) => callEach(run, [['test-tool', {}]]);


/** Runs `mcp-fleet connect URL`; every failure, the state dir's and the OAuth credentials file's included, is one CliError line. */
export async function runConnect(io: CliIO, url: string, flags: ConnectFlags): Promise<void> {
  await connectAndRun(io, url, flags).catch((err: unknown) => {
    throw asCliError(err);
  });
}

async function connectAndRun(io: CliIO, url: string, flags: ConnectFlags): Promise<void> {
  const name = serverName(url);
  const scenario = nonEmpty(process.env[SCENARIO_ENV]);
  const context = parseConnectContext(process.env[CONTEXT_ENV]);
  const stateDir = resolveStateDir(flags.stateDir);
  await makeStateDir(stateDir, stateDirSource(flags.stateDir));
  const authorization = await connectAuth({
    url,
    name,
    stateDir,
    context,
    scenario,
    clientMetadataUrl: flags.clientMetadataUrl,
  });
  // Nobody to ask: a form elicitation is accepted with the defaults its schema declares.
  const handlers = createClientHandlers({
    elicitation: (request) => (request.mode === 'form' ? { action: 'accept' } : { action: 'decline' }),
  });
  const eras = runEras(name, authorization.config, handlers.setup(name));
  const connection = await withConsent(authorization, () =>
    connect(name, authorization.config, { authProvider: authorization.provider, setupClient: eras.setupClient, eras: eras.verdicts }),
  );
  try {
    const info = connection.serverInfo;
    io.stdout(`connected to ${info ? `${info.name} ${info.version}` : url}: ${connection.tools.length} tools\n`);
    for (const tool of connection.tools) io.stdout(`  ${tool.name}\n`);
    const run: ScenarioRun = {
      connection,
      context,
      print: (line) => io.stdout(`${line}\n`),
      call: (tool, args) => callOnce(authorization, connection, scenario, tool, args),
      authorized: (request) => withConsent(authorization, request),
    };
    await scenarioWork(scenario, authorization)?.(run);
  } finally {
    await connection.close();
  }
}

/**
 * The name `connect` gives the server: `connect-<host>-<port>`, so OAuth
 * credentials persist per server (`<state_dir>/oauth/<name>.json`) and a
 * second run against the same server reuses its tokens.
 */
function serverName(url: string): string {
  const parsed = new URL(httpUrl('URL')(url));
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
  return `connect-${parsed.hostname}-${port}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

/**
 * The era verdicts of one run, in memory. A connect refused for want of
 * consent after its handshake went through (the listing was refused) had
 * still learned the server's era: the attempt after the consent starts from
 * it instead of probing the server again. The verdict is read as the
 * attempt's client closes (`onclose` runs before the client forgets it); a
 * client that connects gets its own `onclose` from the connection.
 */
function runEras(name: string, config: RemoteServerConfig, setup: (client: Client) => void) {
  const verdicts = memoryEraVerdicts();
  const key = eraKey(name, config);
  return {
    verdicts,
    /** `setupClient` for every attempt: the handlers, and the era learned when the attempt's client closes. */
    setupClient: ((client) => {
      setup(client);
      client.onclose = () => {
        const verdict = verdictOf(client, verdicts.recall(key));
        if (verdict !== undefined) verdicts.learn(key, verdict);
      };
    }) satisfies ConnectOptions['setupClient'],
  };
}

function scenarioWork(scenario: string | undefined, authorization: ConnectAuth): ScenarioWork | undefined {
  if (scenario === undefined) return undefined;
  const named = SCENARIOS[scenario];
  if (named !== undefined) return named;
  return scenario.startsWith('auth/') && authorization.grant === 'authorization_code' ? AUTH_SCENARIO : undefined;
}

/** Calls each `[tool, args]` in turn, printing what it answered. */
async function callEach(run: ScenarioRun, calls: Array<[string, Record<string, unknown>]>): Promise<void> {
  for (const [tool, args] of calls) run.print(`${tool}: ${await run.call(tool, args)}`);
}

/** Calls each tool (no arguments) in turn, printing what it answered or why it failed; a failure does not stop the others. */
async function callEachNotingFailures(run: ScenarioRun, tools: string[]): Promise<void> {
  for (const tool of tools) {
    const outcome = await run.call(tool, {}).catch((err: unknown) => `failed: ${err instanceof Error ? err.message : String(err)}`);
    run.print(`${tool}: ${outcome}`);
  }
}

/**
 * Runs `attempt`; when it failed because the server asked for consent,
 * finishes that consent and tries again (finishPendingConsent bounds the loop).
 */
async function withConsent<T>(authorization: ConnectAuth, attempt: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (!(await authorization.finishPendingConsent())) throw err;
    }
  }
}

async function callOnce(
  authorization: ConnectAuth,
  connection: ServerConnection,
  scenario: string | undefined,
  tool: string,
  args: Record<string, unknown>,
): Promise<string> {
  if (!connection.tools.some((listed) => listed.name === tool)) {
    throw new CliError(`scenario ${scenario} calls tool "${tool}", which the server does not list`);
  }
  const result = await withConsent(authorization, () => connection.callTool(tool, args));
  const text = result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join(' ');
  if (result.isError === true) throw new CliError(`tool "${tool}" reported an error: ${text}`);
  return text;
}

/** Lists the server's skills (no file is read before a skill is loaded) and prints their URIs. */
async function listSkills(run: ScenarioRun): Promise<{ skills: SkillsClient; listed: Skill[] }> {
  const skills = new SkillsClient(run.connection.client);
  const listed = (await run.authorized(() => skills.list())).skills;
  run.print(`skills: ${listed.length}`);
  for (const skill of listed) run.print(`  ${skill.uri}`);
  return { skills, listed };
}

/**
 * Loads every listed skill: its SKILL.md, then each other file it lists,
 * every one checked against the listing. A file that fails its check stops
 * the load of its skill (nothing after it is read); the others still load,
 * and the run fails naming each skill refused.
 */
async function loadSkills(run: ScenarioRun): Promise<void> {
  const { skills, listed } = await listSkills(run);
  const refused: string[] = [];
  for (const skill of listed) {
    try {
      await run.authorized(() => skills.read(skill));
      // A "dynamic" skill lists no files: its SKILL.md says what else it reads, when it needs it.
      const files = Array.isArray(skill.resources) ? skill.resources : [];
      for (const file of files) {
        if (file.uri !== skill.uri) await run.authorized(() => skills.read(skill, file.uri));
      }
      run.print(`loaded skill ${skill.uri}`);
    } catch (err) {
      if (!(err instanceof SkillVerificationError)) throw err;
      refused.push(`${skill.uri} (${err.uri} fails its ${err.reason} check)`);
    }
  }
  if (refused.length > 0) throw new CliError(`refused to load skill ${refused.join(', ')}`);
}

function asCliError(err: unknown): CliError {
  return err instanceof CliError ? err : new CliError(err instanceof Error ? err.message : String(err));
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
