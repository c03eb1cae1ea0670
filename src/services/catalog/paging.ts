/**
 * MCP list requests, page by page, each page bounded like any request: a
 * timeout, and a signal of its own linked to the caller's. The SDK adds an
 * abort listener to the signal of every request it sends and never removes
 * it, so a long-lived signal handed to it directly collects one per page (and,
 * aborted at last, sends a stale `notifications/cancelled` for each).
 */
import type { RequestBound } from '../connection/remote-transport.js';

/** A signal that follows `source` until `dispose()` detaches it. */
export function linkedSignal(source: AbortSignal): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const forward = (): void => controller.abort(source.reason);
  if (source.aborted) forward();
  else source.addEventListener('abort', forward, { once: true });
  return { signal: controller.signal, dispose: () => source.removeEventListener('abort', forward) };
}

/**
 * Follows `nextCursor` to the end; a cursor seen twice is a server bug, not a
 * reason to loop forever. `onPage` hears the running count.
 */
export async function allPages<T>(
  fetch: (cursor: string | undefined, request: { signal: AbortSignal; timeout: number }) => Promise<[T[], string | undefined]>,
  bound: RequestBound,
  onPage?: (listed: number) => void,
): Promise<T[]> {
  const items: T[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  do {
    const link = linkedSignal(bound.signal);
    const [page, next] = await fetch(cursor, { signal: link.signal, timeout: bound.timeout }).finally(link.dispose);
    items.push(...page);
    onPage?.(items.length);
    cursor = next;
    if (cursor !== undefined) {
      if (seen.has(cursor)) throw new Error(`server repeated cursor "${cursor}"`);
      seen.add(cursor);
    }
  } while (cursor !== undefined);
  return items;
}
