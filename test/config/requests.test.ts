// The POST and PATCH body schemas are derived from the config schemas: every
// field of either server type goes through both, and a PATCH brings no field
// the client did not send.
import { describe, expect, it } from 'vitest';
import { mergePatch } from '../../src/config/merge-patch.js';
import { ServerCreate, ServerPatch } from '../../src/config/requests.js';
import { ServerConfig } from '../../src/config/schema.js';
import { describeZodError } from '../../src/config/zod-errors.js';
import { fieldCases } from './field-samples.js';

const BASE = {
  local: ServerConfig.parse({ type: 'local', command: ['node', 'server.js'] }),
  remote: ServerConfig.parse({ type: 'remote', url: 'https://base.invalid/mcp' }),
};

/** The field a refusal names. */
function refusedField(result: { success: boolean; error?: Parameters<typeof describeZodError>[0] }): string {
  if (result.success || result.error === undefined) throw new Error('expected a refusal');
  return describeZodError(result.error).field;
}

describe('every field of the config schemas', () => {
  const cases = fieldCases();

  it('walks the fields of both types, nested ones included', () => {
    const labels = cases.map((c) => `${c.type}:${c.label}`);
    expect(labels).toEqual(
      expect.arrayContaining([
        'local:max_result_bytes',
        'remote:max_result_bytes',
        'local:reconnect.max_attempts',
        'local:inherit_env',
        'remote:auth(bearer)',
        'remote:auth(oauth)',
        'local:log_level',
      ]),
    );
  });

  it.each(cases.map((c) => [`${c.type}:${c.label}`, c] as const))('%s: PATCH and POST take it', (_label, { type, patch }) => {
    expect(ServerPatch.parse(patch)).toEqual(patch);
    expect(mergePatch(BASE[type], patch)).toMatchObject(patch);
    const created = ServerCreate.parse({ ...BASE[type], ...patch, name: 'x' });
    expect(created).toMatchObject({ ...patch, name: 'x' });
  });
});

describe('ServerPatch', () => {
  it('applies no default: what was not sent is not in the output', () => {
    for (const patch of [{}, { tools: {} }, { reconnect: {} }, { auth: {} }, { auth: { kind: 'oauth' } }, { env: {} }]) {
      expect(ServerPatch.parse(patch)).toEqual(patch);
    }
  });

  it.each([
    ['env key', { env: { A: null } }],
    ['headers key', { headers: { H: null } }],
    ['auth.token', { auth: { token: null } }],
    ['auth.client_secret', { auth: { client_secret: null } }],
  ])('a secret takes null (delete): %s', (_label, patch) => {
    expect(ServerPatch.safeParse(patch).success).toBe(true);
  });

  it.each([
    [{ timeout_seconds: null }, 'timeout_seconds'],
    [{ max_result_bytes: null }, 'max_result_bytes'],
    [{ command: null }, 'command'],
    [{ env: null }, 'env'],
    [{ tools: { exclude: null } }, 'tools.exclude'],
    [{ reconnect: { max_attempts: null } }, 'reconnect.max_attempts'],
    [{ auth: { scopes: null } }, 'auth.scopes'],
    [{ auth: { kind: null } }, 'auth.kind'],
  ])('null is not a value for a field that is neither a secret nor nullable: %j', (patch, field) => {
    expect(refusedField(ServerPatch.safeParse(patch))).toBe(field);
  });

  it.each([
    [{ bogus: 1 }, 'bogus'],
    [{ tools: { bogus: 1 } }, 'tools.bogus'],
    [{ reconnect: { bogus: 1 } }, 'reconnect.bogus'],
    [{ auth: { bogus: 1 } }, 'auth.bogus'],
    [{ type: 'wasm' }, 'type'],
    [{ auth: { kind: 'magic' } }, 'auth.kind'],
    [{ max_result_bytes: 10 }, 'max_result_bytes'],
  ])('refuses %j naming the field', (patch, field) => {
    expect(refusedField(ServerPatch.safeParse(patch))).toBe(field);
  });
});

describe('ServerCreate', () => {
  it.each([
    [{ type: 'local', command: ['x'] }, 'name'],
    [{ name: 'no spaces', type: 'local', command: ['x'] }, 'name'],
    [{ name: 'x', type: 'local', command: ['x'], bogus: 1 }, 'bogus'],
    [{ name: 'x', type: 'remote', url: 'https://x.invalid', reconnect: { bogus: 1 } }, 'reconnect.bogus'],
    [{ name: 'x', type: 'local', command: ['x'], env: { A: null } }, 'env.A'],
    [{ name: 'x', type: 'teleport' }, 'type'],
  ])('refuses %j naming the field', (body, field) => {
    expect(refusedField(ServerCreate.safeParse(body))).toBe(field);
  });
});
