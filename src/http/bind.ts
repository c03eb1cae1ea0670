import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

export interface ListenOptions {
  /** Address to bind; default `127.0.0.1` (loopback only). */
  host?: string;
  /** Port; `0` picks a free one. */
  port: number;
}

export interface Listening {
  server: Server;
  /** `http://host:port/` as clients should reach it. */
  url: string;
  port: number;
  /** Stops accepting, ends open connections (SSE streams included), resolves when closed. */
  close(): Promise<void>;
}

/** Starts the app listening; resolves once the socket is bound, so `/healthz` answers from then on. */
export function listen(app: Express, options: ListenOptions): Promise<Listening> {
  const host = options.host ?? '127.0.0.1';
  return new Promise((resolve, reject) => {
    const server = createServer(app);
    server.once('error', reject);
    server.listen(options.port, host);
    server.once('listening', () => {
      server.off('error', reject);
      const { port } = server.address() as AddressInfo;
      const urlHost = host.includes(':') ? `[${host}]` : host;
      resolve({
        server,
        url: `http://${urlHost}:${port}/`,
        port,
        close: () => closeServer(server),
      });
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    // Keep-alive sockets and SSE streams would otherwise hold close() open.
    server.closeAllConnections();
  });
}
