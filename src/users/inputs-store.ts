/**
 * Where each user's values of a `per_user` server's `user_inputs` live, sealed
 * at rest (AES-256-GCM, config/secrets/sealed.ts), each bound to its server,
 * principal and name so a value copied elsewhere does not open. The file
 * store keeps them in `<state_dir>/user_inputs.json` (owner-only, written
 * atomically, one write at a time) with the worker's secret key
 * (`MCP_FLEET_SECRET_KEY`, else `<state_dir>/secret_key`, made on the first
 * write when there is none); the PostgreSQL one in table `user_inputs`
 * (pg-inputs-store.ts).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { writeOwnerOnly, createSerialQueue } from '../files/index.js';
import { open, seal, SealedValue } from '../config/secrets/sealed.js';
import { loadOrMakeSecretKey, type SecretKey } from '../config/secrets/secret-key.js';
import { own } from '../records.js';

/** A change of one principal's inputs: a value sets it, `null` deletes it. */
export type InputsPatch = Record<string, string | null>;

export interface UserInputsStore {
  /** The principal's values for the server, opened (`{}` when none is set). */
  get(server: string, principal: string): Promise<Record<string, string>>;
  /** Merges `patch` into the principal's values; resolves with the names set afterwards. */
  set(server: string, principal: string, patch: InputsPatch): Promise<string[]>;
  /**
   * Deletes every value of a server, of a principal, or of both: a removed
   * user's values must not pass to a new user of the same name, nor a removed
   * server's to a new server of its name.
   */
  forget(of: { server?: string; principal?: string }): Promise<void>;
}

/** What a value is bound to: the same sealed value under another server, user or name fails to open. */
export function inputContext(server: string, principal: string, name: string): string {
  return `input:${server}:${principal}:${name}`;
}

/** `<stateDir>/user_inputs.json`. */
export function inputsPath(stateDir: string): string {
  return path.join(stateDir, 'user_inputs.json');
}

const InputsFile = z.strictObject({
  /** server → principal → input name → sealed value. */
  inputs: z.record(z.string(), z.record(z.string(), z.record(z.string(), SealedValue))),
});
type Sealed = z.infer<typeof InputsFile>['inputs'];

export interface FileInputsStoreOptions {
  stateDir: string;
  env?: NodeJS.ProcessEnv;
}

function keyFor({ stateDir, env = process.env }: FileInputsStoreOptions): Promise<SecretKey> {
  return loadOrMakeSecretKey({ env, configDir: stateDir });
}

export function createFileInputsStore(options: FileInputsStoreOptions): UserInputsStore {
  const file = inputsPath(options.stateDir);
  const writes = createSerialQueue();
  let key: Promise<SecretKey> | undefined;
  const theKey = (): Promise<SecretKey> => {
    key ??= keyFor(options).catch((error: unknown) => {
      key = undefined;
      throw error;
    });
    return key;
  };

  async function read(): Promise<Sealed> {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw err;
    }
    const parsed = InputsFile.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(`${file} is not a user inputs file: fix or delete it`);
    return parsed.data.inputs;
  }

  return {
    async get(server, principal) {
      const sealed = own(own(await read(), server), principal);
      if (sealed === undefined) return {};
      const keyNow = await theKey();
      return Object.fromEntries(Object.entries(sealed).map(([name, value]) => [name, open(keyNow, value, inputContext(server, principal, name))]));
    },
    set(server, principal, patch) {
      return writes.run('inputs', async () => {
        const keyNow = await theKey();
        const all = await read();
        const mine = { ...own(own(all, server), principal) };
        for (const [name, value] of Object.entries(patch)) {
          if (value === null) delete mine[name];
          else mine[name] = seal(keyNow, value, inputContext(server, principal, name));
        }
        const forServer = { ...own(all, server) };
        if (Object.keys(mine).length === 0) delete forServer[principal];
        else forServer[principal] = mine;
        const next = { ...all, [server]: forServer };
        if (Object.keys(forServer).length === 0) delete next[server];
        await writeOwnerOnly(file, `${JSON.stringify({ inputs: next }, null, 2)}\n`);
        return Object.keys(mine).sort();
      });
    },
    forget(of) {
      return writes.run('inputs', async () => {
        const all = await read();
        const next: Sealed = {};
        for (const [server, byPrincipal] of Object.entries(all)) {
          if (of.principal === undefined && of.server === server) continue;
          const kept = Object.fromEntries(
            Object.entries(byPrincipal).filter(([principal]) => !(principal === of.principal && (of.server === undefined || of.server === server))),
          );
          if (Object.keys(kept).length > 0) next[server] = kept;
        }
        if (JSON.stringify(next) === JSON.stringify(all)) return;
        await writeOwnerOnly(file, `${JSON.stringify({ inputs: next }, null, 2)}\n`);
      });
    },
  };
}
