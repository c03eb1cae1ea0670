import { createServer, maxHeaderSize, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
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
    server.on('clientError', answerClientError);
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

/**
 * A request Node refuses before the app sees it (headers or URL too large, a
 * malformed request line): answered in the API's error shape, not Node's bare
 * status line.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || (socket as Duplex & { _httpMessage?: unknown })._httpMessage) {
    socket.destroy(error);
    return;
  }
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  const [status, reason] = tooLarge ? [431, 'Request Header Fields Too Large'] : [400, 'Bad Request'];
  // A HEAD answer has no body, and a request whose method cannot be read may be one: a body only when it is known not to be.
  const method = /^([A-Z]+) /.exec((error as NodeJS.ErrnoException & { rawPacket?: Buffer }).rawPacket?.toString('latin1', 0, 16) ?? '')?.[1];
  const body =
    method === undefined || method === 'HEAD'
      ? ''
      : JSON.stringify({
          error: tooLarge
            ? { code: 'headers_too_large', message: `the request line and headers are larger than ${maxHeaderSize} bytes` }
            : { code: 'bad_request', message: 'the request is not valid HTTP' },
        });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    // Keep-alive sockets and SSE streams would otherwise hold close() open.
    server.closeAllConnections();
  });
}
