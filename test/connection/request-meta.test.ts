// What a modern-era request carries, as the server saw it (the modern
// fixture's whoami tool echoes it): the `_meta` envelope with the config's
// log_level as the per-request logLevel, the W3C trace context of the
// caller's active OpenTelemetry span, and over HTTP the standard
// Mcp-Method / Mcp-Name headers beside the config's own.
import { AsyncLocalStorage } from 'node:async_hooks';
import { context, ROOT_CONTEXT, trace, type Context, type ContextManager } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RemoteServerConfig } from '../../src/config/schema.js';
import type { ServerConnection } from '../../src/connection/connection.js';
import { startHttpFixture, type HttpFixture } from '../fixtures/index.js';
import { connectTracked, firstText, fixtureConfig } from './helpers.js';

/** The smallest real context manager: what an OpenTelemetry SDK installs, minus everything else. */
class StorageContextManager implements ContextManager {
  readonly #storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.#storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.#storage.disable();
    return this;
  }
}

beforeAll(() => void context.setGlobalContextManager(new StorageContextManager()));
afterAll(() => context.disable());

const servers: HttpFixture[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

interface Seen {
  era: string;
  envelope: Record<string, unknown>;
  meta: Record<string, unknown>;
  headers?: Record<string, string>;
}

async function whoami(connection: ServerConnection): Promise<Seen> {
  return JSON.parse(firstText(await connection.callTool('whoami', {}))) as Seen;
}

const SPAN = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };

describe('the _meta of a modern request', () => {
  it('carries log_level as logLevel, and the active span as traceparent', async () => {
    const connection = await connectTracked('m', fixtureConfig('modern', { log_level: 'debug' }));
    const plain = await whoami(connection);
    expect(plain.envelope['io.modelcontextprotocol/logLevel']).toBe('debug');
    expect(plain.meta.traceparent).toBeUndefined();

    const traced = await context.with(trace.setSpanContext(ROOT_CONTEXT, SPAN), () => whoami(connection));
    expect(traced.meta.traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
  });

  it('carries no logLevel without log_level (the server then sends no log)', async () => {
    const connection = await connectTracked('m', fixtureConfig('modern'));
    expect((await whoami(connection)).envelope).not.toHaveProperty(['io.modelcontextprotocol/logLevel']);
  });

  it('goes out over HTTP with the standard headers and the config headers', async () => {
    const server = await startHttpFixture('modern', ['--http']);
    servers.push(server);
    const config = RemoteServerConfig.parse({ type: 'remote', url: server.url, transport: 'streamable_http', headers: { 'X-Team': 'blue' } });
    const seen = await whoami(await connectTracked('web', config));
    expect(seen.headers).toMatchObject({ 'mcp-method': 'tools/call', 'mcp-name': 'whoami', 'x-team': 'blue' });
  });
});
