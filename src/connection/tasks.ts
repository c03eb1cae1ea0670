/**
 * Tool calls run as tasks (the `io.modelcontextprotocol/tasks` extension,
 * SEP-2663): a server that negotiated it may answer `tools/call` with a task
 * handle (`resultType: "task"`) instead of a result, and the client polls
 * `tasks/get` until the task ends. The SDK (2.4.0) has no tasks runtime and
 * refuses that result type, so the transport is watched (tool-results.ts): a task handle
 * answering a `tools/call` reaches the SDK as an error result carrying the
 * task in `_meta` (error results skip output-schema validation), and
 * {@link awaitTask} polls it to its end. Status changes are reported like
 * progress; the call's signal and timeouts cancel the task (`tasks/cancel`).
 */
import {
  ProtocolError,
  type CallToolResult,
  type Client,
  type InputRequest,
  type InputResponse,
} from '@modelcontextprotocol/client';
import { z } from 'zod';
import { FleetError } from '../errors.js';
import { pause } from './deadlines.js';

/** The extension's identifier, declared in the client's capabilities. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** Where a watched transport puts a task handle in the result the SDK sees. */
const TASK_HANDLE = 'dev.mcp-fleet/task';
/** Polling bounds when the server suggests none, or an unreasonable one. */
const DEFAULT_POLL_MS = 500;
const MIN_POLL_MS = 20;
const MAX_POLL_MS = 5000;

const Task = z.looseObject({
  taskId: z.string(),
  status: z.enum(['working', 'input_required', 'completed', 'failed', 'cancelled']),
  statusMessage: z.string().optional(),
  pollIntervalMs: z.number().optional(),
  result: z.record(z.string(), z.unknown()).optional(),
  inputRequests: z.record(z.string(), z.looseObject({ method: z.string(), params: z.unknown() })).optional(),
  error: z.looseObject({ code: z.number(), message: z.string() }).optional(),
});
type Task = z.infer<typeof Task>;

/**
 * A task handle answering a `tools/call`, as a result the SDK accepts: an
 * error result with the task in its `_meta`. Undefined for any other result.
 */
export function taskPlaceholder(result: Record<string, unknown>): Record<string, unknown> | undefined {
  if (result.resultType !== 'task') return undefined;
  const { resultType: _task, _meta, ...task } = result;
  return { resultType: 'complete', isError: true, content: [], _meta: { ...(_meta as object), [TASK_HANDLE]: task } };
}

/** The task a call's result stands for, if the server answered with one. */
export function taskOf(result: CallToolResult): Task | undefined {
  const handle = result._meta?.[TASK_HANDLE];
  if (handle === undefined) return undefined;
  return Task.parse(handle);
}

export interface TaskWait {
  /** Aborting cancels the task (`tasks/cancel`) and rejects with the signal's reason. */
  signal: AbortSignal | undefined;
  /** No status change within this long cancels the task: the call's timeout, reset by progress. */
  idleMs: number;
  /** Called with each new status (or status message), numbered from 1. */
  onStatus(change: number, message: string): void;
  /** Answers a request the task embeds while `input_required` (elicitation, sampling, roots); absent: none is answered. */
  answer?: (request: InputRequest, signal: AbortSignal) => Promise<InputResponse>;
  tool: string;
}

/** Polls `task` to its end: its result when it completed, an error when it failed, was cancelled or went silent. */
export async function awaitTask(client: Client, task: Task, wait: TaskWait): Promise<CallToolResult> {
  let current = task;
  let changes = 0;
  let seen = '';
  let lastChange = Date.now();
  // Input request keys are unique over a task's life: each is answered once, however often it is polled.
  const answered = new Set<string>();
  try {
    for (;;) {
      const said = `${current.status}: ${current.statusMessage ?? ''}`;
      if (said !== seen) {
        seen = said;
        lastChange = Date.now();
        wait.onStatus(++changes, current.statusMessage ?? current.status);
      }
      switch (current.status) {
        case 'completed':
          return (current.result ?? { content: [] }) as CallToolResult;
        case 'failed':
          throw new ProtocolError(current.error?.code ?? -32603, current.error?.message ?? `task ${current.taskId} failed`);
        case 'cancelled':
          return cancelledResult(wait.tool, current);
        case 'input_required':
          await answerInput(client, current, wait, answered);
          break;
        case 'working':
          break;
      }
      if (Date.now() - lastChange > wait.idleMs) {
        throw new FleetError('timeout', `tool "${wait.tool}" (task ${current.taskId}) reported nothing new within ${wait.idleMs / 1000}s`);
      }
      await pause(Math.min(Math.max(current.pollIntervalMs ?? DEFAULT_POLL_MS, MIN_POLL_MS), MAX_POLL_MS), wait.signal);
      current = await client.request({ method: 'tasks/get', params: { taskId: current.taskId } }, Task, {
        signal: wait.signal,
        timeout: wait.idleMs,
      });
    }
  } catch (err) {
    if (current.status === 'working' || current.status === 'input_required') await cancelTask(client, current.taskId);
    throw err;
  }
}

/** Answers the task's outstanding input requests not answered yet, and sends the answers with `tasks/update`. */
async function answerInput(client: Client, task: Task, wait: TaskWait, answered: Set<string>): Promise<void> {
  if (wait.answer === undefined) {
    throw new FleetError('protocol', `tool "${wait.tool}" (task ${task.taskId}) asks for input, and this connection answers none`);
  }
  const answer = wait.answer;
  const pending = Object.entries(task.inputRequests ?? {}).filter(([key]) => !answered.has(key));
  if (pending.length === 0) return;
  const signal = wait.signal ?? new AbortController().signal;
  const inputResponses = Object.fromEntries(
    await Promise.all(pending.map(async ([key, request]) => [key, await answer(request as InputRequest, signal)] as const)),
  );
  for (const [key] of pending) answered.add(key);
  await client.request({ method: 'tasks/update', params: { taskId: task.taskId, inputResponses } }, z.looseObject({}), {
    signal: wait.signal,
    timeout: wait.idleMs,
  });
}

function cancelledResult(tool: string, task: Task): CallToolResult {
  const why = task.statusMessage === undefined ? '' : `: ${task.statusMessage}`;
  return { content: [{ type: 'text', text: `tool "${tool}" (task ${task.taskId}) was cancelled by the server${why}` }], isError: true };
}

/** Asks the server to cancel; best effort (the call is over either way). */
async function cancelTask(client: Client, taskId: string): Promise<void> {
  await client.request({ method: 'tasks/cancel', params: { taskId } }, z.looseObject({}), { timeout: 5000 }).catch(() => undefined);
}
