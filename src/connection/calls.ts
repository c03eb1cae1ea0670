/**
 * Calling a connected server's tools: at most `max_concurrent_calls` at once
 * (the limiter), each bounded by `call_timeout_seconds` (reset by progress)
 * and by `max_total_timeout_seconds`, progress forwarded to the caller. A
 * rate-limited call waits out `Retry-After` and is retried once when the
 * tool is read-only or idempotent; any other gets an error result naming
 * the wait (rate-limits.ts).
 */
import type { CallToolResult, Client, Tool } from '@modelcontextprotocol/client';
import type { Span } from '@opentelemetry/api';
import { redact } from '../config/masking.js';
import { FleetError } from '../errors.js';
import type { ExecuteOptions, ToolProgress } from '../catalog/index.js';
import { createCallLimiter, type CallLimiter } from './call-limiter.js';
import { callFailure, type CallFailureContext } from './failures.js';
import { linkedSignal, pause } from './deadlines.js';
import { withinCall } from './input-rounds.js';
import { rateLimitOfError, rateLimitOfResult, type RateLimit, type RetryAfterLog } from './rate-limits.js';
import { requestMeta } from './request-meta.js';
import { awaitTask, taskOf, type TaskWait } from './tasks.js';
import { startToolCall, toolCallTelemetry, type ToolCallTarget } from '../telemetry/tool-calls.js';

/**
 * The calls of one connection, through one limiter. `connection` names the
 * server, its config and secrets, and explains each failure (see
 * failures.ts). A class: a host keeps one per ready server.
 */
export class Caller {
  private readonly target: ToolCallTarget;
  private readonly limiter: CallLimiter;
  private readonly callTimeoutMs: number;
  private readonly maxTotalSeconds: number | null;

  constructor(
    private readonly client: Client,
    private readonly connection: CallFailureContext,
    /** The listed definitions by name: the SDK validates structured output against them. */
    public definitions: ReadonlyMap<string, Tool>,
    private readonly retryAfter?: RetryAfterLog,
    private readonly answerInput?: TaskWait['answer'],
  ) {
    const { name, config } = connection;
    this.target = { server: name, config, client };
    this.limiter = createCallLimiter(config.max_concurrent_calls);
    this.callTimeoutMs = config.call_timeout_seconds * 1000;
    this.maxTotalSeconds = config.max_total_timeout_seconds ?? null;
  }

  /** Calls `tool` once a slot is free; `signal` cancels it, waiting or running. */
  call(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal | undefined,
    onProgress: ExecuteOptions['onProgress'],
  ): Promise<CallToolResult> {
    // Inline arrows, not named function expressions: under a loader that keeps names (tsx, vitest's
    // esbuild) every named function created per call pays a defineProperty.
    if (!toolCallTelemetry()) return this.limiter.run(() => this.runCall(tool, args, signal, onProgress, undefined), signal);
    return this.observedCall(tool, args, signal, onProgress);
  }

  /** A call traced or metered: {@link call} with its span and duration. */
  private observedCall(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal | undefined,
    onProgress: ExecuteOptions['onProgress'],
  ): Promise<CallToolResult> {
    // Started here, where the caller's span is the active one: the call's span is its child.
    const observed = startToolCall(this.target, tool);
    return this.limiter.run(() => this.runCall(tool, args, signal, onProgress, observed.span), signal).then(
      (result) => observed.done(result),
      (error: unknown) => {
        // Cancelled by its caller (the journal's `cancelled`): told apart from a failure, never counted as one.
        throw signal?.aborted === true ? observed.cancelled(error) : observed.failed(error);
      },
    );
  }

  /** One call, once the limiter gave it a slot. */
  private async runCall(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal | undefined,
    onProgress: ExecuteOptions['onProgress'],
    span: Span | undefined,
  ): Promise<CallToolResult> {
    const { client, maxTotalSeconds } = this;
    const total = maxTotalSeconds === null ? undefined : totalDeadline(maxTotalSeconds * 1000, signal);
    const link = total ?? (signal === undefined ? undefined : linkedSignal(signal));
    const started = Date.now();
    // The call's own span, when traced, is what the server's spans hang under.
    const meta = requestMeta(client, this.target.config.log_level, span);
    const call: OneCall = {
      tool,
      params: meta === undefined ? { name: tool, arguments: args } : { name: tool, arguments: args, _meta: meta },
      options: {
        signal: link?.signal,
        timeout: this.callTimeoutMs,
        resetTimeoutOnProgress: true,
        // Always passed: the SDK only resets the timeout on progress when it is set.
        onprogress: progressHandler(onProgress),
        toolDefinition: this.definitions.get(tool),
      },
      onProgress,
    };
    try {
      const first = await this.attempt(call);
      return isRateLimit(first) ? await this.afterRateLimit(call, first, started) : first;
    } catch (err) {
      throw total?.expired() && !signal?.aborted ? this.pastTotalTimeout(tool) : await callFailure(err, tool, signal, this.connection);
    } finally {
      link?.dispose();
    }
  }

  private pastTotalTimeout(tool: string): FleetError {
    const why = `tool "${tool}" did not finish within max_total_timeout_seconds (${this.maxTotalSeconds}s)`;
    return new FleetError('timeout', redact(why, this.connection.secrets));
  }

  /** One try of a call: its result, or the rate limit it hit. */
  private async attempt(call: OneCall): Promise<CallToolResult | RateLimit> {
    const { client } = this;
    const { params, options } = call;
    try {
      // On the 2026-07-28 era the host answers the server's input rounds inside the call: bounded like it.
      const answer = (await (client.getProtocolEra() === 'modern'
        ? withinCall({ waitMs: this.callTimeoutMs, ended: this.connection.ended() }, () => client.callTool(params, options))
        : client.callTool(params, options))) as CallToolResult;
      const task = taskOf(answer);
      const result = task === undefined ? answer : await awaitTask(client, task, this.taskWait(call.tool, options.signal, call.onProgress));
      return rateLimitOfResult(result) ?? withSecretsMasked(result, this.connection.secrets);
    } catch (err) {
      const limit = rateLimitOfError(err, call.tool, this.retryAfter);
      if (limit === null) throw err;
      return limit;
    }
  }

  /** A rate-limited call: waited out and tried once more when it may be, else an error result saying why not. */
  private async afterRateLimit(call: OneCall, first: RateLimit, started: number): Promise<CallToolResult> {
    const { tool } = call;
    const refusal = this.whyNotRetried(tool, first, started);
    if (refusal !== null) return rateLimited(refusal);
    await pause(first.retryAfterMs, call.options.signal);
    const second = await this.attempt(call);
    if (!isRateLimit(second)) return second;
    return rateLimited(`${this.limitedText(tool, second)}; already retried once after ${seconds(first.retryAfterMs)}`);
  }

  /** How a call answered with a task waits for it: the call's signal and timeout, status changes as progress. */
  private taskWait(tool: string, signal: AbortSignal | undefined, onProgress: ExecuteOptions['onProgress']): TaskWait {
    return {
      tool,
      signal,
      idleMs: this.callTimeoutMs,
      onStatus: (change, message) => onProgress?.({ progress: change, message }),
      ...(this.answerInput === undefined ? {} : { answer: this.answerInput }),
    };
  }

  /** Why a rate-limited call is not waited out and retried; null when it is. */
  private whyNotRetried(tool: string, limit: RateLimit, started: number): string | null {
    const hints = this.definitions.get(tool)?.annotations;
    if (hints?.readOnlyHint !== true && hints?.idempotentHint !== true) {
      return `${this.limitedText(tool, limit)}; not retried: the tool is neither read-only nor idempotent`;
    }
    const { maxTotalSeconds } = this;
    const left = Math.min(this.callTimeoutMs, maxTotalSeconds === null ? Infinity : maxTotalSeconds * 1000 - (Date.now() - started));
    if (limit.retryAfterMs > left) return `${this.limitedText(tool, limit)}; not retried: that is longer than the call's timeout allows`;
    return null;
  }

  private limitedText(tool: string, limit: RateLimit): string {
    return redact(`tool "${tool}" was rate limited by the server: retry after ${seconds(limit.retryAfterMs)}`, this.connection.secrets);
  }
}

/**
 * A tool error as the server wrote it, with the server's own secrets masked:
 * a server that quotes its key in an error message ("auth failed for key …")
 * must not hand it to the model or a gateway client. A result that is not an
 * error is the tool's answer and passes as it is.
 */
function withSecretsMasked(result: CallToolResult, secrets: readonly string[]): CallToolResult {
  if (result.isError !== true || secrets.length === 0) return result;
  const content = result.content.map((block) => (block.type === 'text' ? { ...block, text: redact(block.text, secrets) } : block));
  return { ...result, content };
}

/** One call of a tool, as each of its tries makes it. */
interface OneCall {
  tool: string;
  params: { name: string; arguments: Record<string, unknown>; _meta?: Record<string, unknown> };
  options: {
    signal: AbortSignal | undefined;
    timeout: number;
    resetTimeoutOnProgress: boolean;
    onprogress: (progress: SdkProgress) => void;
    toolDefinition: Tool | undefined;
  };
  onProgress: ExecuteOptions['onProgress'];
}

function isRateLimit(outcome: CallToolResult | RateLimit): outcome is RateLimit {
  return 'retryAfterMs' in outcome;
}

/** The error result a rate-limited call ends with. */
function rateLimited(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10}s`;
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
