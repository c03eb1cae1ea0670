// createMcpHost refuses what it cannot use where it is given, naming the option.
import { describe, expect, test } from 'vitest';
import { createMcpHost } from '../../src/host.js';
import { stateDirWith } from './helpers.js';

const refused = (options: unknown) => {
  try {
    createMcpHost(options as never);
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
  return 'accepted';
};

describe('createMcpHost options', () => {
  test('a misspelled option is refused with the name it was likely meant as, not run on the default state dir', () => {
    expect(refused({ statedir: stateDirWith({}) })).toMatch(/^TypeError: createMcpHost: unknown option statedir \(did you mean stateDir\?\); the options are stateDir, logger, /);
    expect(refused({ stateDir: stateDirWith({}), foo: 1, bar: 2 })).toMatch(/^TypeError: createMcpHost: unknown options foo, bar; /);
  });

  test('a value of the wrong kind names the option and what it must be', () => {
    expect(refused({ logger: 'console' })).toBe('TypeError: createMcpHost: logger: must be an object with info(message) and warn(message) functions');
    expect(refused({ stateDir: 123 })).toBe('TypeError: createMcpHost: stateDir: expected string, received number');
    expect(refused({ publicUrl: 'not a url' })).toBe('TypeError: createMcpHost: publicUrl: must be an http:// or https:// URL');
    expect(refused({ approve: 'allow' })).toBe("TypeError: createMcpHost: approve: must be a function (request, { signal }) returning 'allow' or 'deny'");
    expect(refused({ hostModel: {} })).toBe('TypeError: createMcpHost: hostModel: must be a HostModel: an object with a model name and a complete(request) function');
    expect(refused({ elicitation: {} })).toBe('TypeError: createMcpHost: elicitation: must be a function (request, { signal }) returning the answer');
    expect(refused({ userQuota: { calls_per_minute: 'x' } })).toBe('TypeError: createMcpHost: userQuota.calls_per_minute: expected number, received string');
    expect(refused('options')).toBe('TypeError: createMcpHost: options must be an object (or nothing)');
  });

  test('a number out of range is a RangeError', () => {
    expect(refused({ consentTimeoutMs: -5 })).toBe('RangeError: createMcpHost: consentTimeoutMs: must be at least 1');
    expect(refused({ startupConcurrency: 0 })).toBe('RangeError: createMcpHost: startupConcurrency: must be at least 1');
    expect(refused({ startupConcurrency: 1.5 })).toBe('RangeError: createMcpHost: startupConcurrency: must be an integer');
  });

  test('every documented kind of value is taken, and undefined counts as not given', async () => {
    const host = createMcpHost({
      stateDir: stateDirWith({}),
      logger: { info() {}, warn() {} },
      persistJournal: false,
      watchConfig: false,
      startupConcurrency: 2,
      consentTimeoutMs: 1000,
      publicUrl: 'https://fleet.example',
      hostModel: { model: 'm', complete: async () => ({ role: 'assistant', content: '', tool_calls: [] }) },
      samplingForCallers: true,
      elicitation: async () => ({ action: 'decline' }),
      roots: [],
      approve: async () => 'allow' as const,
      userQuota: { calls_per_minute: 5, max_concurrent_calls: null },
      workerId: undefined,
    });
    await host.start();
    expect(host.status()).toEqual([]);
    await host.shutdown();
  });
});
