// An ext-apps App standing in for an app's frame: connected to the host's
// bridge for a tool over an in-memory pair, closed by the caller's `closers`.
import { App } from '@modelcontextprotocol/ext-apps';
import { InMemoryTransport } from '@modelcontextprotocol/client';
import type { McpHost } from '../../src/index.js';

export async function connectApp(
  host: McpHost,
  tool: string,
  closers: Array<() => Promise<void>>,
  options: Parameters<McpHost['appBridge']>[2] = {},
  beforeConnect: (app: App) => void = () => {},
) {
  const [hostSide, appSide] = InMemoryTransport.createLinkedPair();
  const session = await host.appBridge(tool, hostSide, options);
  // No DOM here: the app reports its size by hand (sendSizeChanged), not from a ResizeObserver.
  const app = new App({ name: 'test-app', version: '1.0.0' }, {}, { autoResize: false });
  beforeConnect(app);
  await app.connect(appSide);
  await session.initialized;
  closers.push(async () => {
    await session.close();
    await app.close();
  });
  return { session, app };
}
