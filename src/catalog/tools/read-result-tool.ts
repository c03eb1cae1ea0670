/**
 * The `read_result` meta tool: pages through a result that was too big to
 * show whole (`large_results: "spill"`). The note under such a result names
 * this tool with the arguments that continue it.
 */
import { z } from 'zod';
import { errorResult, type AgentTool, type AgentToolResult } from './agent-tool.js';
import { ResultSpillError, type ResultSpill } from './result-spill.js';

export const READ_RESULT_TOOL = 'read_result';
/** Bytes a page has when the call does not say. */
export const READ_RESULT_DEFAULT_LENGTH = 64 * 1024;
/** Most bytes of one page: a longer `length` is cut to it. */
export const READ_RESULT_MAX_LENGTH = 1024 * 1024;

const Arguments = z.object({
  id: z.string().min(1),
  offset: z.number().int().min(0).default(0),
  length: z.number().int().min(1).default(READ_RESULT_DEFAULT_LENGTH),
});

/** `{"id": "…", "offset": N, "length": M}`: the arguments that read a page, as a note shows them. */
export function readResultArguments(id: string, offset: number, length = READ_RESULT_DEFAULT_LENGTH): string {
  return `{"id": ${JSON.stringify(id)}, "offset": ${offset}, "length": ${length}}`;
}

const fail = (message: string): AgentToolResult => errorResult('', READ_RESULT_TOOL, message);

/** The `read_result` agent tool over `spill`; like every agent tool, `execute` never throws. */
export function createReadResultTool(spill: ResultSpill): AgentTool {
  return {
    name: READ_RESULT_TOOL,
    description:
      'Reads more of a tool result that was too large to show whole. Such a result ends with a note naming ' +
      'read_result and the exact arguments that continue it; call it with those, then with the offset each page ' +
      `gives, until the note says the end is reached. Offsets and lengths count UTF-8 bytes; at most ${READ_RESULT_MAX_LENGTH} per page.`,
    parameters: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The id from the note under the result.' },
        offset: { type: 'integer', minimum: 0, default: 0, description: 'Byte offset to read from.' },
        length: {
          type: 'integer',
          minimum: 1,
          maximum: READ_RESULT_MAX_LENGTH,
          default: READ_RESULT_DEFAULT_LENGTH,
          description: 'Bytes to read.',
        },
      },
      required: ['id'],
      additionalProperties: false,
    },
    server: '',
    originalName: READ_RESULT_TOOL,
    async execute(args, options = {}) {
      const parsed = Arguments.safeParse(args ?? {});
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        return fail(`read_result: invalid argument ${issue?.path.join('.') || '(arguments)'}: ${issue?.message ?? 'invalid'}`);
      }
      const { id, offset } = parsed.data;
      const length = Math.min(parsed.data.length, READ_RESULT_MAX_LENGTH);
      try {
        // Only the principal whose call spilled it may read it; to anyone else the id is unknown.
        const page = await spill.read(id, offset, length, options.principal?.id);
        const end = page.offset + page.length;
        const note = page.done
          ? `[read_result: bytes ${page.offset}–${end} of ${page.total}; that is the end of the result]`
          : `[read_result: bytes ${page.offset}–${end} of ${page.total}; to read on, call read_result with ${readResultArguments(id, end, length)}]`;
        return {
          content: [
            { type: 'text', text: page.text },
            { type: 'text', text: note },
          ],
          details: {
            is_error: false,
            structured: { id, offset: page.offset, length: page.length, total: page.total, done: page.done },
            server: '',
            tool: READ_RESULT_TOOL,
          },
        };
      } catch (error) {
        if (error instanceof ResultSpillError) {
          // The model can still get the result again: from the tool that gave it.
          const hint = error.kind === 'unknown_id' ? ' (call the tool that gave the result again)' : '';
          return fail(`read_result: ${error.message}${hint}`);
        }
        return fail(`read_result: could not read result "${id}": ${error instanceof Error ? error.message : String(error)}`);
      }
    },
  };
}
