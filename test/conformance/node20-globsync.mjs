// `node --import ./test/conformance/node20-globsync.mjs`: lets the conformance
// suite (@modelcontextprotocol/conformance) load on Node 20. Its bundle imports
// `globSync` from 'fs', which only Node 22+ has, so linking fails before any
// scenario runs. This hook hands the suite an 'fs' that adds a stub globSync.
// The suite only globs in its `tier-check` command (reading saved results),
// never in the client scenarios or `list` we run, so the stub refuses loudly
// if reached. Both installed releases need it, and both live under their own
// folder: 0.2.x as @modelcontextprotocol/conformance, 0.1.16 under the npm
// alias conformance-0.1 (so its bundle's URL never names the scoped package).
// Nothing else in either bundle needs more than Node 20 on those paths.
import fs from 'node:fs';
import { register } from 'node:module';

const shim = `
import fs from 'node:fs';
export * from 'node:fs';
export default fs;
export function globSync() {
  throw new Error('fs.globSync needs Node 22+; mcp-fleet only stubs it for the client scenarios');
}`;

const hooks = `
const suites = ['/node_modules/@modelcontextprotocol/conformance/', '/node_modules/conformance-0.1/'];
const shimUrl = ${JSON.stringify(`data:text/javascript,${encodeURIComponent(shim)}`)};
export async function resolve(specifier, context, next) {
  const parent = context.parentURL;
  if ((specifier === 'fs' || specifier === 'node:fs') && parent !== undefined && suites.some((suite) => parent.includes(suite))) {
    return { url: shimUrl, shortCircuit: true };
  }
  return next(specifier, context);
}`;

if (typeof fs.globSync !== 'function') register(`data:text/javascript,${encodeURIComponent(hooks)}`);
