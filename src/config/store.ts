import { readFile } from 'node:fs/promises';
import { withLockFile } from '../files/lock-file.js';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { ConfigError } from '../errors.js';
import { writeOwnerOnly } from '../files/owner-only-file.js';
import { createSerialQueue } from '../files/serial-queue.js';
import { configPath } from './paths.js';
import { fileVersions } from './file-versions.js';
import { watchFile } from './watch.js';
import type { ServerConfig, ServerConfigInput } from './schema.js';
import { shortForm } from './short-form.js';
import { entryTexts, parseJsonText, parseServerConfig, parseServersDocument, repeatedServerWarning, serversLayout } from './validate.js';
import type { ServerEntry, ServersLayout } from './validate.js';
import { own } from '../records.js';

/** Where the store reports problems with the file. */
export interface ConfigStoreLogger {
  warn(message: string): void;
}

/** Options of {@link createConfigStore}. */
export interface ConfigStoreOptions {
  /** Returns the state dir; called on every operation, so a profile switch takes effect at once. */
  stateDir: () => string;
  /** Gets each warning once, again only after it went away and came back (default: `console.warn`). */
  logger?: ConfigStoreLogger;
}

/** A config file that exists but cannot be used. */
export interface BrokenConfig {
  file: string;
  /** One line, e.g. `invalid JSON: line 3 column 5: expected ',' or '}' after a property value`. */
  problem: string;
}

/** What {@link ConfigStore.load} found. */
export interface LoadedConfig {
  /** Valid servers in file order. */
  servers: Array<[string, ServerConfig]>;
  /** Every problem found, one line each (also logged). */
  warnings: string[];
  /**
   * Entries in the file that do not validate, with why and the dotted path of
   * the first problem (`servers.<name>.<field>`): skipped, but still the
   * user's (never treated as deleted).
   */
  invalid: Array<{ name: string; problem: string; field: string }>;
  /** Set when the file exists but does not parse: writes are refused until it is fixed or moved. */
  broken: BrokenConfig | null;
  /** Each valid server's version (`ServerView.version`): it changes whenever the server's stored config does. */
  versions: Record<string, number>;
}

/** Told to an update mutator alongside the valid servers. */
export interface UpdateInfo {
  /** Entries in the file that do not validate; kept verbatim unless the mutator returns that name. */
  invalidNames: readonly string[];
  /** The version of each valid server as stored right now (inside the write's lock). */
  versions: Readonly<Record<string, number>>;
  /** Deletes the entry `name` that does not validate, which the write would otherwise keep verbatim. */
  discard(name: string): void;
}

/** Computes the next server set from the current one (its argument is a copy, free to change). */
export type ServersMutator = (
  current: Record<string, ServerConfig>,
  info: UpdateInfo,
) => Record<string, ServerConfigInput> | Promise<Record<string, ServerConfigInput>>;

/** A server list to save: entries in the order to write, or a record. */
export type ServerList =
  | ReadonlyArray<readonly [string, ServerConfigInput]>
  | Readonly<Record<string, ServerConfigInput>>;

/**
 * Where the servers are configured: `<stateDir>/mcp_servers.json` (the
 * default) or a database several workers share.
 */
export interface ConfigStore {
  /** Where the config lives right now: the file's path, or the database's address (no password). */
  file(): string;
  /** Reads the file; a missing or unparseable file gives no servers and one warning, not a throw. */
  load(): Promise<LoadedConfig>;
  /** Replaces the whole document. Prefer `update`, which keeps entries this process cannot parse. */
  save(servers: ServerList): Promise<void>;
  /**
   * Read-modify-write, serialized with every other write to the same file in
   * this process, so no update is lost; returns what it stored: the valid
   * servers in file order and their versions as written. (Other processes are
   * not locked out: their write and ours each land whole, the later one wins.)
   */
  update(mutator: ServersMutator): Promise<StoredConfig>;
  /** The server as of this store's last read or write: its stored config and that config's version. */
  stored(name: string): StoredEntry | undefined;
  /**
   * Calls `onChange` whenever the config may have been changed by another
   * hand (an edit of the file, another worker); returns the stop function.
   */
  watch(onChange: () => void): () => void;
}

/**
 * What one write stored. The versions come from the write itself: `stored()`
 * may already answer for a later write (another worker's) by the time the
 * caller reads it.
 */
export interface StoredConfig {
  /** The valid servers now stored, in file order. */
  servers: Array<[string, ServerConfig]>;
  /** Each of those servers' version as written. */
  versions: Record<string, number>;
}

/** A server's config as stored, with its version. */
export interface StoredEntry {
  version: number;
  config: ServerConfig;
}

/** What `stored()` answers from: the servers of a load, by name. */
export function entriesOf(servers: ReadonlyArray<readonly [string, ServerConfig]>, versions: Readonly<Record<string, number>>) {
  const entries = new Map<string, StoredEntry>();
  servers.forEach((server) => {
    const version = own(versions, server[0]);
    if (version !== undefined) entries.set(server[0], { version, config: server[1] });
  });
  return entries;
}


/** A write refused because the file on disk exists and does not parse. */
export class ConfigFileBrokenError extends ConfigError {
  /** `refused`: what could not be done, for a message that says so (a write, by default). */
  constructor(
    readonly file: string,
    readonly problem: string,
    refused = `refusing to write ${file}`,
  ) {
    super(`${refused}: it exists but does not parse (${problem}); fix or move it first`);
  }
}

/**
 * A change refused because the server's entry in the file does not validate: it is the user's text, not ours to replace.
 * `field` is the dotted path of the entry's first problem (`servers.<name>.<field>`); the entry's when not known.
 */
export class ConfigEntryInvalidError extends ConfigError {
  constructor(
    readonly server: string,
    readonly problem: string,
    field = `servers.${server}`,
  ) {
    super(`refusing to change server "${server}": its entry in the file does not validate (${problem}); fix it in the file, or remove the server`, field);
  }
}

const NO_SERVERS: ReadonlyArray<readonly [string, ServerConfig]> = [];

/** Creates a store; every call resolves the file from `options.stateDir()` anew. */
export function createConfigStore(options: ConfigStoreOptions): ConfigStore {
  const logger = options.logger ?? { warn: (message: string) => console.warn(message) };
  let lastWarnings = new Set<string>();

  /** The last state dir asked for and its file: the startup queue asks once per server. */
  let resolved = { stateDir: '', file: '' };
  function file(): string {
    const stateDir = options.stateDir();
    if (resolved.stateDir !== stateDir || resolved.file === '') resolved = { stateDir, file: configPath(stateDir) };
    return resolved.file;
  }

  // Logs what is new since the last read, so re-reading a missing file for
  // every server at startup does not repeat the same line N times.
  function report(warnings: string[]): void {
    // Nothing before, nothing now (a valid file read again): nothing to log or remember.
    if (warnings.length === 0 && lastWarnings.size === 0) return;
    for (const w of warnings) if (!lastWarnings.has(w)) logger.warn(w);
    lastWarnings = new Set(warnings);
  }

  const memo: ParseMemo = {};
  async function read(target: string): Promise<Snapshot> {
    const snapshot = await readSnapshot(target, memo);
    report(warningsOf(target, snapshot));
    return snapshot;
  }

  async function load(): Promise<LoadedConfig> {
    const target = file();
    const snapshot = await read(target);
    return {
      // A fresh list each time (the parsed document may be shared with the next read).
      servers: snapshot.state === 'ok' ? [...snapshot.doc.servers] : [],
      warnings: warningsOf(target, snapshot),
      invalid:
        snapshot.state === 'ok'
          ? snapshot.doc.entries.flatMap(({ name, problem, field }) => (problem === null ? [] : [{ name, problem, field: field ?? `servers.${name}` }]))
          : [],
      broken: snapshot.state === 'broken' ? { file: target, problem: snapshot.problem } : null,
      versions: await remember(snapshot.state === 'ok' ? snapshot.doc.servers : NO_SERVERS),
    };
  }

  let known = new Map<string, StoredEntry>();
  const ledger = fileVersions(options.stateDir);
  /**
   * The servers `known` was last made from, and their versions. The startup
   * queue re-reads the file for every server it dequeues: the same parsed
   * document (its frozen configs hash as before, and only this store moves
   * its ledger) has the same versions, so they are not worked out again, nor
   * `known` rebuilt (n servers would otherwise cost n² entries).
   */
  let remembered: { servers: ReadonlyArray<readonly [string, ServerConfig]>; versions: Record<string, number> } | null = null;
  function remember(servers: ReadonlyArray<readonly [string, ServerConfig]>): Promise<Record<string, number>> {
    return remembered?.servers === servers ? Promise.resolve({ ...remembered.versions }) : rememberAnew(servers);
  }
  async function rememberAnew(servers: ReadonlyArray<readonly [string, ServerConfig]>): Promise<Record<string, number>> {
    const versions = await ledger.of(servers);
    known = entriesOf(servers, versions);
    remembered = { servers, versions: { ...versions } };
    return versions;
  }

  async function save(servers: ServerList): Promise<void> {
    const target = file();
    const entries = Array.isArray(servers) ? servers : Object.entries(servers);
    // Validate first: the store never writes what `load` would then skip.
    const seen = new Set<string>();
    const parsed = entries.map(([name, config]): [string, ServerConfig] => {
      if (seen.has(name)) throw new ConfigError(`servers.${name}: duplicate name`, `servers.${name}`);
      seen.add(name);
      return [name, parseServerConfig(name, config, { fieldPrefix: `servers.${name}` })];
    });
    // Written as every change is (short-form.ts); remembered as parsed, as `load` would read it back.
    const stored = parsed.map(([name, config]): [string, unknown] => [name, shortForm(config)]);
    await withFileLock(target, async () => {
      const snapshot = await read(target);
      if (snapshot.state === 'broken') throw new ConfigFileBrokenError(target, snapshot.problem);
      await writeDocument(target, stored, logger);
    });
    await remember(parsed);
  }

  async function update(mutator: ServersMutator): Promise<StoredConfig> {
    const target = file();
    return withFileLock(target, async () => {
      const snapshot = await read(target);
      if (snapshot.state === 'broken') throw new ConfigFileBrokenError(target, snapshot.problem);
      const entries = snapshot.state === 'ok' ? snapshot.doc.entries : [];
      const current = Object.fromEntries(
        entries.flatMap((e) => (e.config === null ? [] : [[e.name, structuredClone(e.config)] as const])),
      );
      const invalidNames = entries.filter((e) => e.config === null).map((e) => e.name);
      const versions = await ledger.of(Object.entries(current));
      const discarded = new Set<string>();
      const next = await mutator(current, { invalidNames, versions, discard: (name) => discarded.add(name) });
      const parsed = new Map(
        Object.entries(next).map(([name, config]) => [
          name,
          parseServerConfig(name, config, { fieldPrefix: `servers.${name}` }),
        ]),
      );
      // The file just read (`read` keeps its bytes): unchanged entries go back as written, and
      // the write replaces only the text of what changed, the rest of the file kept as it was.
      const layout = snapshot.state === 'ok' && memo.bytes !== undefined ? serversLayout(memo.bytes.toString('utf8')) : undefined;
      const stored = mergeEntries(entries.filter((e) => e.config !== null || !discarded.has(e.name)), parsed, entryTexts(layout));
      await writeDocument(target, stored, logger, layout);
      const servers = stored.flatMap(([name]): Array<[string, ServerConfig]> => {
        const config = parsed.get(name);
        return config === undefined ? [] : [[name, config]];
      });
      return { servers, versions: await remember(servers) };
    });
  }

  return {
    file,
    load,
    save,
    update,
    stored: (name) => known.get(name),
    // Edits are debounced by the watcher; the folder is resolved now, as the file is at each call.
    watch: (onChange) => watchFile(file(), onChange),
  };
}

/**
 * The document to write after an update, in file order then new names.
 * An entry this process could not parse is kept verbatim unless the mutator
 * returned that name: it is the user's hand-written text, and deleting it
 * because one field is wrong would lose their work. An unchanged valid entry
 * also keeps its raw form, so a write does not spell out every default. Both
 * go back as the text `written` has for them (the file as read), layout and
 * all; without one, as JSON of their raw form. A changed or new entry is
 * written in its short form (short-form.ts): no default, nested ones included.
 */
function mergeEntries(
  entries: ServerEntry[],
  next: Map<string, ServerConfig>,
  written: ReadonlyMap<string, string>,
): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  const placed = new Set<string>();
  const asRead = (entry: ServerEntry) => {
    const text = written.get(entry.name);
    return text === undefined ? entry.raw : new AsWritten(text);
  };
  for (const entry of entries) {
    const replacement = next.get(entry.name);
    if (replacement === undefined) {
      if (entry.config === null) out.push([entry.name, asRead(entry)]);
      continue;
    }
    const unchanged = entry.config !== null && isDeepStrictEqual(replacement, entry.config);
    out.push([entry.name, unchanged ? asRead(entry) : shortForm(replacement)]);
    placed.add(entry.name);
  }
  for (const [name, config] of next) if (!placed.has(name)) out.push([name, shortForm(config)]);
  return out;
}

type Snapshot =
  | { state: 'missing' }
  | { state: 'broken'; problem: string }
  | { state: 'ok'; doc: ReturnType<typeof parseServersDocument> };

/** The last bytes read and what they parsed to; the parsed configs are frozen, so sharing them is safe. */
interface ParseMemo {
  file?: string;
  bytes?: Buffer;
  snapshot?: Snapshot;
}

async function readSnapshot(file: string, memo: ParseMemo = {}): Promise<Snapshot> {
  // Read as bytes, compared as bytes: an unchanged file (every re-read at startup but the first)
  // is not decoded into a string, which would put the whole file on the heap again per server.
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    return unreadSnapshot(err);
  }
  // The startup queue re-reads the file for every server it dequeues: the same
  // text parses to the same document, so it is parsed and validated once
  // (n servers would otherwise cost n² entry validations).
  if (memo.snapshot !== undefined && memo.file === file && memo.bytes?.equals(bytes)) return memo.snapshot;
  const snapshot = parseSnapshot(bytes);
  Object.assign(memo, { file, bytes, snapshot });
  return snapshot;
}

/** What a file that could not be read is. */
function unreadSnapshot(err: unknown): Snapshot {
  // ENOTDIR: a parent is a file, so this file cannot exist either.
  if (errorCode(err) === 'ENOENT' || errorCode(err) === 'ENOTDIR') return { state: 'missing' };
  // Unreadable is treated as broken: we cannot know what a write would destroy.
  return { state: 'broken', problem: `cannot be read (${errorCode(err) ?? 'unknown error'})` };
}

/** The file's bytes parsed and validated, its configs frozen. */
function parseSnapshot(bytes: Buffer): Snapshot {
  try {
    const { value, serverOrder, repeatedServers } = parseJsonText(bytes.toString('utf8'));
    const doc = parseServersDocument(value, serverOrder);
    doc.warnings.unshift(...repeatedServers.map(repeatedServerWarning));
    doc.servers.forEach(freezeConfig);
    return { state: 'ok', doc };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { state: 'broken', problem: err.message };
  }
}

const freezeConfig = (entry: readonly [string, ServerConfig]): void => deepFreeze(entry[1]);

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  // Walked in place: Object.values would make an array per object of every config.
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) deepFreeze(value[index]);
    return;
  }
  for (const key in value) if (Object.hasOwn(value, key)) deepFreeze((value as Record<string, unknown>)[key]);
}

/** What loading `file` warns of (no file, not parsing, entries skipped), read now: nothing logged, no version recorded. */
export async function configFileWarnings(file: string): Promise<string[]> {
  return warningsOf(file, await readSnapshot(file));
}

function warningsOf(file: string, snapshot: Snapshot): string[] {
  switch (snapshot.state) {
    case 'missing':
      return [`no config file at ${file} yet: no servers configured (it is created on the first save)`];
    case 'broken':
      return [
        // Said at startup (no servers then) and of a hand edit while servers run (they keep their config).
        `config file ${file} does not parse (${snapshot.problem}): nothing is read from it ` +
          'and writes are refused until it is fixed or moved',
      ];
    case 'ok':
      return snapshot.doc.warnings;
  }
}

/** An entry's JSON text as the file had it: written back unchanged. */
class AsWritten {
  constructor(readonly text: string) {}
}

/**
 * Pretty JSON, 2 spaces, trailing newline, entries in the given order
 * (integer-like names included); an entry given {@link AsWritten} keeps its text.
 * Given the `layout` of the file being replaced, only the text of what changed
 * is replaced instead (see {@link spliceServers}).
 */
export function serializeServers(entries: ReadonlyArray<readonly [string, unknown]>, layout?: ServersLayout): string {
  const spliced = layout === undefined ? undefined : spliceServers(entries, layout);
  if (spliced !== undefined) return spliced;
  if (entries.length === 0) return '{\n  "servers": {}\n}\n';
  const body = entries.map(([name, value]) => `    ${JSON.stringify(name)}: ${entryText(value, '    ')}`).join(',\n');
  return `{\n  "servers": {\n${body}\n  }\n}\n`;
}

/** An entry's value as text: as written, or pretty JSON whose lines after the first start with `indent`. */
function entryText(value: unknown, indent: string): string {
  return value instanceof AsWritten ? value.text : JSON.stringify(value, null, 2).replaceAll('\n', `\n${indent}`);
}

/**
 * The file of `layout` with its `servers` object holding `entries`, every
 * byte outside what changed kept: a kept entry keeps its name and spacing as
 * written (its value too, given {@link AsWritten}; else its new value is
 * indented as its line is), a removed one goes with the text that parted it
 * from the next (from the one before, when last), and an added one follows
 * the last, parted as the last two were. A hand-formatted file's opening,
 * indentation, alignment and ending (a trailing newline or none, a BOM) stay.
 * `undefined` when the entries are not the file's in its order then new ones
 * (a write never reorders) or the file names `servers` twice: then the
 * document is written anew.
 */
function spliceServers(entries: ReadonlyArray<readonly [string, unknown]>, layout: ServersLayout): string | undefined {
  const { text, open, close, members } = layout;
  if (!layout.spliceable) return undefined;
  // Where each name is first written: a repeated name keeps that place (the order `load` reads), the later ones go.
  const firstAt = new Map<string, number>();
  members.forEach((member, index) => {
    if (!firstAt.has(member.name)) firstAt.set(member.name, index);
  });
  const origins = entries.map(([name]) => firstAt.get(name));
  // Kept entries come first, in file order, then the added ones.
  for (let k = 1; k < origins.length; k++) {
    const [before, at] = [origins[k - 1], origins[k]];
    if (at !== undefined && (before === undefined || before >= at)) return undefined;
  }
  const outside = (inner: string) => `${layout.bom}${text.slice(0, open + 1)}${inner}${text.slice(close)}`;
  if (entries.length === 0) return outside('');
  const last = members.length - 1;
  const between = (index: number) => text.slice(members[index]!.valueEnd, members[index + 1]!.keyStart);
  let lead: string, trail: string, addedAfter: string, addedIndent: string;
  if (last < 0) {
    // Added to an empty object: one per line, a level in from the line that opens it.
    const base = lineIndent(text, open);
    addedIndent = `${base}  `;
    [lead, trail, addedAfter] = [`\n${addedIndent}`, `\n${base}`, `,\n${addedIndent}`];
  } else {
    lead = text.slice(open + 1, members[0]!.keyStart);
    trail = text.slice(members[last]!.valueEnd, close);
    addedAfter = last > 0 ? between(last - 1) : `,${lead}`;
    addedIndent = lineIndent(text, members[last]!.keyStart);
  }
  let inner = lead;
  entries.forEach(([name, value], k) => {
    const at = origins[k];
    if (at === undefined) {
      inner += `${JSON.stringify(name)}: ${entryText(value, addedIndent)}`;
    } else {
      const member = members[at]!;
      inner += text.slice(member.keyStart, member.valueStart) + entryText(value, lineIndent(text, member.keyStart));
    }
    if (k === entries.length - 1) return;
    // What parted this entry from the next in the file, when it was not the last.
    inner += at !== undefined && at < last ? between(at) : addedAfter;
  });
  return outside(inner + trail);
}

/** The spaces and tabs that start the line `offset` is on. */
function lineIndent(text: string, offset: number): string {
  const start = text.lastIndexOf('\n', offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(start, offset))![0];
}

/** Writes the document owner-only and atomically (which also sweeps dead writers' temps). */
async function writeDocument(
  file: string,
  entries: ReadonlyArray<readonly [string, unknown]>,
  logger: ConfigStoreLogger,
  layout?: ServersLayout,
): Promise<void> {
  await writeOwnerOnly(file, serializeServers(entries, layout), (err) =>
    logger.warn(`could not clean up stale temp files in ${path.dirname(file)} (${errorCode(err) ?? 'unknown error'})`),
  );
}

/** Writes to one config file, shared by every store in the process: keyed by file, so stores of other files never wait on each other. */
const writes = createSerialQueue();

/** Runs `task` after every earlier write to `file` in this process has settled, holding the file's lock against other processes' writes. */
function withFileLock<T>(file: string, task: () => Promise<T>): Promise<T> {
  return writes.run(path.resolve(file), () => withLockFile(file, task));
}

function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string'
    ? err.code
    : undefined;
}
