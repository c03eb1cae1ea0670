// Loopback ports for tests that start servers of their own.
import { createServer } from 'node:net';

/**
 * A loopback port nothing listens on now (bound, then released): for a
 * server the test starts next, or as a port that refuses connections.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
