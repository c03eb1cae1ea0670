/**
 * Calling a connected server's tools: at most `max_concurrent_calls` at once
 * (the limiter), each bounded by `call_timeout_seconds` (reset by progress)
 * and by `max_total_timeout_seconds`, progress forwarded to the caller.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { redact } from '../config/credentials.js';
import type { ServerConfig } from '../config/schema.js';
import { FleetError } from '../support/errors.js';
import type { ExecuteOptions, ToolProgress } from '../tools/agent-tool.js';
import { linkedSignal } from '../catalog/paging.js';
import { createCallLimiter } from './call-limiter.js';

/** Turns a failed call into the error its caller gets (see failures.ts). */
export type CallFailure = (err: unknown, tool: string, signal: AbortSignal | undefined) => Promise<Error>;

/** Calls `tool` once a slot is free; `signal` cancels it, waiting or running. */
export type CallTool = (
  tool: string,
  args: Record<string, unknown>,
  signal: AbortSignal | undefined,
  onProgress: ExecuteOptions['onProgress'],
) => Promise<CallToolResult>;

/** The calls of one connection, through one limiter; `fail` explains each failure. */
export function createCaller(
  client: Client,
  config: ServerConfig,
  secrets: readonly string[],
  fail: CallFailure,
): CallTool {
  const limiter = createCallLimiter(config.max_concurrent_calls);
  const callTimeoutMs = config.call_timeout_seconds * 1000;
  const maxTotalSeconds = config.max_total_timeout_seconds ?? null;

  /** One call, once the limiter gave it a slot. */
  async function runCall(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal | undefined,
    onProgress: ExecuteOptions['onProgress'],
  ): Promise<CallToolResult> {
    const total = maxTotalSeconds === null ? undefined : totalDeadline(maxTotalSeconds * 1000, signal);
    const link = total ?? (signal === undefined ? undefined : linkedSignal(signal));
    try {
      // onprogress is always passed: the SDK only resets the timeout on progress when it is set.
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal: link?.signal,
        timeout: callTimeoutMs,
        resetTimeoutOnProgress: true,
        onprogress: progressHandler(onProgress),
      });
      return result as CallToolResult;
    } catch (err) {
      if (total?.expired() && !signal?.aborted) {
        const why = `tool "${tool}" did not finish within max_total_timeout_seconds (${maxTotalSeconds}s)`;
        throw new FleetError('timeout', redact(why, secrets));
      }
      throw await fail(err, tool, signal);
    } finally {
      link?.dispose();
    }
  }

  return function callTool(tool, args, signal, onProgress) {
    // An inline arrow, not a named function expression: under tsx (how mcp-fleet runs)
    // esbuild's keepNames makes every named function created per call pay a defineProperty.
    return limiter.run(() => runCall(tool, args, signal, onProgress), signal);
  };
}

type SdkProgress = { progress: number; total?: number; message?: string };
const ignoreProgress = (): void => {};

/** The SDK's `onprogress` for a call: forwards to `onProgress`, or ignores progress (it still resets the timeout). */
function progressHandler(onProgress: ExecuteOptions['onProgress']): (progress: SdkProgress) => void {
  if (onProgress === undefined) return ignoreProgress;
  // Returned, not assigned to a property: no per-call naming of the function (see callTool).
  return (progress) => onProgress(toToolProgress(progress));
}

function toToolProgress(progress: SdkProgress): ToolProgress {
  const out: ToolProgress = { progress: progress.progress };
  if (progress.total !== undefined) out.total = progress.total;
  if (progress.message !== undefined) out.message = progress.message;
  return out;
}

/**
 * A signal that follows `source` and also aborts after `ms`: the bound on a
 * whole call. Not the SDK's `maxTotalTimeout`, which is only checked when
 * progress arrives and then fails the call without telling the server; an
 * abort sends `notifications/cancelled`.
 */
function totalDeadline(
  ms: number,
  source: AbortSignal | undefined,
): { signal: AbortSignal; expired: () => boolean; dispose: () => void } {
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new Error('max_total_timeout_seconds elapsed'));
  }, ms);
  const forward = (): void => controller.abort(source?.reason);
  if (source?.aborted) forward();
  else source?.addEventListener('abort', forward, { once: true });
  return {
    signal: controller.signal,
    expired: () => expired,
    dispose() {
      clearTimeout(timer);
      source?.removeEventListener('abort', forward);
    },
  };
}
