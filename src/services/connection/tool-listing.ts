/**
 * A server's tools: every page of tools/list, the config's include/exclude
 * filter, and the validators of their output schemas (built lazily, and kept
 * in step with the whole listing rather than its last page).
 */
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import type { Client, JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator, Tool } from '@modelcontextprotocol/client';
import type { ToolFilter } from '../config/schema.js';
import { allPages } from '../catalog/paging.js';
import type { RequestBound } from './remote-transport.js';

/** Where a connect is, for the error it gives if it stops there. */
export interface HandshakeProgress {
  phase: 'initialize' | 'tools/list';
  listed: number;
}

/** Every page of the server's tools. */
export async function listAllTools(client: Client, bound: RequestBound, progress: HandshakeProgress): Promise<Tool[]> {
  progress.phase = 'tools/list';
  let pages = 0;
  const tools = await allPages(
    async (cursor, request) => {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, request);
      return [page.tools, page.nextCursor];
    },
    bound,
    (listed) => {
      progress.listed = listed;
      pages += 1;
    },
  );
  return tools;
}

/** Applies `include` (null = all) and then `exclude`, keeping the server's order. */
export function filterTools<T extends { name: string }>(tools: readonly T[], filter: ToolFilter): T[] {
  const include = filter.include === null ? null : new Set(filter.include);
  const exclude = new Set(filter.exclude);
  return tools.filter((tool) => (include === null || include.has(tool.name)) && !exclude.has(tool.name));
}

/**
 * The SDK's Ajv validator (output schemas of tools), built on first use, and
 * each schema compiled on its first use and kept while its listing lives (the
 * calls hand the SDK the listed tool, the same schema object every time). By
 * default every Client builds its own Ajv instance up front (~1–2 ms of
 * blocking work and tens of KiB per server, also for the many servers whose
 * tools declare no output schema); compiled eagerly, 5,000 output schemas
 * block for seconds on every re-sync. One Ajv per client still, since schema
 * `$id`s of different servers must not meet.
 */
export class LazyValidator implements jsonSchemaValidator {
  #ajv: AjvJsonSchemaValidator | undefined;
  readonly #compiled = new WeakMap<object, JsonSchemaValidator<unknown>>();

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const known = this.#compiled.get(schema);
    if (known !== undefined) return known as JsonSchemaValidator<T>;
    let compiled: JsonSchemaValidator<T> | undefined;
    const validator: JsonSchemaValidator<T> = (input) => {
      this.#ajv ??= new AjvJsonSchemaValidator();
      compiled ??= this.#ajv.getValidator<T>(schema);
      return compiled(input);
    };
    this.#compiled.set(schema, validator as JsonSchemaValidator<unknown>);
    return validator;
  }
}
