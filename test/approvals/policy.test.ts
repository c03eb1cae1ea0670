import { describe, expect, test } from 'vitest';
import { approvalPolicy, configuredApproval, isDenied } from '../../src/approvals/policy.js';
import { maskArguments } from '../../src/approvals/mask-arguments.js';
import { ServerConfig } from '../../src/config/schema.js';

const config = (tools: Record<string, unknown> = {}, fromAnnotations = false) =>
  ServerConfig.parse({ type: 'local', command: ['node'], tools, approval_from_annotations: fromAnnotations });

describe('approvalPolicy', () => {
  test('auto for every tool by default, annotations or not', () => {
    expect(config().tools.approval).toBeUndefined();
    expect(approvalPolicy(config(), 'echo')).toBe('auto');
    expect(approvalPolicy(config(), 'rm', { destructiveHint: true })).toBe('auto');
  });

  test('a tool\'s own entry, else "*"', () => {
    const c = config({ approval: { echo: 'auto', rm: 'deny', '*': 'ask' } });
    expect(approvalPolicy(c, 'echo')).toBe('auto');
    expect(approvalPolicy(c, 'rm')).toBe('deny');
    expect(approvalPolicy(c, 'other')).toBe('ask');
    expect(configuredApproval(c.tools.approval, 'missing')).toBe('ask');
    expect(configuredApproval({ echo: 'ask' }, 'other')).toBeUndefined();
  });

  test('annotations decide only when opted in, and never over an explicit entry or "*"', () => {
    const on = config({}, true);
    expect(approvalPolicy(on, 'read', { readOnlyHint: true })).toBe('auto');
    expect(approvalPolicy(on, 'rm', { destructiveHint: true })).toBe('ask');
    expect(approvalPolicy(on, 'both', { readOnlyHint: true, destructiveHint: true })).toBe('ask');
    expect(approvalPolicy(on, 'plain', {})).toBe('auto');
    expect(approvalPolicy(on, 'plain')).toBe('auto');
    // A hint is only a hint: `true` counts, a truthy string does not.
    expect(approvalPolicy(on, 'odd', { destructiveHint: 'yes' })).toBe('auto');
    const star = config({ approval: { '*': 'auto', read: 'deny' } }, true);
    expect(approvalPolicy(star, 'rm', { destructiveHint: true })).toBe('auto');
    expect(approvalPolicy(star, 'read', { readOnlyHint: true })).toBe('deny');
  });

  test('only configuration denies', () => {
    expect(isDenied({ rm: 'deny' }, 'rm')).toBe(true);
    expect(isDenied({ '*': 'deny', echo: 'auto' }, 'echo')).toBe(false);
    expect(isDenied({ '*': 'deny' }, 'echo')).toBe(true);
    expect(isDenied(undefined, 'echo')).toBe(false);
    // A tool named like an Object member is looked up as its own entry only.
    expect(isDenied({}, 'constructor')).toBe(false);
  });

  test('the config rejects an unknown setting, naming the field', () => {
    const parsed = ServerConfig.safeParse({ type: 'local', command: ['node'], tools: { approval: { echo: 'maybe' } } });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues[0]?.path)).toContain('approval');
  });
});

describe('maskArguments', () => {
  test('masks a config secret wherever it appears, keeps everything else as sent', () => {
    const secret = 'sk-live-0123456789abcdef';
    const masked = maskArguments(
      { key: secret, nested: [{ header: `Bearer ${secret}` }], n: 3, ok: 'plain', [secret]: true },
      [secret],
    );
    expect(masked).toEqual({ key: '••••', nested: [{ header: 'Bearer ••••' }], n: 3, ok: 'plain', '••••': true });
    expect(JSON.stringify(masked)).not.toContain(secret);
  });

  test('no secrets: the same object', () => {
    const args = { a: 1 };
    expect(maskArguments(args, [])).toBe(args);
  });
});
