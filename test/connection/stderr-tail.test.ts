import { describe, expect, it } from 'vitest';
import { MASK } from '../../src/config/masking.js';
import { TAIL_CHARS, TAIL_LINES, createStderrTail } from '../../src/connection/stderr-tail.js';

describe('createStderrTail', () => {
  it('keeps the last lines, joined across chunks, with secrets redacted', () => {
    const tail = createStderrTail(['s3cr3t-value']);
    for (let i = 0; i < 30; i += 1) tail.append(`line ${i}${i === 29 ? ' s3cr3t-' : '\n'}`);
    tail.append('value end\n');
    const lines = tail.read().split('\n');
    expect(lines).toHaveLength(TAIL_LINES);
    expect(lines[0]).toBe('line 10');
    expect(lines.at(-1)).toBe(`line 29 ${MASK} end`);
  });

  it('redacts each line of a multi-line secret on its own, since a tail may start inside it', () => {
    const pem = '-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX\n-----END KEY-----';
    const tail = createStderrTail([pem]);
    tail.append('loaded key line MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX\n-----END KEY-----\n');
    expect(tail.read()).toBe(`loaded key line ${MASK}\n${MASK}`);
  });

  it('caps the tail at TAIL_CHARS', () => {
    const tail = createStderrTail([]);
    tail.append(`${'x'.repeat(10_000)}\n`);
    const text = tail.read();
    expect(text.length).toBe(TAIL_CHARS + 1);
    expect(text.startsWith('…')).toBe(true);
  });

  it('drops the partial line at the front of its window rather than show part of it', () => {
    const secret = 'CANARY-0123456789abcdef';
    const tail = createStderrTail([secret]);
    // A line longer than the raw window: its start is cut off, so it is dropped whole.
    tail.append(`${'y'.repeat(64 * 1024 - 10)}${secret}\nlast line\n`);
    const text = tail.read();
    expect(text).toBe('last line');
  });
});
