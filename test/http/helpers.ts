// Test helpers: raw HTTP requests (node:http, so Host and Origin can be set
// freely) against an app listening on a random loopback port.
import http from 'node:http';
import type { McpHost } from '../../src/host.js';
import { createManagementApp, type ManagementAppOptions } from '../../src/http/app.js';
import { listen, type Listening } from '../../src/http/bind.js';

export const TOKEN = 'test-token-0123456789abcdef';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string | undefined>;
  /** An object is sent as JSON; a string or Buffer as is. */
  body?: unknown;
  /** Send no Authorization header. */
  noAuth?: boolean;
}

/** A listening app and a request function bound to it. */
export interface Served extends Listening {
  request(path: string, options?: RequestOptions): Promise<Reply>;
}

export async function serve(host: McpHost, options: Partial<ManagementAppOptions> = {}): Promise<Served> {
  const app = createManagementApp(host, { token: TOKEN, ...options });
  const listening = await listen(app, { port: 0 });
  return { ...listening, request: (path, opts) => request(listening.port, path, opts) };
}

export function request(port: number, path: string, options: RequestOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { host: `127.0.0.1:${port}` };
  if (!options.noAuth) headers.authorization = `Bearer ${TOKEN}`;
  let payload: Buffer | undefined;
  if (options.body !== undefined) {
    const isRaw = typeof options.body === 'string' || Buffer.isBuffer(options.body);
    payload = isRaw ? Buffer.from(options.body as string) : Buffer.from(JSON.stringify(options.body));
    if (!isRaw) headers['content-type'] = 'application/json';
    headers['content-length'] = String(payload.length);
  }
  for (const [key, value] of Object.entries(options.headers ?? {})) {
    if (value === undefined) delete headers[key.toLowerCase()];
    else headers[key.toLowerCase()] = value;
  }
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text === '' ? undefined : JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
