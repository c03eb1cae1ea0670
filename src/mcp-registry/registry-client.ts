import type { z } from 'zod';
import { RegistryError } from './registry-errors.js';
import { registryUrl } from './registry-url.js';
import { RegistryServerList, RegistryServerResponse, type RegistryServer } from './server-json.js';

/** The API version this client speaks (`/v0.1/servers`). */
const API = 'v0.1';
/** Default bound on one request. */
export const DEFAULT_REGISTRY_TIMEOUT_MS = 10_000;
/** Largest page the official registry serves. */
const MAX_PAGE = 100;

export interface RegistryClientOptions {
  /** Base URL of the registry; default `$MCP_FLEET_REGISTRY_URL`, else the official one. */
  baseUrl?: string;
  /** Bound on each request in ms; default 10 s. */
  timeoutMs?: number;
  /** The fetch to use (tests); default the global one. */
  fetch?: typeof fetch;
}

/** One page of a search. */
export interface RegistryPage {
  servers: RegistryServer[];
  /** Pass it back as `cursor` for the next page; absent on the last one. */
  nextCursor?: string;
}


/** A read-only client of an MCP Registry's REST API. */
export class RegistryClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly fetch: typeof fetch;

  constructor(options: RegistryClientOptions = {}) {
    const base = registryUrl(options.baseUrl);
    let parsed: URL;
    try {
      parsed = new URL(base);
    } catch {
      throw new RegistryError('invalid_request', `registry URL is not a URL: ${base}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new RegistryError('invalid_request', `registry URL must be http(s): ${base}`);
    }
    this.baseUrl = parsed.href.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? DEFAULT_REGISTRY_TIMEOUT_MS;
    this.fetch = options.fetch ?? fetch;
  }

  /** One page of the latest versions whose name contains `query`. */
  async search(query: string, { limit = 30, cursor }: { limit?: number; cursor?: string } = {}): Promise<RegistryPage> {
    const params = new URLSearchParams({ version: 'latest', limit: String(Math.min(Math.max(1, limit), MAX_PAGE)) });
    if (query !== '') params.set('search', query);
    if (cursor !== undefined && cursor !== '') params.set('cursor', cursor);
    const list = await this.get(`servers?${params}`, RegistryServerList);
    const next = list.metadata?.nextCursor;
    return { servers: list.servers.map((entry) => entry.server), ...(next ? { nextCursor: next } : {}) };
  }

  /** Up to `limit` entries, following `metadata.nextCursor` across pages. */
  async searchAll(query: string, { limit = 30 }: { limit?: number } = {}): Promise<RegistryPage> {
    const servers: RegistryServer[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.search(query, { limit: limit - servers.length, cursor });
      servers.push(...page.servers);
      cursor = page.nextCursor;
      if (page.servers.length === 0) break;
    } while (cursor !== undefined && servers.length < limit);
    return { servers: servers.slice(0, limit), ...(cursor ? { nextCursor: cursor } : {}) };
  }

  /** One server at `version` (default `latest`). */
  async server(name: string, version = 'latest'): Promise<RegistryServer> {
    const path = `servers/${encodeURIComponent(name)}/versions/${encodeURIComponent(version)}`;
    const found = await this.get(path, RegistryServerResponse, `${name}${version === 'latest' ? '' : `@${version}`}`);
    return found.server;
  }

  private async get<T extends z.ZodType>(path: string, schema: T, what?: string): Promise<z.infer<T>> {
    const url = `${this.baseUrl}/${API}/${path}`;
    let response: Response;
    try {
      response = await this.fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      const reason =
        (err as Error).name === 'TimeoutError'
          ? `no answer within ${this.timeoutMs / 1000} s`
          : (causeOf(err) ?? (err as Error).message);
      throw new RegistryError('unreachable', `cannot reach the MCP registry at ${url} (${reason})`, { cause: err, url });
    }
    if (response.status === 404 && what !== undefined) {
      await response.body?.cancel();
      throw new RegistryError('not_found', `${what} is not in the MCP registry at ${this.baseUrl} (GET ${url}: 404)`, { url, status: 404 });
    }
    if (!response.ok) {
      const detail = await errorText(response);
      throw new RegistryError('http', `the MCP registry answered ${response.status} to GET ${url}${detail}`, { url, status: response.status });
    }
    let body: unknown;
    try {
      body = await response.json();
    } catch (err) {
      throw new RegistryError('invalid_response', `the MCP registry at ${url} answered something that is not JSON`, { cause: err, url, status: response.status });
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.join('.') ?? '';
      throw new RegistryError('invalid_response', `unexpected answer from the MCP registry at ${url}: ${where ? `${where}: ` : ''}${issue?.message ?? 'invalid'}`, {
        url,
        status: response.status,
      });
    }
    return parsed.data;
  }
}

/** `: <the registry's error>` when its answer carries one, cut to one short line. */
async function errorText(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: unknown; detail?: unknown; title?: unknown };
    const text = [body.error, body.detail, body.title].find((v) => typeof v === 'string') as string | undefined;
    return text ? `: ${text.split('\n')[0]!.slice(0, 200)}` : '';
  } catch {
    return '';
  }
}

/** The network reason under fetch's "fetch failed": ECONNREFUSED, ENOTFOUND, "bad port"… */
function causeOf(err: unknown): string | undefined {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  return typeof cause?.message === 'string' && cause.message !== '' ? cause.message : undefined;
}
