// Which output schemas the gateway lists. A client compiles every listed
// output schema when it lists tools (the SDKs do), and one it cannot compile
// fails its whole listing: a backend's schema is listed only once the gateway
// compiled it too. A tool whose schema does not compile is listed without it.
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import type { JsonSchemaType } from '@modelcontextprotocol/client';
import type { AgentTool } from '../catalog/index.js';

/** Schemas compiled by one Ajv before a fresh one takes over: what Ajv keeps of each stays bounded. */
const COMPILES_PER_AJV = 200;

/** A gateway's check of output schemas: the schema to list for a tool, or undefined. Each schema object is compiled once. */
export function createOutputSchemas(): (tool: AgentTool) => Record<string, unknown> | undefined {
  const verdicts = new WeakMap<object, boolean>();
  let ajv: AjvJsonSchemaValidator | undefined;
  let compiled = 0;

  function compiles(schema: Record<string, unknown>): boolean {
    if (ajv === undefined || compiled >= COMPILES_PER_AJV) {
      ajv = new AjvJsonSchemaValidator();
      compiled = 0;
    }
    compiled += 1;
    // Without its `$id`: two servers' schemas of the same id must not meet in one Ajv.
    const { $id: _id, ...rest } = schema;
    try {
      ajv.getValidator({ ...rest, type: 'object' } as JsonSchemaType);
      return true;
    } catch {
      return false;
    }
  }

  return (tool) => {
    const schema = tool.outputSchema;
    if (schema === undefined) return undefined;
    let verdict = verdicts.get(schema);
    if (verdict === undefined) verdicts.set(schema, (verdict = compiles(schema)));
    return verdict ? { ...schema, type: 'object' } : undefined;
  };
}
