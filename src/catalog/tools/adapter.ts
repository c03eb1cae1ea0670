import type { Tool } from '@modelcontextprotocol/client';
import { keepSentContent } from './sent-content.js';
import { errorResult } from './agent-tool.js';
import type { AgentContentBlock, AgentTool, AgentToolResult, ExecuteOptions } from './agent-tool.js';
import { DEFAULT_MAX_RESULT_BYTES } from '../../config/schema.js';
import { oneLine } from '../../errors.js';
import { jsonEqual } from '../json-equal.js';
import { toolUiRef } from '../../apps/tool-meta.js';
import { READ_RESULT_TOOL, readResultArguments } from './read-result-tool.js';
import type { KeepLimits, KeptResult, ResultSpill } from './result-spill.js';

/** Longest name providers accept for a function tool (OpenAI, Anthropic). */
export const MAX_TOOL_NAME_LENGTH = 64;
/**
 * Longest tool description kept, in UTF-8 bytes. It reaches the model on every
 * turn (and the journal on every registration): megabytes of it from one tool
 * would break the agent, while real descriptions stay well below this.
 */
export const MAX_DESCRIPTION_BYTES = 16 * 1024;
const SEPARATOR = '__';

/** Which server and (original) tool a result belongs to. */
export interface CallContext {
  server: string;
  tool: string;
}

/** How a result is converted. */
export interface ConvertOptions {
  /**
   * Bytes of content the agent sees (text as UTF-8, image/audio as their base64
   * data); `structuredContent` is kept only if its JSON fits too. Default: no
   * bound for `convertCallResult`, 1 MiB for `toAgentTool` (the host passes the
   * server's `max_result_bytes`).
   */
  maxResultBytes?: number;
}

/** How an agent tool treats its results. */
export interface AgentToolOptions extends ConvertOptions {
  /**
   * Where a result above `maxResultBytes` is kept whole, and for how long
   * (`large_results: "spill"`): the agent then sees its head and a note naming
   * `read_result`. Absent: such a result is truncated.
   */
  spill?: { store: Pick<ResultSpill, 'keep'>; limits: KeepLimits };
}

/** The call an agent tool delegates to: the original MCP tool name, its arguments, the caller's options. */
export type CallFunction = (
  original: string,
  args: Record<string, unknown>,
  options: ExecuteOptions,
) => Promise<unknown /* CallToolResult */>;

const VALID_PART = /^[A-Za-z0-9_-]+$/;

function sanitizePart(part: string): string {
  // Most names are valid already; testing is cheaper than rewriting (5,000 tools per registration).
  if (VALID_PART.test(part)) return part;
  // `u`: one `_` per code point, so an emoji costs one character, not two.
  const clean = part.replace(/[^A-Za-z0-9_-]/gu, '_');
  return clean === '' ? '_' : clean;
}

/**
 * `{server}__{tool}`, sanitized to `[A-Za-z0-9_-]` and capped at 64 characters
 * by shortening the server part first, so the tool suffix survives.
 *
 * Not injective, by construction: sanitizing merges `a.b` and `a_b`, the `__`
 * join merges (`a__b`, `c`) with (`a`, `b__c`) and (`a_`, `b`) with (`a`, `_b`),
 * and truncation merges long server names sharing a prefix. It is injective for
 * already-valid names whose server part has no `__`, does not end in `_`, and
 * whose joined length is at most 64. The registry keeps the map back to the
 * originals, and a collision is resolved last-wins, visibly (`shadowed`).
 */
export function namespaceToolName(server: string, tool: string): string {
  const s = sanitizePart(server);
  const t = sanitizePart(tool);
  const joined = s + SEPARATOR + t;
  if (joined.length <= MAX_TOOL_NAME_LENGTH) return joined;
  const serverBudget = MAX_TOOL_NAME_LENGTH - SEPARATOR.length - t.length;
  if (serverBudget >= 1) return s.slice(0, serverBudget) + SEPARATOR + t;
  // The tool part alone is too long: keep one server character so the name
  // still says where it came from, and cut the tool part.
  return s.slice(0, 1) + SEPARATOR + t.slice(0, MAX_TOOL_NAME_LENGTH - SEPARATOR.length - 1);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: string): AgentContentBlock {
  return { type: 'text', text: value };
}

/** JSON for anything: cycles become "[Circular]", bigints strings; never throws. */
function safeJson(value: unknown): string {
  const ancestors: unknown[] = [];
  try {
    const json = JSON.stringify(value, function replacer(this: unknown, _key: string, v: unknown) {
      if (typeof v === 'bigint') return v.toString();
      if (typeof v !== 'object' || v === null) return v;
      // Only ancestors count as cycles: a shared (non-cyclic) reference prints twice.
      while (ancestors.length > 0 && ancestors.at(-1) !== this) ancestors.pop();
      if (ancestors.includes(v)) return '[Circular]';
      ancestors.push(v);
      return v;
    }) as string | undefined;
    return json ?? String(value);
  } catch {
    try {
      return String(value);
    } catch {
      return '[unserializable value]';
    }
  }
}

/** One line saying what went wrong, whatever was thrown; never throws. */
function describeError(err: unknown): string {
  try {
    const message = err instanceof Error ? err.message : String(err);
    return oneLine(message) || 'the call failed without a message';
  } catch {
    return 'the call failed with an unreadable error';
  }
}

/** Decoded size of base64 text, without decoding it. */
function base64Bytes(b64: string): number {
  const s = b64.replace(/\s/g, '');
  const padding = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((s.length * 3) / 4) - padding);
}

function convertResource(resource: unknown): AgentContentBlock | undefined {
  if (!isRecord(resource)) return undefined;
  if (typeof resource.text === 'string') return text(resource.text);
  if (typeof resource.blob === 'string') {
    const uri = typeof resource.uri === 'string' ? resource.uri : '(no uri)';
    const mime = typeof resource.mimeType === 'string' ? `${resource.mimeType}, ` : '';
    return text(`[binary resource ${uri} (${mime}${base64Bytes(resource.blob)} bytes)]`);
  }
  return undefined;
}

function convertBlock(block: unknown): AgentContentBlock {
  if (typeof block === 'string') return text(block);
  if (!isRecord(block)) return text(safeJson(block));
  switch (block.type) {
    case 'text':
      if (typeof block.text === 'string') return text(block.text);
      break;
    case 'image':
    case 'audio':
      if (typeof block.data === 'string' && typeof block.mimeType === 'string') {
        return { type: block.type, data: block.data, mimeType: block.mimeType };
      }
      break;
    case 'resource': {
      const converted = convertResource(block.resource);
      if (converted) return converted;
      break;
    }
    case 'resource_link':
      if (typeof block.uri === 'string') {
        return text(typeof block.name === 'string' && block.name !== '' ? `${block.uri} (${block.name})` : block.uri);
      }
      break;
  }
  // Unknown or malformed: the model still sees what the server sent.
  return text(safeJson(block));
}

function convertBlocks(raw: unknown): AgentContentBlock[] {
  // A lone block or string instead of an array is read leniently as one block.
  const blocks: unknown[] = Array.isArray(raw) ? raw : [raw];
  const content: AgentContentBlock[] = [];
  for (const block of blocks) {
    if (block === undefined || block === null) continue;
    try {
      content.push(convertBlock(block));
    } catch {
      // A hostile block (throwing getter, proxy) costs only itself.
      content.push(text('[unreadable content block]'));
    }
  }
  return content;
}

function convert(result: unknown, ctx: CallContext): AgentToolResult {
  const details: AgentToolResult['details'] = { is_error: false, server: ctx.server, tool: ctx.tool };
  if (!isRecord(result)) {
    return { content: result === undefined ? [] : [text(safeJson(result))], details };
  }
  details.is_error = result.isError === true;
  let content: AgentContentBlock[] = [];
  if (result.content !== undefined) content = convertBlocks(result.content);
  else if ('toolResult' in result) content = [text(safeJson(result.toolResult))]; // protocol 2024-10-07
  const structured = result.structuredContent;
  if (structured !== undefined) {
    details.structured = structured;
    // Structured-only results would otherwise reach the model empty.
    if (content.length === 0) content.push(text(safeJson(structured)));
  }
  return { content, details };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The longest prefix of `value` whose UTF-8 fits in `bytes`, cut between
 * characters. A new string: V8 may keep `value.slice()` as a view that holds
 * all of `value` alive, and a truncation that keeps 20 MB would bound nothing.
 */
function utf8Prefix(value: string, bytes: number): string {
  if (bytes <= 0) return '';
  const buffer = new Uint8Array(bytes);
  return decoder.decode(buffer.subarray(0, encoder.encodeInto(value, buffer).written));
}

/** Bytes a block costs: its UTF-8 text, or its base64 data (and MIME type). */
function blockBytes(block: AgentContentBlock): number {
  if (block.type === 'text') return Buffer.byteLength(block.text, 'utf8');
  return block.data.length + Buffer.byteLength(block.mimeType, 'utf8');
}

/** "image image/png", or "3 blocks (image image/png, text)": what was left out. */
function describeOmitted(blocks: AgentContentBlock[]): string {
  const kinds = new Set(blocks.map((b) => (b.type === 'text' ? 'text' : `${b.type} ${b.mimeType.slice(0, 100)}`)));
  const listed = [...kinds].slice(0, 5).join(', ') + (kinds.size > 5 ? ', …' : '');
  return blocks.length === 1 ? listed : `${blocks.length} blocks (${listed})`;
}

/**
 * Bounds what the agent sees to `max` bytes, notes included, in order: blocks
 * that fit are kept whole; the first text that does not fit is cut with a note
 * saying so; blocks that do not fit at all (image and audio data is never cut)
 * are replaced by one note. `structuredContent` is kept only if its JSON fits
 * in `max` as well. `reserved` bytes are left for a note the caller adds.
 */
function boundResult(result: AgentToolResult, max: number, reserved = 0): AgentToolResult {
  let room = max - reserved;
  // Most results fit whole: nothing to copy or cut.
  if (fitsWhole(result, max, room)) return result;
  // What the notes take is known once they are written: the blocks get less room until all fits.
  for (;;) {
    const bounded = fitResult(result, max, room);
    const over = bounded === result ? 0 : contentBytes(bounded.content) + reserved - max;
    if (over <= 0 || room <= 0) return bounded;
    room -= over;
  }
}

/** Whether {@link fitResult} would keep `result` as it is: its blocks fit in `room`, its structured content in `max`. */
function fitsWhole(result: AgentToolResult, max: number, room: number): boolean {
  const { structured } = result.details;
  return contentBytes(result.content) <= room && (structured === undefined || Buffer.byteLength(safeJson(structured), 'utf8') <= max);
}

const addBlockBytes = (bytes: number, block: AgentContentBlock): number => bytes + blockBytes(block);

function contentBytes(content: readonly AgentContentBlock[]): number {
  return content.reduce(addBlockBytes, 0);
}

/** {@link boundResult}'s one pass: the blocks fitted into `room`, with the notes (which name `max`) after them. */
function fitResult(result: AgentToolResult, max: number, room: number): AgentToolResult {
  let left = room;
  let cut = false;
  const content: AgentContentBlock[] = [];
  const omitted: AgentContentBlock[] = [];
  let omittedBytes = 0;
  for (const block of result.content) {
    const size = blockBytes(block);
    if (size <= left) {
      content.push(block);
      left -= size;
    } else if (block.type === 'text' && left > 0) {
      const shown = utf8Prefix(block.text, left);
      const shownBytes = Buffer.byteLength(shown, 'utf8');
      content.push(text(`${shown}\n[truncated: ${shownBytes} of ${size} bytes shown — max_result_bytes]`));
      left = 0;
      cut = true;
    } else {
      cut = true;
      omitted.push(block);
      omittedBytes += size;
    }
  }
  if (omitted.length > 0) {
    const what = describeOmitted(omitted);
    content.push(text(`[omitted: ${what}, ${omittedBytes} bytes — above max_result_bytes (${max})]`));
  }
  const details = { ...result.details };
  if (details.structured !== undefined) {
    const size = Buffer.byteLength(safeJson(details.structured), 'utf8');
    if (size > max) {
      delete details.structured;
      cut = true;
      content.push(text(`[omitted: structured content, ${size} bytes of JSON — above max_result_bytes (${max})]`));
    }
  }
  return cut ? { content, details: { ...details, truncated: true } } : result;
}

/** Whether `text` is JSON equal to `value` (a server that mirrors its `structuredContent` in a text block). */
function carriesJson(text: string, value: unknown): boolean {
  if (!/^\s*[[{]/.test(text)) return false;
  try {
    return jsonEqual(JSON.parse(text), value);
  } catch {
    return false;
  }
}

/**
 * The whole result as one text, as it is kept for `read_result`: text blocks
 * as they are (embedded resources are text blocks by now), image and audio as
 * a one-line note, `structuredContent` as JSON unless a text block carries it
 * already; the parts joined by newlines.
 */
function renderWhole(result: AgentToolResult): string {
  const parts = result.content.map((block) =>
    block.type === 'text' ? block.text : `[${block.type} ${block.mimeType.slice(0, 100)}, ${base64Bytes(block.data)} bytes]`,
  );
  const { structured } = result.details;
  if (structured !== undefined && !result.content.some((block) => block.type === 'text' && carriesJson(block.text, structured))) {
    parts.push(safeJson(structured));
  }
  return parts.join('\n');
}

/** The note under the head of a spilled result: how to read on. */
function spilledNote(id: string, shown: number, total: number): string {
  return `[result cut at ${shown} of ${total} bytes; the whole result is kept: call ${READ_RESULT_TOOL} with ${readResultArguments(id, shown)} to read on]`;
}

/**
 * A result above `max` kept whole in the spill: the agent sees its head and
 * one note, together within `max`. A result whose text fits (only image or
 * audio data was cut: nothing more to read) is bounded as when truncating,
 * and so is one the spill refuses (too large, a disk error), with a note why.
 */
async function spillResult(
  result: AgentToolResult,
  max: number,
  spill: NonNullable<AgentToolOptions['spill']>,
  ctx: CallContext,
  principal: string | undefined,
): Promise<AgentToolResult> {
  const bounded = boundResult(result, max);
  if (bounded === result) return result;
  const whole = renderWhole(result);
  if (Buffer.byteLength(whole, 'utf8') <= max) return bounded;
  let kept: KeptResult;
  try {
    // Kept for whose call it was: `read_result` gives it to them alone.
    kept = await spill.store.keep(ctx.server, whole, spill.limits, principal);
  } catch (err) {
    const note = text(`[the whole result could not be kept (${describeError(err)}); it was truncated]`);
    const cut = boundResult(result, max, blockBytes(note));
    return { content: [...cut.content, note], details: cut.details };
  }
  // The numbers in the note are at most as long as with `max`: the head leaves it room.
  const head = utf8Prefix(whole, max - Buffer.byteLength(spilledNote(kept.id, max, kept.bytes), 'utf8'));
  const shown = Buffer.byteLength(head, 'utf8');
  return {
    content: [text(head), text(spilledNote(kept.id, shown, kept.bytes))],
    details: { ...bounded.details, spilled: { id: kept.id, total_bytes: kept.bytes } },
  };
}

/** MCP `CallToolResult` (or anything) → `AgentToolResult` (docs/contract.md, Tools), bounded to `maxResultBytes` when given; never throws. */
export function convertCallResult(result: unknown, ctx: CallContext, options: ConvertOptions = {}): AgentToolResult {
  // Plain JavaScript may pass null or garbage for either: it never throws, whatever it is given.
  let context: CallContext = { server: '', tool: '' };
  try {
    if (isRecord(ctx)) context = { server: String(ctx.server ?? ''), tool: String(ctx.tool ?? '') };
  } catch {
    // A context that cannot be read names nothing.
  }
  try {
    const converted = convert(result, context);
    const maxResultBytes = (options as ConvertOptions | null)?.maxResultBytes;
    return maxResultBytes === undefined ? converted : boundResult(converted, maxResultBytes);
  } catch (err) {
    return errorResult(context.server, context.tool, `unreadable result from ${context.server}/${context.tool}: ${describeError(err)}`);
  }
}

function isJsonContainer(value: string): boolean {
  const t = value.trim();
  if (!t.startsWith('{') && !t.startsWith('[')) return false;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}

/** One string for hosts that want one: texts joined by newlines, several JSON texts as one JSON array. */
export function resultToText(result: AgentToolResult): string {
  const texts = result.content.flatMap((b) => (b.type === 'text' ? [b.text.trim()] : []));
  // Concatenated JSON documents are not JSON; an array of them is. Joining the
  // original texts (not re-serializing) keeps big numbers and key order exact.
  const mergeJson = texts.length > 1 && texts.every(isJsonContainer);
  const parts: string[] = [];
  let merged = false;
  for (const block of result.content) {
    if (block.type !== 'text') parts.push(`[${block.type} ${block.mimeType}]`);
    else if (!mergeJson) parts.push(block.text);
    else if (!merged) {
      parts.push(`[${texts.join(',')}]`);
      merged = true;
    }
  }
  return parts.join('\n');
}

function boundDescription(description: string): string {
  const size = Buffer.byteLength(description, 'utf8');
  if (size <= MAX_DESCRIPTION_BYTES) return description;
  const shown = utf8Prefix(description, MAX_DESCRIPTION_BYTES);
  return `${shown}\n[description truncated: ${Buffer.byteLength(shown, 'utf8')} of ${size} bytes shown]`;
}

function cancelledResult({ server, tool }: CallContext): AgentToolResult {
  return errorResult(server, tool, `the call to ${server}/${tool} was cancelled`);
}

/** What a call that threw answers: that it was cancelled, or its failure. */
function failedCallResult(err: unknown, signal: AbortSignal | undefined, ctx: CallContext, max: number): AgentToolResult {
  // The SDK reports abort and timeout alike (-32001): only the signal tells them apart.
  if (signal?.aborted) return cancelledResult(ctx);
  // A server's error message can be as large as a result.
  return boundResult(errorResult(ctx.server, ctx.tool, describeError(err)), max);
}

/**
 * Wraps one MCP tool of `server` as an agent tool named `{server}__{tool}`.
 * `execute` never throws: failures become `is_error` results the model reads.
 * Results, and error texts, are bounded by `options.maxResultBytes`; with
 * `options.spill` a result above it is kept whole instead of cut.
 */
export function toAgentTool(server: string, tool: Tool, call: CallFunction, options: AgentToolOptions = {}): AgentTool {
  const original = tool.name;
  const ctx: CallContext = { server, tool: original };
  const max = options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;

  // `execute` is a method, not a function declaration or arrow: under tsx, esbuild's
  // keepNames gives every named function created here a defineProperty of its name,
  // ~30 ms per 5,000 tools (a method keeps its name without one).
  const agentTool: AgentTool = {
    name: namespaceToolName(server, original),
    description: boundDescription(tool.description ?? tool.title ?? ''),
    parameters: tool.inputSchema,
    server,
    originalName: original,
    async execute(args: Record<string, unknown>, callOptions: ExecuteOptions = {}): Promise<AgentToolResult> {
      if (callOptions.signal?.aborted) return cancelledResult(ctx);
      try {
        const raw = await call(original, args ?? {}, callOptions);
        const result =
          options.spill === undefined
            ? convertCallResult(raw, ctx, { maxResultBytes: max })
            : await spillResult(convertCallResult(raw, ctx), max, options.spill, ctx, callOptions.principal?.id);
        return keepSentContent(result, (raw as { content?: unknown } | null)?.content);
      } catch (err) {
        return failedCallResult(err, callOptions.signal, ctx, max);
      }
    },
  };
  if (tool.annotations !== undefined) agentTool.annotations = tool.annotations;
  if (tool.title !== undefined) agentTool.title = tool.title;
  if (tool.outputSchema !== undefined) agentTool.outputSchema = tool.outputSchema;
  const ui = toolUiRef(tool);
  if (ui !== undefined) agentTool.ui = { resourceUri: ui.resource_uri, visibility: ui.visibility };
  return agentTool;
}
