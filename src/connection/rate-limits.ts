/**
 * Rate limits a server announces: an HTTP 429 with `Retry-After`, or a tool
 * result that says it was rate limited and when to retry. The SDK's HTTP
 * error keeps the status but not the headers, so the transport's fetch notes
 * each 429's `Retry-After` by tool name, for the call that got it to read.
 */
import { SdkHttpError, type CallToolResult, type FetchLike } from '@modelcontextprotocol/client';

/** What the server asked for: wait this long before calling again. */
export interface RateLimit {
  retryAfterMs: number;
}

/** The `Retry-After` of recent 429 answers, by tool name. */
export interface RetryAfterLog {
  /** Wraps `fetch` (undefined: the global one) so 429 answers to tool calls are noted. */
  watch(fetch: FetchLike | undefined): FetchLike;
  /** The wait noted for `tool`'s last 429, forgotten once read. */
  take(tool: string): number | undefined;
}

export function createRetryAfterLog(): RetryAfterLog {
  const waits = new Map<string, number>();
  return {
    watch(inner) {
      const send = inner ?? fetch;
      return async function fetchNotingRetryAfter(url, init) {
        const response = await send(url, init);
        if (response.status === 429) {
          const tool = calledTool(init);
          const wait = parseRetryAfter(response.headers.get('retry-after'));
          if (tool !== undefined && wait !== undefined) waits.set(tool, wait);
        }
        return response;
      };
    },
    take(tool) {
      const wait = waits.get(tool);
      waits.delete(tool);
      return wait;
    },
  };
}

/** A 429 from the transport: the rate limit, with the wait its `Retry-After` asked for (0 when it gave none). */
export function rateLimitOfError(err: unknown, tool: string, log: RetryAfterLog | undefined): RateLimit | null {
  if (!(err instanceof SdkHttpError) || err.status !== 429) return null;
  return { retryAfterMs: log?.take(tool) ?? 0 };
}

const RATE_LIMITED = /rate[ -_]?limit|too many requests/i;
const RETRY_AFTER_TEXT = /retry[ -_]?after\D{0,20}?(\d+(?:\.\d+)?)\s*(ms|milliseconds?|s|sec|seconds?)?/i;

/**
 * A tool result that says it was rate limited and when to retry: an error
 * result naming a rate limit, with `retryAfterSeconds` (or `retry_after`) in
 * its structured content or "retry after N seconds" in its text.
 */
export function rateLimitOfResult(result: CallToolResult): RateLimit | null {
  if (result.isError !== true) return null;
  const text = result.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n');
  const structured = (result.structuredContent ?? {}) as Record<string, unknown>;
  if (!RATE_LIMITED.test(text) && !Object.keys(structured).some((key) => /rate|retry/i.test(key))) return null;
  for (const key of ['retryAfterSeconds', 'retry_after_seconds', 'retryAfter', 'retry_after']) {
    const value = structured[key];
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return { retryAfterMs: value * 1000 };
  }
  const match = RETRY_AFTER_TEXT.exec(text);
  if (match === null) return null;
  const amount = Number(match[1]);
  return { retryAfterMs: /^m/i.test(match[2] ?? '') ? amount : amount * 1000 };
}

/** `Retry-After` as milliseconds: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The tool a JSON-RPC POST body calls, if it is a `tools/call`. */
function calledTool(init: RequestInit | undefined): string | undefined {
  if (typeof init?.body !== 'string') return undefined;
  try {
    const message = JSON.parse(init.body) as { method?: unknown; params?: { name?: unknown } };
    return message.method === 'tools/call' && typeof message.params?.name === 'string' ? message.params.name : undefined;
  } catch {
    return undefined;
  }
}
