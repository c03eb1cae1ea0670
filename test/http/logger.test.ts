import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { redact } from '../../src/config/masking.js';
import { createLogger, SecretSet } from '../../src/telemetry/logger.js';

/** A logger writing into an array of parsed lines. */
function capture(secrets: () => Iterable<string>) {
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      raw.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger({ secrets, destination }), raw };
}

describe('createLogger', () => {
  it('replaces every secret in every part of a line', () => {
    const { logger, raw } = capture(() => ['sk-canary-1234567890', 'pa"ss\\word']);
    logger.info({ env: { KEY: 'sk-canary-1234567890' }, nested: { deep: ['x sk-canary-1234567890 y'] } }, 'uses sk-canary-1234567890');
    logger.error(new Error('failed with pa"ss\\word in stderr'));
    const text = raw.join('');
    expect(text).not.toContain('sk-canary');
    expect(text).not.toContain('pa\\"ss\\\\word');
    expect(raw[0]?.match(/••••/g)?.length).toBe(3);
    expect(raw[1]).toContain('failed with •••• in stderr');
    // Lines stay valid JSON.
    for (const line of raw) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('reads the secrets for every line, so a new secret is covered at once', () => {
    const secrets = new SecretSet();
    const { logger, raw } = capture(() => secrets.values());
    logger.info('token later-secret-value');
    secrets.add(['later-secret-value']);
    logger.info('token later-secret-value');
    expect(raw[0]).toContain('later-secret-value');
    expect(raw[1]).not.toContain('later-secret-value');
  });

  it('censors an authorization header whoever logs it', () => {
    const { logger, raw } = capture(() => []);
    logger.info({ req: { headers: { authorization: 'Bearer abc' } } }, 'request');
    expect(raw.join('')).not.toContain('Bearer abc');
  });
});

describe('redact', () => {
  it('replaces the longest secret first and ignores values too short to be secrets', () => {
    expect(redact('abcd abcdefgh', ['abcd', 'abcdefgh'])).toBe('•••• ••••');
    expect(redact('DEBUG=1 on', ['1', 'on'])).toBe('DEBUG=1 on');
  });
  it('catches the JSON-escaped form of a secret inside a log line', () => {
    expect(redact(JSON.stringify({ msg: 'a"quoted"secret' }), ['a"quoted"secret'])).toBe('{"msg":"••••"}');
  });
});
