import { z } from 'zod';
import type { PendingApproval } from '../../approvals/index.js';
import type { PrincipalInput } from '../../users/index.js';

/** A content block the model sees: text, or binary data (image or audio). */
export const AgentContentBlock = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text'), text: z.string() }),
  z.object({ type: z.literal('image'), data: z.string(), mimeType: z.string() }),
  z.object({ type: z.literal('audio'), data: z.string(), mimeType: z.string() }),
]);
export type AgentContentBlock = z.infer<typeof AgentContentBlock>;

/** What an agent tool returns: content for the model, details for the host. */
export const AgentToolResult = z.object({
  content: z.array(AgentContentBlock),
  details: z.object({
    is_error: z.boolean(),
    structured: z.unknown().optional(),
    server: z.string(),
    tool: z.string(),
    /** Set when content was cut to the server's `max_result_bytes`; the content says what. */
    truncated: z.boolean().optional(),
    /** Set when the whole result was kept for `read_result` (`large_results: "spill"`): its id, and its size in UTF-8 bytes. */
    spilled: z.object({ id: z.string(), total_bytes: z.number() }).optional(),
    /** Set when the caller's quota refused the call (it was not made): which limit, and the seconds to wait. */
    quota: z.object({ limit: z.enum(['calls_per_minute', 'max_concurrent_calls']), retry_after_seconds: z.number() }).optional(),
  }),
});
export type AgentToolResult = z.infer<typeof AgentToolResult>;

/** A progress report from a running call (MCP `notifications/progress`). */
export interface ToolProgress {
  progress: number;
  total?: number;
  message?: string;
}

export interface ExecuteOptions {
  /** Aborting cancels the call; the server gets `notifications/cancelled`. */
  signal?: AbortSignal;
  /**
   * Who calls (`{id, groups}`): a tool they may not see is an unknown tool,
   * and the call is journaled as theirs. Absent: the admin (or the embedder).
   */
  principal?: PrincipalInput;
  /** Called for each progress notification; each one resets the call timeout. */
  onProgress?: (progress: ToolProgress) => void;
  /**
   * Called once when the call waits for a person's approval (an `ask` tool
   * with no `approve` callback), with the wait as `GET /api/mcp/approvals`
   * shows it: its `id` is what approving or denying takes.
   */
  onApproval?: (pending: PendingApproval) => void;
}

/** A tool as the agent loop sees it, named `{server}__{tool}`. */
export interface AgentTool {
  name: string;
  description: string;
  /** The server's JSON Schema for the arguments, verbatim. */
  parameters: Record<string, unknown>;
  /** MCP tool annotations (readOnlyHint, idempotentHint, …), verbatim. */
  annotations?: Record<string, unknown>;
  /** The server's display title of the tool, when it gave one. */
  title?: string;
  /** The server's JSON Schema of the tool's structured result, verbatim, when it declared one. */
  outputSchema?: Record<string, unknown>;
  /** The server the tool belongs to, and its name there. */
  server: string;
  originalName: string;
  /** Loaded on every request even when loading is deferred (`tools.always_load`). */
  alwaysLoad?: boolean;
  /**
   * Its MCP Apps metadata (`_meta.ui`): the UI resource it renders in (null:
   * none) and who may call it. Absent for a tool without either. A tool whose
   * visibility leaves out `"model"` is app-only: never offered to a model.
   */
  ui?: { resourceUri: string | null; visibility: Array<'model' | 'app'> };
  execute(args: Record<string, unknown>, options?: ExecuteOptions): Promise<AgentToolResult>;
}

/** An `is_error` result the model can read, for failures outside the server. */
export function errorResult(server: string, tool: string, message: string): AgentToolResult {
  return { content: [{ type: 'text', text: message }], details: { is_error: true, server, tool } };
}
