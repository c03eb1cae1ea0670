// Protocol eras through mcp-fleet's own connect: a 2025-only server, a
// 2026-only server and a dual-era server, each a real fixture process over
// stdio and HTTP; `protocol` auto / 2025 / 2026; the era verdict kept in a
// store and reused (no probe, no extra process), and dropped when it no
// longer holds. Spawns are counted from the fixtures' FIXTURE_SPAWN_LOG.
import { existsSync, readFileSync, watch } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RemoteServerConfig, ServerConfig, type LocalServerConfig } from '../../src/config/schema.js';
import type { ServerConnection } from '../../src/connection/connection.js';
import { eraKey, STDIO_PROBE_MS } from '../../src/connection/era-negotiation.js';
import { fileEraVerdicts, memoryEraVerdicts, VERDICT_WRITE_DELAY_MS, type EraVerdicts } from '../../src/connection/era-verdicts.js';
import { FleetError } from '../../src/errors.js';
import { fixture, startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { connectTracked, firstText, fixtureConfig, tempDir } from './helpers.js';
import { until } from '../support/wait.js';

const servers: HttpFixture[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

function spawnLog(): string {
  return join(tempDir(), 'spawns.log');
}

function spawns(log: string): string[] {
  return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : [];
}

function local(fixture: string, log: string, overrides: Partial<LocalServerConfig> = {}, args: string[] = []): LocalServerConfig {
  const config = fixtureConfig(fixture, { env: { FIXTURE_SPAWN_LOG: log }, ...overrides });
  return { ...config, command: [...config.command, ...args] };
}

async function remote(fixture: string, args: string[], overrides: Record<string, unknown> = {}): Promise<RemoteServerConfig> {
  const server = await startHttpFixture(fixture, args);
  servers.push(server);
  return RemoteServerConfig.parse({ type: 'remote', url: server.url, transport: 'streamable_http', ...overrides });
}

async function callText(connection: ServerConnection, tool: string, args: Record<string, unknown> = {}): Promise<string> {
  return firstText(await connection.callTool(tool, args));
}

async function connectError(name: string, config: ServerConfig, eras?: EraVerdicts): Promise<FleetError> {
  const error = await connectTracked(name, config, { eras }).then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(FleetError);
  return error as FleetError;
}

describe('eras over stdio', () => {
  it('auto speaks 2026-07-28 to a modern server in one process, and the next connect skips the probe', async () => {
    const log = spawnLog();
    const eras = memoryEraVerdicts();
    const config = local('modern', log);
    const first = await connectTracked('modern', config, { eras });
    expect(first.client.getProtocolEra()).toBe('modern');
    expect(await callText(first, 'era')).toBe('modern');
    expect(spawns(log)).toHaveLength(1);
    const verdict = eras.recall(eraKey('modern', config));
    expect(verdict).toMatchObject({ era: 'modern' });
    await first.close();

    const second = await connectTracked('modern', config, { eras });
    expect(await callText(second, 'echo', { text: 'again' })).toBe('again');
    expect(second.client.getProtocolEra()).toBe('modern');
    expect(spawns(log)).toHaveLength(2);
    // Nothing changed: the verdict is the same object, not rewritten.
    expect(eras.recall(eraKey('modern', config))).toBe(verdict);
  });

  it('auto falls back to initialize for a 2025 server and remembers it is legacy', async () => {
    const eras = memoryEraVerdicts();
    const config = fixtureConfig('healthy');
    const connection = await connectTracked('old', config, { eras });
    expect(connection.client.getProtocolEra()).toBe('legacy');
    expect(await callText(connection, 'add', { a: 2, b: 3 })).toBe('5');
    expect(eras.recall(eraKey('old', config))).toMatchObject({ era: 'legacy' });
  });

  it('a legacy server that exits on the probe is spawned again for initialize, once; then never probed', async () => {
    const log = spawnLog();
    const eras = memoryEraVerdicts();
    const config = local('legacy-strict', log);
    const first = await connectTracked('strict', config, { eras });
    expect(await callText(first, 'echo', { text: 'hi' })).toBe('hi');
    expect(spawns(log).map((line) => line.split(' ')[1])).toEqual(['server/discover', 'initialize']);
    await first.close();

    const second = await connectTracked('strict', config, { eras });
    expect(await callText(second, 'echo', { text: 'again' })).toBe('again');
    expect(spawns(log).map((line) => line.split(' ')[1])).toEqual(['server/discover', 'initialize', 'initialize']);
  });

  it('protocol 2025 never probes; a 2026-only server refuses it with a protocol error', async () => {
    const log = spawnLog();
    const strict = await connectTracked('strict', local('legacy-strict', log, { protocol: '2025' }));
    expect(await callText(strict, 'echo', { text: 'x' })).toBe('x');
    expect(spawns(log).map((line) => line.split(' ')[1])).toEqual(['initialize']);

    const error = await connectError('modern', local('modern', spawnLog(), { protocol: '2025' }));
    expect(error.kind).toBe('protocol');
    expect(error.message).toMatch(/^initialize failed: /);
  });

  it('protocol 2026 connects a modern server and refuses a 2025-only one naming the revision', async () => {
    const modern = await connectTracked('modern', local('modern', spawnLog(), { protocol: '2026' }));
    expect(modern.client.getProtocolEra()).toBe('modern');

    const error = await connectError('old', fixtureConfig('healthy', { protocol: '2026' }));
    expect(error.kind).toBe('protocol');
    expect(error.message).toContain('2026-07-28');
  });

  it('protocol 2026 waits for a server slower to start than the auto probe bound (no fallback to hurry to)', { timeout: 60_000 }, async () => {
    // modern.mjs behind a start-up delay past STDIO_PROBE_MS, as a Python server importing its SDK on a busy machine.
    const delayed = ['-e', `setTimeout(() => import(process.argv[1]), ${STDIO_PROBE_MS + 1000})`, fixture('modern')];
    const config = ServerConfig.parse({ type: 'local', command: [process.execPath, ...delayed], protocol: '2026', timeout_seconds: 30 });
    const connection = await connectTracked('slow-modern', config);
    expect(connection.client.getProtocolEra()).toBe('modern');
    expect(await callText(connection, 'era')).toBe('modern');
  });

  it('a dual-era server is spoken to in the era asked for', async () => {
    const log = spawnLog();
    const auto = await connectTracked('dual', local('modern', log, {}, ['--legacy', 'stateless']));
    expect(await callText(auto, 'era')).toBe('modern');
    const pinned = await connectTracked('dual', local('modern', log, { protocol: '2025' }, ['--legacy', 'stateless']));
    expect(await callText(pinned, 'era')).toBe('legacy');
  });

  it('the verdict survives in the state dir, and a verdict that no longer holds is dropped and learned again', async () => {
    const file = join(tempDir(), 'eras.json');
    const config = fixtureConfig('healthy');
    const key = eraKey('srv', config);
    // A stale verdict: this server was modern once (say), and is a 2025 server now.
    const modern = memoryEraVerdicts();
    const modernConfig = local('modern', spawnLog());
    await (await connectTracked('srv', modernConfig, { eras: modern })).close();
    const stale = fileEraVerdicts(file);
    stale.learn(key, modern.recall(eraKey('srv', modernConfig))!);
    await stale.flushed();

    const eras = fileEraVerdicts(file);
    expect(eras.recall(key)).toMatchObject({ era: 'modern' });
    const connection = await connectTracked('srv', config, { eras });
    expect(connection.client.getProtocolEra()).toBe('legacy');
    await eras.flushed();
    expect(fileEraVerdicts(file).recall(key)).toMatchObject({ era: 'legacy' });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ version: 1 });
  });
});

describe('the verdict file', () => {
  it('a burst of verdicts, and one learnt while a write runs, are all on disk once flushed; a write is not one per verdict', async () => {
    const file = join(tempDir(), 'eras.json');
    const eras = fileEraVerdicts(file);
    const verdict = (i: number) => ({ era: 'legacy' as const, learned_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() });
    const renames: string[] = [];
    const watcher = watch(dirname(file), (_event, name) => {
      if (name === 'eras.json') renames.push(name);
    });
    try {
      for (let i = 0; i < 20; i += 1) eras.learn(`s${i}`, verdict(i));
      // The first write has begun (or is about to): this one must land in a later one.
      await Promise.resolve();
      eras.learn('late', verdict(59));
      await eras.flushed();
      const onDisk = fileEraVerdicts(file);
      for (let i = 0; i < 20; i += 1) expect(onDisk.recall(`s${i}`)).toEqual(verdict(i));
      expect(onDisk.recall('late')).toEqual(verdict(59));
      await until(() => renames.length > 0, 'the watcher to see the file replaced');
    } finally {
      watcher.close();
    }
    expect(renames.length).toBeGreaterThan(0);
    expect(renames.length).toBeLessThan(10);
  });

  it('verdicts learnt one after another are written together, unasked, once the delay has passed', async () => {
    const file = join(tempDir(), 'eras.json');
    const eras = fileEraVerdicts(file);
    const learnt = Date.now();
    eras.learn('first', { era: 'legacy', learned_at: new Date().toISOString() });
    eras.learn('second', { era: 'legacy', learned_at: new Date().toISOString() });
    expect(existsSync(file)).toBe(false);
    await until(() => existsSync(file), 'the verdicts written without flushed()');
    expect(Date.now() - learnt).toBeGreaterThanOrEqual(VERDICT_WRITE_DELAY_MS - 50);
    const onDisk = fileEraVerdicts(file);
    expect(onDisk.recall('first')).toMatchObject({ era: 'legacy' });
    expect(onDisk.recall('second')).toMatchObject({ era: 'legacy' });
  });
});

describe('eras over Streamable HTTP', () => {
  it('auto speaks 2026-07-28 to a modern HTTP server and remembers its advertisement', async () => {
    const eras = memoryEraVerdicts();
    const config = await remote('modern', ['--http']);
    const connection = await connectTracked('web', config, { eras });
    expect(connection.client.getProtocolEra()).toBe('modern');
    expect(await callText(connection, 'add', { a: 1, b: 2 })).toBe('3');
    expect(eras.recall(eraKey('web', config))).toMatchObject({ era: 'modern', discover: expect.any(Object) });
    const again = await connectTracked('web', config, { eras });
    expect(await callText(again, 'era')).toBe('modern');
  });

  it('a dual-era HTTP server serves both eras; protocol 2025 against a 2026-only one is refused', async () => {
    const dual = await remote('modern', ['--http', '--legacy', 'stateless']);
    expect(await callText(await connectTracked('dual', dual), 'era')).toBe('modern');
    expect(await callText(await connectTracked('dual', { ...dual, protocol: '2025' }), 'era')).toBe('legacy');

    const strict = await remote('modern', ['--http'], { protocol: '2025' });
    const error = await connectError('strict', strict);
    expect(error.message).toContain('HTTP 400');
  });

  it('auto falls back to initialize for a 2025 HTTP server', async () => {
    const config = await remote('http-server', []);
    const connection = await connectTracked('old', config);
    expect(connection.client.getProtocolEra()).toBe('legacy');
  });
});
