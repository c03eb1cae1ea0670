import { ConfigError } from '../errors.js';
import { compactCopy } from './compact-copy.js';
import { describeZodError } from './zod-errors.js';
import { CONFIG_PARSE, ConfigFile, SERVER_NAME_PATTERN, SERVER_NAME_RULE, ServerConfig } from './schema.js';
import { own } from '../records.js';

/** Options of {@link parseServerConfig}. */
export interface ParseServerConfigOptions {
  /** Prepended to error fields, e.g. `servers.files` when parsing a file entry. */
  fieldPrefix?: string;
}

/** Validates a server name and its config; throws ConfigError naming the field. */
export function parseServerConfig(name: string, raw: unknown, options: ParseServerConfigOptions = {}): ServerConfig {
  if (!SERVER_NAME_PATTERN.test(name)) {
    throw new ConfigError(`name: ${SERVER_NAME_RULE}`, 'name');
  }
  return validServerConfig(raw, options.fieldPrefix);
}

/** Validates a server config (no name); throws ConfigError naming the field, after `fieldPrefix` if given. */
export function validServerConfig(raw: unknown, fieldPrefix?: string): ServerConfig {
  const result = ServerConfig.safeParse(raw, CONFIG_PARSE);
  if (!result.success) {
    const { message, field } = describeZodError(result.error, fieldPrefix);
    throw new ConfigError(message, field);
  }
  // Kept for the server's life (frozen, shared by its actor, events and views).
  return compactCopy(result.data);
}

/** One entry of the file's `servers` object, valid or not, in file order. */
export interface ServerEntry {
  name: string;
  /** The entry exactly as read, kept so a write can preserve what it could not parse. */
  raw: unknown;
  /** The validated config, or `null` when the name or the config is invalid. */
  config: ServerConfig | null;
  /** Why the entry is invalid (naming the field), or `null` when it is valid. */
  problem: string | null;
  /** The dotted path of the entry's first problem (`servers.<name>.<field>`), or `null` when it is valid. */
  field: string | null;
}

/** A validated `mcp_servers.json` document. */
export interface ServersDocument {
  /** Valid servers, in file order. */
  servers: Array<[string, ServerConfig]>;
  /** Every entry, valid or not, in file order. */
  entries: ServerEntry[];
  /** One line per skipped entry, naming the server and the field. */
  warnings: string[];
}

/**
 * Validates a parsed `mcp_servers.json`. An invalid entry is skipped with a
 * warning; a document that is not `{servers: {...}}` (or has any other
 * top-level field) throws ConfigError, since nothing in it can be trusted.
 * `order` is the entry order as written (see {@link parseJsonText}); by default
 * the object's own key order, which puts integer-like names first.
 */
export function parseServersDocument(raw: unknown, order?: readonly string[]): ServersDocument {
  const file = ConfigFile.safeParse(raw, CONFIG_PARSE);
  if (!file.success) {
    const { message, field } = describeZodError(file.error);
    throw new ConfigError(`not a {"servers": {...}} document: ${message}`, field);
  }
  // The entries as written: zod's copy of a record drops a `__proto__` key (JSON.parse keeps it as its own),
  // and such an entry must be warned about and kept verbatim like any other invalid one.
  const written = (raw as { servers?: unknown }).servers;
  const servers = written !== undefined ? (written as Record<string, unknown>) : file.data.servers;
  const names = order ? order.filter((n) => Object.hasOwn(servers, n)) : Object.keys(servers);
  const doc: ServersDocument = { servers: [], entries: [], warnings: [] };
  for (const name of names) addEntry(doc, name, own(servers, name));
  return doc;
}

/** Validates the entry `name` of the file into `doc`: a valid server, or an invalid entry and its warning. */
function addEntry(doc: ServersDocument, name: string, raw: unknown): void {
  let config: ServerConfig;
  try {
    config = parseServerConfig(name, raw, { fieldPrefix: `servers.${name}` });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    addInvalidEntry(doc, name, raw, err);
    return;
  }
  doc.servers.push([name, config]);
  doc.entries.push({ name, raw, config, problem: null, field: null });
}

function addInvalidEntry(doc: ServersDocument, name: string, raw: unknown, err: ConfigError): void {
  doc.entries.push({ name, raw, config: null, problem: err.message, field: entryField(name, err) });
  doc.warnings.push(`skipping server ${quoteName(name)}: ${err.message}`);
}

/**
 * The dotted path in the file of what makes entry `name` invalid: the field
 * of `err` (with or without the `servers.<name>` prefix), or the entry itself
 * when the problem is its name or the whole value.
 */
export function entryField(name: string, err: ConfigError): string {
  const entry = `servers.${name}`;
  const field = err.field;
  if (field === undefined || field === '' || field === 'name' || field === entry) return entry;
  return field.startsWith(`${entry}.`) ? field : `${entry}.${field}`;
}

/** A server name fit for a one-line message: quoted, escaped, and cut when absurdly long. */
export function quoteName(name: string): string {
  return JSON.stringify(name.length > 80 ? `${name.slice(0, 77)}...` : name);
}

/** Parsed JSON text plus the order in which the `servers` keys were written. */
export interface ParsedJsonText {
  value: unknown;
  /** Keys of the top-level `servers` object as written (JS objects put integer-like keys first). */
  serverOrder: string[] | undefined;
  /** Names written more than once in the top-level `servers` object: `JSON.parse` keeps only the last entry of each. */
  repeatedServers: string[];
}

/**
 * `JSON.parse` with an error that is safe to log: V8's messages may quote the
 * text around the problem (a secret, say), so the error only ever says
 * `line L column C: expected X`, found by our own scan. A leading BOM is ignored.
 */
export function parseJsonText(text: string): ParsedJsonText {
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  let value: unknown;
  try {
    value = JSON.parse(source);
  } catch {
    throw new ConfigError(`invalid JSON: ${locateJsonError(source)}`);
  }
  const scanner = new JsonScanner(source);
  let serverOrder: string[] | undefined;
  try {
    serverOrder = scanner.run();
  } catch {
    // The scan only recovers key order; JSON.parse already accepted the text.
    serverOrder = undefined;
  }
  return { value, serverOrder, repeatedServers: scanner.repeated };
}

/** The warning for a server name written twice: the earlier entry never took effect, and a write keeps only the last. */
export function repeatedServerWarning(name: string): string {
  return `server ${quoteName(name)} is written more than once; the last entry is used, and the next write keeps only it`;
}

function locateJsonError(source: string): string {
  try {
    new JsonScanner(source).run();
  } catch (err) {
    if (err instanceof JsonSyntaxError) {
      const before = source.slice(0, err.offset).split('\n');
      const column = (before.at(-1)?.length ?? 0) + 1;
      return `line ${before.length} column ${column}: ${err.expected}`;
    }
  }
  return 'not valid JSON';
}

class JsonSyntaxError extends Error {
  constructor(
    readonly offset: number,
    readonly expected: string,
  ) {
    super(expected);
  }
}

/** One member of the top-level `servers` object as written: offsets into {@link ServersLayout.text}. */
export interface ServersMember {
  name: string;
  /** Where the member's quoted name starts. */
  keyStart: number;
  /** Where its value starts and ends (the text between `keyStart` and `valueStart` is its name, colon and spacing). */
  valueStart: number;
  valueEnd: number;
}

/**
 * Where the top-level `servers` object and each of its members sit in a
 * file's text, so a write can replace only what changed and leave the rest of
 * the text (its opening, spacing, indentation, the text between entries, a
 * trailing newline or none) as it was.
 */
export interface ServersLayout {
  /** A leading BOM, kept apart from `text` (the offsets are into `text`). */
  bom: string;
  text: string;
  /** Offsets of the `servers` object's `{` and `}`. */
  open: number;
  close: number;
  /** Every member in written order, a repeated name each time it is written. */
  members: ServersMember[];
  /**
   * False when the top-level object names `servers` more than once: JSON
   * keeps the last, and only a document written anew drops the others.
   */
  spliceable: boolean;
}

/** The layout of a file's `servers` object; `undefined` when the text is not JSON or has no such object. */
export function serversLayout(text: string): ServersLayout | undefined {
  const bom = text.startsWith('\uFEFF') ? '\uFEFF' : '';
  const source = text.slice(bom.length);
  const scanner = new JsonScanner(source, true);
  try {
    scanner.run();
  } catch {
    return undefined;
  }
  const found = scanner.layout;
  if (found === undefined) return undefined;
  return { bom, text: source, ...found, spliceable: scanner.serversKeys === 1 };
}

/**
 * The text of each entry of the top-level `servers` object as written (the
 * last one of a repeated name, as `JSON.parse` keeps it); empty without a
 * layout. A write puts an entry it leaves unchanged back as this text.
 */
export function entryTexts(layout: ServersLayout | undefined): ReadonlyMap<string, string> {
  const texts = new Map<string, string>();
  for (const member of layout?.members ?? []) texts.set(member.name, layout!.text.slice(member.valueStart, member.valueEnd));
  return texts;
}

/**
 * A structural JSON scan: no values built, only errors located and the keys
 * of the top-level `servers` object collected in written order (and, when
 * asked for, the text of each of its values).
 */
class JsonScanner {
  private i = 0;
  private order: string[] | undefined;
  /** The last top-level `servers` object's layout, when asked for. */
  layout: Pick<ServersLayout, 'open' | 'close' | 'members'> | undefined;
  /** How many times the top-level object names `servers`. */
  serversKeys = 0;
  /** Names repeated in the top-level `servers` object. */
  repeated: string[] = [];

  constructor(
    private readonly text: string,
    private readonly keepLayout = false,
  ) {}

  run(): string[] | undefined {
    this.ws();
    this.value('root');
    this.ws();
    if (this.i < this.text.length) this.fail('end of file after the JSON value');
    return this.order;
  }

  private value(role: 'root' | 'servers' | 'other'): void {
    const c = this.text[this.i];
    if (c === '{') this.object(role);
    else if (c === '[') this.array();
    else if (c === '"') this.string();
    else if (c === 't') this.literal('true');
    else if (c === 'f') this.literal('false');
    else if (c === 'n') this.literal('null');
    else if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) this.number();
    else this.fail(c === undefined ? 'a value, found end of file' : 'a value');
  }

  private object(role: 'root' | 'servers' | 'other'): void {
    const open = this.i;
    this.i++;
    const keys: string[] = [];
    const repeated: string[] = [];
    const members = role === 'servers' && this.keepLayout ? ([] as ServersMember[]) : undefined;
    this.ws();
    if (this.text[this.i] === '}') {
      this.i++;
    } else {
      for (;;) {
        if (this.text[this.i] !== '"') this.fail('a double-quoted property name');
        const start = this.i;
        this.string();
        const key = JSON.parse(this.text.slice(start, this.i)) as string;
        if (!keys.includes(key)) keys.push(key);
        else if (!repeated.includes(key)) repeated.push(key);
        if (role === 'root' && key === 'servers') this.serversKeys++;
        this.ws();
        if (this.text[this.i] !== ':') this.fail("':' after a property name");
        this.i++;
        this.ws();
        const valueStart = this.i;
        this.value(role === 'root' && key === 'servers' ? 'servers' : 'other');
        members?.push({ name: key, keyStart: start, valueStart, valueEnd: this.i });
        this.ws();
        if (this.text[this.i] === ',') {
          this.i++;
          this.ws();
          continue;
        }
        if (this.text[this.i] === '}') {
          this.i++;
          break;
        }
        this.fail("',' or '}' after a property value");
      }
    }
    // A repeated "servers" key: JSON.parse keeps the last one, and so do we.
    if (role === 'servers') {
      this.order = keys;
      this.layout = members && { open, close: this.i - 1, members };
      this.repeated = repeated;
    }
  }

  private array(): void {
    this.i++;
    this.ws();
    if (this.text[this.i] === ']') {
      this.i++;
      return;
    }
    for (;;) {
      this.value('other');
      this.ws();
      if (this.text[this.i] === ',') {
        this.i++;
        this.ws();
        continue;
      }
      if (this.text[this.i] === ']') {
        this.i++;
        return;
      }
      this.fail("',' or ']' after an array element");
    }
  }

  private string(): void {
    this.i++;
    for (;;) {
      const c = this.text[this.i];
      if (c === undefined) this.fail('a closing quote, found end of file');
      if (c === '"') {
        this.i++;
        return;
      }
      if (c === '\\') {
        const e = this.text[this.i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(this.text.slice(this.i + 2, this.i + 6))) this.fail('4 hex digits after \\u');
          this.i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) {
          this.i += 2;
        } else {
          this.fail('a valid escape sequence');
        }
      } else if (c < ' ') {
        this.fail('no control characters inside a string');
      } else {
        this.i++;
      }
    }
  }

  private number(): void {
    const re = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    re.lastIndex = this.i;
    if (!re.exec(this.text)) this.fail('a number');
    this.i = re.lastIndex;
  }

  private literal(word: string): void {
    if (!this.text.startsWith(word, this.i)) this.fail('a value');
    this.i += word.length;
  }

  private ws(): void {
    while (this.i < this.text.length && ' \t\n\r'.includes(this.text[this.i] as string)) this.i++;
  }

  private fail(expected: string): never {
    throw new JsonSyntaxError(this.i, `expected ${expected}`);
  }
}
