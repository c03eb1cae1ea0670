import { ConfigError } from '../errors.js';
import { SERVER_NAME_PATTERN, SERVER_NAME_RULE } from './schema.js';
import type { ServerConfigInput } from './schema.js';
import { parseJsonText, quoteName, validServerConfig } from './validate.js';

/** A server the import could not take, and why (never with a secret). */
export interface SkippedServer {
  name: string;
  reason: string;
}

/** The result of converting an `mcpServers` file. */
export interface ImportResult {
  /** Converted servers in file order, each valid against the schema. */
  servers: Array<[string, ServerConfigInput]>;
  /** Entries that could not be converted. */
  skipped: SkippedServer[];
  /** Things imported but worth a look (ignored fields, unexpanded placeholders), one line each. */
  warnings: string[];
}

/** Fields of the foreign formats that mcp-fleet has no use for; dropped with a warning. */
const KNOWN_FIELDS = new Set(['command', 'args', 'env', 'cwd', 'url', 'headers', 'type', 'disabled']);
const LOCAL_ONLY: ReadonlySet<string> = new Set(['args', 'env', 'cwd']);
const REMOTE_ONLY: ReadonlySet<string> = new Set(['headers']);

/**
 * Converts the `mcpServers` format of Claude Desktop and Cursor, and VS Code's
 * `servers` (top level in `.vscode/mcp.json`, or under `mcp` in settings),
 * into mcp-fleet entries. Comments and trailing commas (VS Code's JSONC) are
 * accepted. `command` + `args` → local argv; `url` → remote with transport
 * from `type` (`http` / `streamable-http` → `streamable_http`, `sse` → `sse`,
 * none → `auto`); `disabled: true` → `enabled: false`. Entries already in
 * mcp-fleet's own shape (`type: local|remote`) are taken as they are. A name
 * outside `^[A-Za-z0-9_-]{1,64}$` is skipped with the reason, not renamed.
 * Throws ConfigError when the text is not JSON or holds no server map.
 */
export function importServers(text: string): ImportResult {
  const { value } = parseJsonText(stripJsonComments(text));
  const map = serverMap(value);
  const result: ImportResult = { servers: [], skipped: [], warnings: [] };
  const others = serverMaps(value).filter((candidate) => candidate.map !== map);
  for (const other of others) result.warnings.push(`${other.where} ignored: only the first server map of the file is read`);
  // VS Code's prompted values: nothing here asks for them, so the ${input:...} that use them stay literal (warned per field).
  for (const where of inputsOf(value)) result.warnings.push(`${where} ignored: mcp-fleet does not prompt for VS Code inputs`);
  for (const [name, entry] of Object.entries(map)) {
    if (!SERVER_NAME_PATTERN.test(name)) {
      result.skipped.push({ name, reason: `name ${SERVER_NAME_RULE}` });
      continue;
    }
    try {
      const { config, warnings } = convertEntry(entry);
      validServerConfig(config);
      result.servers.push([name, config]);
      result.warnings.push(...warnings.map((w) => `server ${quoteName(name)}: ${w}`));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      result.skipped.push({ name, reason: err.message });
    }
  }
  return result;
}

/** The server maps a file may hold, in the order they are read: Claude Desktop's and Cursor's, VS Code's, its settings.json's. */
function serverMaps(doc: unknown): Array<{ where: string; map: Record<string, unknown> }> {
  if (!isObject(doc)) return [];
  const found: Array<{ where: string; map: Record<string, unknown> }> = [];
  if (isObject(doc.mcpServers)) found.push({ where: '"mcpServers"', map: doc.mcpServers });
  if (isObject(doc.servers)) found.push({ where: '"servers"', map: doc.servers });
  if (isObject(doc.mcp) && isObject(doc.mcp.servers)) found.push({ where: '"mcp.servers"', map: doc.mcp.servers });
  return found;
}

/** Where the file holds VS Code's top-level `inputs` (in `.vscode/mcp.json`, or under `mcp` in settings). */
function inputsOf(doc: unknown): string[] {
  if (!isObject(doc)) return [];
  return [...(doc.inputs !== undefined ? ['"inputs"'] : []), ...(isObject(doc.mcp) && doc.mcp.inputs !== undefined ? ['"mcp.inputs"'] : [])];
}

function serverMap(doc: unknown): Record<string, unknown> {
  const first = serverMaps(doc)[0];
  if (first === undefined) throw new ConfigError('no "mcpServers" or "servers" object found at the top level');
  return first.map;
}

function convertEntry(entry: unknown): { config: ServerConfigInput; warnings: string[] } {
  if (!isObject(entry)) throw new ConfigError('entry is not an object');
  if (entry.type === 'local' || entry.type === 'remote') {
    // Already mcp-fleet's own shape (e.g. copied from another state dir).
    return { config: entry as ServerConfigInput, warnings: [] };
  }
  const warnings: string[] = [];
  // A "disabled": "true" that enabled the server would be the worst reading of it.
  if (entry.disabled !== undefined && typeof entry.disabled !== 'boolean') throw new ConfigError('"disabled" must be true or false');
  const enabled = entry.disabled === true ? { enabled: false } : {};
  const hasCommand = entry.command !== undefined;
  const hasUrl = entry.url !== undefined;
  if (hasCommand && hasUrl) throw new ConfigError('has both "command" and "url"');
  // Fields of the other kind of server (headers beside a command; env, args, cwd beside a url) go too, said as such.
  const unused = hasCommand ? REMOTE_ONLY : LOCAL_ONLY;
  const ignored = Object.keys(entry).filter((k) => !KNOWN_FIELDS.has(k) || unused.has(k));
  if (ignored.length > 0) warnings.push(`ignored fields: ${ignored.join(', ')}`);

  if (hasCommand) {
    if (entry.type !== undefined && entry.type !== 'stdio') {
      throw new ConfigError(`"command" with a type other than "stdio"`);
    }
    const command = typeof entry.command === 'string' ? [entry.command] : entry.command;
    const args = entry.args ?? [];
    if (!isStringArray(command)) throw new ConfigError('command: expected a string');
    if (!isStringArray(args)) throw new ConfigError('args: expected an array of strings');
    if (entry.cwd !== undefined && typeof entry.cwd !== 'string') throw new ConfigError('cwd: expected a string');
    // ${workspaceFolder}, ${input:...} in the command line or cwd are as literal as in env: warned the same.
    if (typeof entry.command === 'string') placeholder('command', entry.command, warnings);
    else command.forEach((v, i) => placeholder(`command[${i}]`, v, warnings));
    args.forEach((v, i) => placeholder(`args[${i}]`, v, warnings));
    if (typeof entry.cwd === 'string') placeholder('cwd', entry.cwd, warnings);
    const env = stringMap('env', entry.env, warnings);
    return {
      config: {
        type: 'local',
        command: [...command, ...args],
        env,
        ...(typeof entry.cwd === 'string' && entry.cwd !== '' ? { cwd: entry.cwd } : {}),
        ...enabled,
      },
      warnings,
    };
  }

  if (hasUrl) {
    if (typeof entry.url !== 'string') throw new ConfigError('url: expected a string');
    placeholder('url', entry.url, warnings);
    const transport = transportOf(entry.type);
    const headers = stringMap('headers', entry.headers, warnings);
    return { config: { type: 'remote', url: entry.url, transport, headers, ...enabled }, warnings };
  }
  throw new ConfigError('has neither "command" nor "url"');
}

function transportOf(type: unknown): 'streamable_http' | 'sse' | 'auto' {
  switch (type) {
    case undefined:
      return 'auto';
    case 'http':
    case 'streamable-http':
    case 'streamableHttp':
      return 'streamable_http';
    case 'sse':
      return 'sse';
    case 'stdio':
      throw new ConfigError('"url" with type "stdio"');
    default:
      throw new ConfigError('type: expected one of stdio, http, streamable-http, sse');
  }
}

/** Checks a map of secrets; messages name keys only, never values. */
function stringMap(field: string, value: unknown, warnings: string[]): Record<string, string> {
  if (value === undefined) return {};
  if (!isObject(value)) throw new ConfigError(`${field}: expected an object of strings`);
  const out = new Map<string, string>();
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw new ConfigError(`${field}.${key}: expected a string`);
    placeholder(`${field}.${key}`, v, warnings);
    out.set(key, v);
  }
  return Object.fromEntries(out);
}

/** ${input:...}, ${env:...}, ${workspaceFolder} are expanded by the editor that wrote the file, not by us: said per field, never with its value. */
function placeholder(field: string, value: string, warnings: string[]): void {
  if (value.includes('${')) warnings.push(`${field} contains a \${...} placeholder, imported literally`);
}

/**
 * Blanks out `//` and `/* *\/` comments and trailing commas outside strings,
 * keeping every other character in place so error positions stay true.
 */
export function stripJsonComments(text: string): string {
  const out = text.split('');
  let i = 0;
  let lastSignificant = -1; // index of the last non-space character kept
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      i++;
      while (i < text.length && text[i] !== '"' && text[i] !== '\n') i += text[i] === '\\' ? 2 : 1;
      i++;
      lastSignificant = Math.min(i, text.length) - 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') out[i++] = ' ';
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      for (; i < stop; i++) if (out[i] !== '\n') out[i] = ' ';
    } else {
      if ((c === '}' || c === ']') && lastSignificant >= 0 && out[lastSignificant] === ',') out[lastSignificant] = ' ';
      if (c !== undefined && !' \t\r\n'.includes(c)) lastSignificant = i;
      i++;
    }
  }
  return out.join('');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}
