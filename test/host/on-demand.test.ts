// Servers started on demand (`start: "on_demand"`): no process until one of
// their tools is called or loaded through search, published meanwhile from
// their last run's catalog, and back to waiting once idle. Real fixture
// processes; the fixture writes its pid to FIXTURE_PID_FILE when it starts.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { createMcpHost, type McpHost } from '../../src/host.js';
import { runAgentTurn } from '../../src/agent/agent-loop.js';
import { createOpenAICompatibleModel } from '../../src/agent/openai-compatible.js';
import { fixtureCommand } from '../fixtures/index.js';
import { isAlive, stateDirWith, untilState } from './helpers.js';
import { startScriptedModel, textStep, toolCallsStep, type ScriptedModel } from '../support/scripted-model.js';

const hosts: McpHost[] = [];
let model: ScriptedModel | undefined;
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((host) => host.shutdown()));
  await model?.close();
  model = undefined;
});

function onDemandServer(pidFile: string, { env, ...extra }: Record<string, unknown> = {}) {
  return {
    type: 'local',
    command: fixtureCommand('healthy'),
    env: { FIXTURE_PID_FILE: pidFile, ...(env as Record<string, string> | undefined) },
    start: 'on_demand',
    idle_timeout_seconds: 0.5,
    ...extra,
  };
}

function open(dir: string): McpHost {
  const host = createMcpHost({ stateDir: dir, watchConfig: false, logger: { info() {}, warn() {} } });
  hosts.push(host);
  return host;
}

const pidOf = (file: string) => Number(readFileSync(file, 'utf8'));

/** Resolves once `pid` has exited. */
async function untilGone(pid: number, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (isAlive(pid)) {
    if (Date.now() > end) throw new Error(`process ${pid} is still running`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A state dir whose on-demand server `od` ran once (its catalog is in the journal), with the run's host shut down. */
async function ranOnce(extra: Record<string, unknown> = {}): Promise<{ dir: string; pidFile: string }> {
  const pidFile = join(mkdtempSync(join(tmpdir(), 'mcp-fleet-od-')), 'pid');
  const dir = stateDirWith({ od: onDemandServer(pidFile, extra) });
  const first = open(dir);
  await first.start();
  await untilState(first, 'od', 'ready');
  await first.shutdown();
  rmSync(pidFile, { force: true });
  return { dir, pidFile };
}

describe('start: on_demand', () => {
  test('without a known catalog it connects once to learn it, then goes back to waiting when idle', async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), 'mcp-fleet-od-')), 'pid');
    const host = open(stateDirWith({ od: onDemandServer(pidFile) }));
    await host.start();
    await untilState(host, 'od', 'ready');
    const pid = pidOf(pidFile);
    // No call within idle_timeout_seconds: the process ends and the server waits again.
    await untilState(host, 'od', 'pending');
    await untilGone(pid);
    expect(host.tools().filter((tool) => tool.server === 'od')).toEqual([]);
    // Published from the catalog it just had.
    const published = host.catalog().find((entry) => entry.name === 'od')!;
    expect(published.tools.map((tool) => tool.original)).toContain('echo');
    expect(published.tools.find((tool) => tool.original === 'echo')!.parameters).toMatchObject({ properties: { text: { type: 'string' } } });
  });

  test('a later run publishes the last catalog without a process; a call starts it and idling stops it again', async () => {
    const { dir, pidFile } = await ranOnce();
    const host = open(dir);
    await host.start();
    await host.settled();
    expect(host.server('od')).toMatchObject({ state: 'pending', ready: false });
    expect(existsSync(pidFile)).toBe(false);
    // Searchable and callable, though nothing runs.
    const [hit] = host.searchTools('repeat back the text I give', { limit: 3 }).filter((found) => found.server === 'od');
    expect(hit).toMatchObject({ name: 'od__echo', server: 'od', original: 'echo', available: true });
    expect(existsSync(pidFile)).toBe(false);

    const result = await host.callTool('od__echo', { text: 'woken' });
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'woken' }], details: { is_error: false } });
    expect(host.server('od')!.state).toBe('ready');
    const pid = pidOf(pidFile);
    expect(isAlive(pid)).toBe(true);

    await untilState(host, 'od', 'pending');
    await untilGone(pid);
    // And again: each call after idling starts a new process.
    const again = await host.callTool('od__add', { a: 2, b: 3 });
    expect(again.details.is_error).toBe(false);
    expect(pidOf(pidFile)).not.toBe(pid);
  });

  test('a running call holds the server: it idles only after the last call ended', async () => {
    const { dir, pidFile } = await ranOnce();
    const host = open(dir);
    await host.start();
    await host.settled();
    // `slow` answers after `ms`: longer than idle_timeout_seconds (0.5 s).
    const slow = host.callTool('od__slow', { ms: 1200 });
    await untilState(host, 'od', 'ready');
    const pid = pidOf(pidFile);
    // Every state od shows while the call runs (past idle_timeout_seconds), up to its answer.
    const seen: string[] = [];
    const unsubscribe = host.subscribe(() => seen.push(host.server('od')?.state ?? 'absent'));
    const result = await slow;
    unsubscribe();
    expect(result.details.is_error).toBe(false);
    expect(seen.filter((state) => state !== 'ready')).toEqual([]);
    await untilState(host, 'od', 'pending');
    await untilGone(pid);
  });

  test('a call whose start times out is answered with the reason the start failed, not a wait given up as long', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'mcp-fleet-od-')), 'ran');
    // Its second start never answers initialize: the connect times out after timeout_seconds. (It writes no pid file.)
    const { dir } = await ranOnce({
      command: fixtureCommand('first-run-only'),
      env: { FIXTURE_MARKER: marker, FIXTURE_THEN_HANG: '1' },
      timeout_seconds: 2,
    });
    const host = open(dir);
    await host.start();
    await host.settled();
    const result = await host.callTool('od__echo', { text: 'hello' });
    expect(result.details).toMatchObject({ is_error: true, server: 'od', tool: 'echo' });
    expect(result.content).toEqual([
      { type: 'text', text: expect.stringContaining('is not ready (state: error — no answer to initialize within 2s') },
    ]);
  });

  test('a start that failed is tried again by the next call, once per call', async () => {
    // The fixture refuses to start while `broken` exists: each refused start adds a line to it.
    const broken = join(mkdtempSync(join(tmpdir(), 'mcp-fleet-od-')), 'broken');
    const { dir, pidFile } = await ranOnce({ env: { FIXTURE_BROKEN_WHILE: broken } });
    writeFileSync(broken, '');
    const starts = () => readFileSync(broken, 'utf8').split('\n').filter(Boolean).length;
    const host = open(dir);
    await host.start();
    await host.settled();

    const first = await host.callTool('od__echo', { text: 'one' });
    expect(first.details.is_error).toBe(true);
    expect(host.server('od')).toMatchObject({ state: 'error', error: expect.stringContaining('exited with code 3') });
    expect(starts()).toBe(1);
    // Each call starts it again, once (that `error.halted` starts nothing on its own, no timer in it, the machine's model tests hold).
    const second = await host.callTool('od__echo', { text: 'two' });
    expect(second.details.is_error).toBe(true);
    expect(starts()).toBe(2);

    // The cause fixed: the next call starts it and is answered, with no restart by hand.
    rmSync(broken);
    const third = await host.callTool('od__echo', { text: 'three' });
    expect(third).toMatchObject({ content: [{ type: 'text', text: 'three' }], details: { is_error: false } });
    expect(host.server('od')!.state).toBe('ready');
    expect(isAlive(pidOf(pidFile))).toBe(true);
  });

  test('a tool the server never had is no reason to start it', async () => {
    const { dir, pidFile } = await ranOnce();
    const host = open(dir);
    await host.start();
    await host.settled();
    const result = await host.callTool('od__no_such_tool', {});
    expect(result.details.is_error).toBe(true);
    expect(existsSync(pidFile)).toBe(false);
    expect(host.server('od')!.state).toBe('pending');
  });
});

describe('deferred loading', () => {
  test('tools({ loading: "deferred" }) gives search_tools and the always-loaded tools only', async () => {
    const dir = stateDirWith({
      eager: { type: 'local', command: fixtureCommand('healthy'), tools: { always_load: ['add'] } },
      other: { type: 'local', command: fixtureCommand('healthy') },
    });
    const host = open(dir);
    await host.start();
    await host.settled();
    expect(host.tools({ loading: 'deferred' }).map((tool) => tool.name)).toEqual(['search_tools', 'eager__add']);
    const eager = host.tools();
    expect(eager.length).toBeGreaterThan(10);
    expect(eager.filter((tool) => tool.alwaysLoad).map((tool) => tool.name)).toEqual(['eager__add']);
  });

  test('runAgentTurn: the tools search_tools found go with the next request, and calling one starts its on-demand server', async () => {
    const { dir, pidFile } = await ranOnce();
    const host = open(dir);
    await host.start();
    await host.settled();
    model = await startScriptedModel([
      toolCallsStep([{ id: 's1', name: 'search_tools', args: { query: 'add two numbers together', limit: 2 } }]),
      toolCallsStep([{ id: 'c1', name: 'od__add', args: { a: 20, b: 22 } }]),
      (request) => textStep(`sum: ${request.body.messages.at(-1).content}`),
    ]);
    const turn = await runAgentTurn(
      createOpenAICompatibleModel({ baseUrl: model.baseUrl, apiKey: 'sk-deferred-test', model: 'm' }),
      [{ role: 'user', content: 'What is 20 + 22?' }],
      host,
      { loading: 'deferred' },
    );
    expect(turn).toMatchObject({ stop: 'answered', rounds: 3, text: 'sum: 42' });
    const offered = model.requests.map((request) =>
      (request.body.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name),
    );
    // First only the meta tool; after the search the found tools too, with their schemas.
    expect(offered[0]).toEqual(['search_tools']);
    expect(offered[1]).toContain('od__add');
    const add = (model.requests[1]!.body.tools as Array<{ function: { name: string; parameters: unknown } }>).find(
      (tool) => tool.function.name === 'od__add',
    )!;
    expect(add.function.parameters).toMatchObject({ properties: { a: { type: 'number' }, b: { type: 'number' } } });
    expect(isAlive(pidOf(pidFile))).toBe(true);
  });
});
