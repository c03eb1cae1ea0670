/**
 * Versions for the config file, which keeps none: `<state_dir>/config_versions.json`
 * records, per server, a hash of its config and the version that config got.
 * A server whose config hashes differently (a PATCH, a hand edit) gets the
 * next number of one counter, so a version only grows, as the
 * database's do. Losing the file loses nothing but the numbers: they start
 * again above none of the old ones' meaning.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { writeOwnerOnly } from '../files/owner-only-file.js';
import { createSerialQueue } from '../files/serial-queue.js';
import type { ServerConfig } from './schema.js';
import { own } from '../records.js';

const Ledger = z.object({
  /** The last version handed out. */
  last: z.number().int().min(0),
  servers: z.record(z.string(), z.object({ hash: z.string(), version: z.number().int().min(1) })),
});
type Ledger = z.infer<typeof Ledger>;

export const VERSIONS_FILE = 'config_versions.json';

/** The content hash a version is kept for; memoized per (frozen, shared) config object: a function of the config alone. */
const hashes = new WeakMap<ServerConfig, string>();
function hashOf(config: ServerConfig): string {
  let hash = hashes.get(config);
  if (hash === undefined) {
    hash = createHash('sha256').update(JSON.stringify(config)).digest('base64url').slice(0, 22);
    if (Object.isFrozen(config)) hashes.set(config, hash);
  }
  return hash;
}

/** Each server's version in `ledger`, as {@link versionOf} gives it. */
function versionsIn(ledger: Ledger, servers: ReadonlyArray<readonly [string, ServerConfig]>): Record<string, number> {
  const versions: Record<string, number> = {};
  servers.forEach((entry) => {
    versions[entry[0]] = versionOf(ledger, entry[0], entry[1]);
  });
  return versions;
}

/** The version of server `name`'s `config` in `ledger`: the next one handed out when the config is new. */
function versionOf(ledger: Ledger, name: string, config: ServerConfig): number {
  const hash = hashOf(config);
  let entry = own(ledger.servers, name);
  if (entry?.hash !== hash) {
    entry = { hash, version: (ledger.last += 1) };
    ledger.servers[name] = entry;
  }
  return entry.version;
}

/** Writes of one ledger, in order, shared by every store of the process: keyed by file, so stores of other state dirs never wait on each other. */
const writes = createSerialQueue();

/** The versions of the servers of `stateDir`'s config. */
export interface FileVersions {
  /** Each server's version, handing out (and recording) new ones for configs not seen before. */
  of(servers: ReadonlyArray<readonly [string, ServerConfig]>): Promise<Record<string, number>>;
}

export function fileVersions(stateDir: () => string): FileVersions {
  let cached: { file: string; ledger: Ledger } | null = null;

  async function ledgerAt(file: string): Promise<Ledger> {
    if (cached?.file === file) return cached.ledger;
    let ledger: Ledger = { last: 0, servers: {} };
    try {
      const parsed = Ledger.safeParse(JSON.parse(await readFile(file, 'utf8')));
      if (parsed.success) ledger = parsed.data;
    } catch {
      // None yet, or unreadable: versions start again from 1.
    }
    cached = { file, ledger };
    return ledger;
  }

  return {
    of(servers) {
      const file = path.join(stateDir(), VERSIONS_FILE);
      return writes.run(file, async () => {
        const ledger = await ledgerAt(file);
        const last = ledger.last;
        const versions = versionsIn(ledger, servers);
        // A new version was handed out. A state dir that cannot take the file still serves versions, for this run.
        if (ledger.last !== last) await writeOwnerOnly(file, `${JSON.stringify(ledger)}\n`).catch(() => undefined);
        return versions;
      });
    },
  };
}
