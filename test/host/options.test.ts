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
    // An option's own field is named with its path, and the fields it has.
    expect(refused({ userQuota: { callsPerMinute: 5 } })).toBe(
      'TypeError: createMcpHost: userQuota: unknown field callsPerMinute (did you mean calls_per_minute?); its fields are calls_per_minute, max_concurrent_calls',
    );
  });

  test("a member's options are checked too: a misspelled ifMatch is refused, not an unconditional change", async () => {
    const host = createMcpHost({ stateDir: stateDirWith({}) });
    await expect(host.updateServer('x', {}, { ifmatch: 1 } as never)).rejects.toThrow(
      new TypeError('updateServer: unknown option ifmatch (did you mean ifMatch?); the options are ifMatch'),
    );
    await expect(host.updateServer('x', {}, { ifMatch: 1.5 })).rejects.toThrow(new RangeError('updateServer: ifMatch: must be an integer'));
  });

  test("tools() and allTools() check their options: a misspelled or mistyped loading is refused, not listed eagerly", () => {
    const host = createMcpHost({ stateDir: stateDirWith({}) });
    const listing = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return `${(error as Error).name}: ${(error as Error).message}`;
      }
      return 'accepted';
    };
    expect(listing(() => host.tools({ Loading: 'deferred' } as never))).toBe(
      'TypeError: tools: unknown option Loading (did you mean loading?); the options are loading, principal',
    );
    expect(listing(() => host.tools({ loading: 'lazy' } as never))).toMatch(/^TypeError: tools: loading: .*"eager".*"deferred"/);
    expect(listing(() => host.tools('deferred' as never))).toBe('TypeError: tools: options must be an object (or nothing)');
    expect(listing(() => host.allTools({ loading: 'deferred' } as never))).toBe('TypeError: allTools: unknown option loading; the options are principal');
    // What they take is taken, and undefined counts as not given.
    expect(listing(() => host.tools({ loading: 'deferred', principal: { id: 'ann' } }))).toBe('accepted');
    expect(listing(() => host.tools({ loading: undefined }))).toBe('accepted');
    expect(listing(() => host.allTools({ principal: { id: 'ann' } }))).toBe('accepted');
  });

  test('readEvents refuses a since or limit that is no seq, where it answered a negative since as a gap', async () => {
    const host = createMcpHost({ stateDir: stateDirWith({}), persistJournal: false, watchConfig: false });
    await host.start();
    try {
      await expect(host.readEvents(-1)).rejects.toThrow(new RangeError('readEvents: since: must be at least 0'));
      await expect(host.readEvents(1.5)).rejects.toThrow(new RangeError('readEvents: since: must be an integer (a seq)'));
      await expect(host.readEvents('0' as never)).rejects.toThrow(new TypeError('readEvents: since: expected number, received string'));
      await expect(host.readEvents(0, -1)).rejects.toThrow(new RangeError('readEvents: limit: must be at least 0'));
      await expect(host.readEvents(0, 2.5)).rejects.toThrow(new RangeError('readEvents: limit: must be an integer'));
      // From the start, and with a limit: read as before.
      expect(await host.readEvents(0)).toEqual(expect.arrayContaining([expect.objectContaining({ seq: 1 })]));
      expect(await host.readEvents(0, 1)).toHaveLength(1);
    } finally {
      await host.shutdown();
    }
  });

  test('a store without the methods of its kind is refused where it is given, not at start()', () => {
    expect(refused({ eventStore: {} })).toBe('TypeError: createMcpHost: eventStore: must be an EventStore (e.g. from openSharedStores)');
    expect(refused({ configStore: { load() {} } })).toBe('TypeError: createMcpHost: configStore: must be a ConfigStore (e.g. from openSharedStores)');
    expect(refused({ userInputs: [] })).toBe('TypeError: createMcpHost: userInputs: must be a UserInputsStore');
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
