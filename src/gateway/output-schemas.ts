// Which output schemas the gateway lists. A client compiles every listed
// output schema when it lists tools (the SDKs do), and one it cannot compile
// fails its whole listing: a backend's schema is listed only once the gateway
// compiled it too. A tool whose schema does not compile is listed without it;
// so is one whose regular expressions are JavaScript's alone (Unicode property
// escapes, `(?<name>…)` groups): Python's `re`, which the Python SDK and
// FastMCP compile them with, refuses them, and with them every call's result.
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
    if (patternsOf(rest).some((pattern) => JS_ONLY_REGEX.test(pattern))) return false;
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

/** What in a regular expression JavaScript reads and Python's `re` does not: `\p{…}`/`\P{…}`, `\u{…}`, `(?<name>…)`, `\k<name>`. */
const JS_ONLY_REGEX = /\\[pP]\{|\\u\{|\(\?<(?![=!])|\\k</;

/** Every `pattern` and `patternProperties` key anywhere in a schema. */
function patternsOf(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) patternsOf(item, found);
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === 'pattern' && typeof value === 'string') found.push(value);
      else if (key === 'patternProperties' && value !== null && typeof value === 'object') found.push(...Object.keys(value));
      patternsOf(value, found);
    }
  }
  return found;
}
