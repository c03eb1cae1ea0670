// createManagementApp's options are checked where they are given, as
// createMcpHost's are: a missing or empty token, a misspelled name, a value
// of the wrong kind throws naming it.
import { afterAll, expect, test } from 'vitest';
import { createMcpHost } from '../../src/host.js';
import { createManagementApp } from '../../src/http/app.js';
import { stateDirWith } from '../host/helpers.js';

const host = createMcpHost({ stateDir: stateDirWith({}), persistJournal: false });
afterAll(() => host.shutdown());

test.each([
  [undefined, TypeError, 'createManagementApp: options must be an object'],
  [{}, TypeError, 'createManagementApp: token: required: the bearer token every /api route requires (a string)'],
  [{ token: '' }, TypeError, 'createManagementApp: token: must not be empty: every /api request would be refused'],
  [{ apiToken: 'abcdefgh12345678' }, TypeError, 'createManagementApp: unknown option apiToken; the options are token, bindHost,'],
  [{ token: 'abcdefgh12345678', bindhost: '0.0.0.0' }, TypeError, 'createManagementApp: unknown option bindhost (did you mean bindHost?);'],
  [{ token: 'abcdefgh12345678', bodyLimit: 0 }, RangeError, 'createManagementApp: bodyLimit: must be at least 1'],
  [{ token: 'abcdefgh12345678', registryUrl: 'ftp://registry.example' }, TypeError, 'createManagementApp: registryUrl: must be an http:// or https:// URL'],
])('%j is refused, naming what is wrong', (options, kind, message) => {
  expect(() => createManagementApp(host, options as never)).toThrow(kind);
  expect(() => createManagementApp(host, options as never)).toThrow(message);
});

test('a token and nothing else makes an app', () => {
  expect(typeof createManagementApp(host, { token: 'abcdefgh12345678' })).toBe('function');
});
