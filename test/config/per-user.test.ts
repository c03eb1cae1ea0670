// The per_user fields of a server config: their defaults, `${user.NAME}`
// references checked against `user_inputs` where they are written, and a
// config resolved with one principal's values.
import { describe, expect, it } from 'vitest';
import { parseServerConfig } from '../../src/config/validate.js';
import { ConfigError } from '../../src/errors.js';
import { missingInputs, resolveUserConfig } from '../../src/host/sessions.js';

function refused(raw: unknown): ConfigError {
  try {
    parseServerConfig('mine', raw, { fieldPrefix: 'servers.mine' });
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

const local = {
  type: 'local',
  command: ['node', 'server.js', '--org=${user.ORG}'],
  env: { TOKEN: '${user.TOKEN}', PLAIN: 'x' },
  scope: 'per_user',
  user_inputs: { TOKEN: { description: 'your token' }, ORG: { secret: false } },
};

describe('per_user config', () => {
  it('defaults: shared, no inputs, 100 sessions; an input is secret unless it says not', () => {
    expect(parseServerConfig('x', { type: 'local', command: ['x'] })).toMatchObject({ scope: 'shared', user_inputs: {}, max_sessions: 100 });
    expect(parseServerConfig('mine', local).user_inputs).toEqual({
      TOKEN: { description: 'your token', secret: true },
      ORG: { description: '', secret: false },
    });
  });

  it('a reference to an undeclared input is refused, naming the field', () => {
    const env = refused({ ...local, env: { TOKEN: 'Bearer ${user.NOPE}' } });
    expect(env.field).toBe('servers.mine.env.TOKEN');
    expect(env.message).toContain('${user.NOPE} names no input of user_inputs');
    expect(refused({ ...local, command: ['node', '${user.NOPE}'] }).field).toBe('servers.mine.command.1');
    const remote = refused({ type: 'remote', url: 'https://x.invalid/mcp', scope: 'per_user', headers: { 'X-Key': '${user.KEY}' } });
    expect(remote.field).toBe('servers.mine.headers.X-Key');
  });

  it('references need scope per_user; an input name must be a name', () => {
    expect(refused({ ...local, scope: 'shared' }).field).toBe('servers.mine.scope');
    expect(refused({ ...local, user_inputs: { 'bad name': {} } }).field).toContain('servers.mine.user_inputs');
  });

  it('per_user with OAuth is a valid config', () => {
    expect(parseServerConfig('mine', { type: 'remote', url: 'https://x.invalid/mcp', scope: 'per_user', auth: { kind: 'oauth' } }).scope).toBe(
      'per_user',
    );
  });

  it("resolves a principal's values into command and env; reports the ones missing", () => {
    const config = parseServerConfig('mine', local);
    expect(missingInputs(config, { ORG: 'acme' })).toEqual(['TOKEN']);
    expect(missingInputs(config, { ORG: 'acme', TOKEN: '' })).toEqual(['TOKEN']);
    const resolved = resolveUserConfig(config, { TOKEN: 't-1', ORG: 'acme' });
    expect(resolved.type === 'local' && resolved.command).toEqual(['node', 'server.js', '--org=acme']);
    expect(resolved.type === 'local' && resolved.env).toEqual({ TOKEN: 't-1', PLAIN: 'x' });
  });
});
