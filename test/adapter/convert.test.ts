import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { convertCallResult, resultToText } from '../../src/catalog/tools/adapter.js';
import { AgentToolResult } from '../../src/catalog/tools/agent-tool.js';

const ctx = { server: 'srv', tool: 'echo' };
const convert = (result: unknown) => convertCallResult(result, ctx);
const texts = (result: AgentToolResult) => result.content.map((b) => (b.type === 'text' ? b.text : `<${b.type}>`));

/** Every output must be a well-formed AgentToolResult for the same server and tool. */
function expectWellFormed(out: AgentToolResult): void {
  expect(AgentToolResult.safeParse(out).success).toBe(true);
  expect(out.details.server).toBe('srv');
  expect(out.details.tool).toBe('echo');
}

describe('convertCallResult: content blocks', () => {
  it('keeps text unchanged and image/audio as data blocks', () => {
    const out = convert({
      content: [
        { type: 'text', text: '  line 1\nline 2 ✓  ' },
        { type: 'image', data: 'iVBORw0=', mimeType: 'image/png' },
        { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav', annotations: { priority: 1 } },
      ],
    });
    expect(out).toEqual({
      content: [
        { type: 'text', text: '  line 1\nline 2 ✓  ' },
        { type: 'image', data: 'iVBORw0=', mimeType: 'image/png' },
        { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav' },
      ],
      details: { is_error: false, server: 'srv', tool: 'echo' },
    });
  });

  it('shows embedded text resources as their text and blobs as a short note with the decoded size', () => {
    const out = convert({
      content: [
        { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'hello' } },
        { type: 'resource', resource: { uri: 'file:///a.bin', mimeType: 'application/pdf', blob: 'AAECAw==' } },
        { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AAE' } },
      ],
    });
    expect(texts(out)).toEqual([
      'hello',
      '[binary resource file:///a.bin (application/pdf, 4 bytes)]',
      '[binary resource file:///b.bin (2 bytes)]',
    ]);
  });

  it('reports the exact byte count of any base64 blob', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const blob = Buffer.from(bytes).toString('base64');
        const out = convert({ content: [{ type: 'resource', resource: { uri: 'x:y', mimeType: 'm/n', blob } }] });
        expect(texts(out)).toEqual([`[binary resource x:y (m/n, ${bytes.length} bytes)]`]);
      }),
    );
  });

  it('shows resource links as `uri (name)`', () => {
    const out = convert({
      content: [
        { type: 'resource_link', uri: 'file:///doc.md', name: 'doc.md', mimeType: 'text/markdown' },
        { type: 'resource_link', uri: 'file:///nameless' },
      ],
    });
    expect(texts(out)).toEqual(['file:///doc.md (doc.md)', 'file:///nameless']);
  });

  it('turns unknown and malformed blocks into their JSON text', () => {
    const unknown = { type: 'hologram', frames: [1, 2], meta: { a: null } };
    const badText = { type: 'text', text: 42 };
    const badImage = { type: 'image', mimeType: 'image/png' };
    const emptyResource = { type: 'resource', resource: { uri: 'x:y' } };
    const out = convert({ content: [unknown, badText, badImage, emptyResource, 7, 'bare string'] });
    expect(texts(out).slice(0, 4).map((t) => JSON.parse(t))).toEqual([unknown, badText, badImage, emptyResource]);
    expect(texts(out).slice(4)).toEqual(['7', 'bare string']);
  });
});

describe('convertCallResult: result fields', () => {
  it('sets is_error and keeps the text for the model', () => {
    const out = convert({ isError: true, content: [{ type: 'text', text: 'file not found' }] });
    expect(out.details.is_error).toBe(true);
    expect(texts(out)).toEqual(['file not found']);
    // Only `true` counts: a truthy string is not an error flag.
    expect(convert({ isError: 'yes', content: [] }).details.is_error).toBe(false);
  });

  it('keeps structuredContent and adds it as JSON text only when there is no content', () => {
    const structured = { temperature: 21.5, unit: 'C' };
    const withContent = convert({ content: [{ type: 'text', text: '21.5 C' }], structuredContent: structured });
    expect(withContent.details.structured).toBe(structured);
    expect(texts(withContent)).toEqual(['21.5 C']);

    for (const result of [{ structuredContent: structured }, { content: [], structuredContent: structured }]) {
      const alone = convert(result);
      expect(alone.details.structured).toBe(structured);
      expect(texts(alone).map((t) => JSON.parse(t))).toEqual([structured]);
    }
  });

  it('reads the legacy `toolResult` field as JSON text', () => {
    const out = convert({ toolResult: { rows: [1, 2, 3] } });
    expect(texts(out).map((t) => JSON.parse(t))).toEqual([{ rows: [1, 2, 3] }]);
    expect(out.details.is_error).toBe(false);
  });

  it('reads non-object results leniently', () => {
    expect(convert(undefined).content).toEqual([]);
    expect(texts(convert(null))).toEqual(['null']);
    expect(texts(convert('plain'))).toEqual(['"plain"']);
    expect(texts(convert([1, 2]))).toEqual(['[1,2]']);
    expect(texts(convert({ content: 'just text' }))).toEqual(['just text']);
    expect(texts(convert({ content: { type: 'text', text: 'lone block' } }))).toEqual(['lone block']);
  });
});

describe('convertCallResult never throws', () => {
  const everything = fc.anything({
    withBigInt: true,
    withBoxedValues: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withNullPrototype: true,
    withObjectString: true,
    withSparseArray: true,
    withTypedArray: true,
    withUnicodeString: true,
  });
  const field = fc.oneof(everything, fc.string(), fc.constant(undefined));
  // Blocks that look almost right: a known type with wrong or missing fields.
  const malformedBlock = fc.record(
    {
      type: fc.oneof(fc.constantFrom('text', 'image', 'audio', 'resource', 'resource_link'), everything),
      text: field,
      data: field,
      mimeType: field,
      uri: field,
      name: field,
      resource: fc.oneof(field, fc.record({ uri: field, text: field, blob: field, mimeType: field }, { requiredKeys: [] })),
    },
    { requiredKeys: [] },
  );
  const resultish = fc.record(
    {
      content: fc.oneof(fc.array(fc.oneof(malformedBlock, everything)), everything),
      isError: everything,
      structuredContent: everything,
      toolResult: everything,
    },
    { requiredKeys: [] },
  );

  it('on anything at all', () => {
    fc.assert(fc.property(everything, (input) => expectWellFormed(convert(input))), { numRuns: 2000 });
  });

  it('on anything as its context and options, which plain JavaScript may pass', () => {
    fc.assert(
      fc.property(resultish, everything, everything, (input, anyCtx, options) => {
        expect(AgentToolResult.safeParse(convertCallResult(input, anyCtx as never, options as never)).success).toBe(true);
      }),
      { numRuns: 500 },
    );
    expect(convertCallResult({ content: [{ type: 'text', text: 'ok' }] }, null as never, null as never)).toEqual({
      content: [{ type: 'text', text: 'ok' }],
      details: { is_error: false, server: '', tool: '' },
    });
  });

  it('on result-shaped objects with malformed blocks', () => {
    fc.assert(fc.property(resultish, (input) => expectWellFormed(convert(input))), { numRuns: 2000 });
  });

  it('on cyclic objects, printing the cycle as [Circular] but shared references in full', () => {
    const cyclic: Record<string, unknown> = { type: 'mystery' };
    cyclic.self = cyclic;
    const shared = { n: 1 };
    const out = convert({ content: [cyclic, { type: 'pair', a: shared, b: shared }], structuredContent: cyclic });
    expectWellFormed(out);
    expect(JSON.parse(texts(out)[0] ?? '')).toEqual({ type: 'mystery', self: '[Circular]' });
    expect(JSON.parse(texts(out)[1] ?? '')).toEqual({ type: 'pair', a: { n: 1 }, b: { n: 1 } });
    const onlyStructured = convert({ structuredContent: cyclic });
    expect(JSON.parse(texts(onlyStructured)[0] ?? '')).toEqual({ type: 'mystery', self: '[Circular]' });
  });

  it('on hostile objects: throwing getters and proxies', () => {
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error('boom\nsecond line');
        },
        has: () => {
          throw new Error('boom');
        },
      },
    );
    const whole = convert(hostile);
    expectWellFormed(whole);
    expect(whole.details.is_error).toBe(true);
    expect(texts(whole)[0]).toContain('unreadable result from srv/echo');

    const badBlock = Object.defineProperty({}, 'type', {
      enumerable: true,
      get: () => {
        throw new Error('no');
      },
    });
    const partial = convert({ content: [{ type: 'text', text: 'kept' }, badBlock, { type: 'text', text: 'also kept' }] });
    expect(texts(partial)).toEqual(['kept', '[unreadable content block]', 'also kept']);

    const badJson = { type: 'weird', toJSON: () => { throw new Error('nope'); } };
    expectWellFormed(convert({ content: [badJson, Object.assign(Object.create(null), { type: 'x', toJSON: 1 })] }));
  });

  it('on huge content arrays, converting every block', () => {
    const content = Array.from({ length: 200_000 }, (_, i) => ({ type: 'text', text: String(i) }));
    const out = convert({ content });
    expect(out.content).toHaveLength(200_000);
    expect(out.content[199_999]).toEqual({ type: 'text', text: '199999' });
  });
});

describe('resultToText', () => {
  const result = (...content: AgentToolResult['content']): AgentToolResult => ({
    content,
    details: { is_error: false, server: 'srv', tool: 'echo' },
  });
  const t = (text: string) => ({ type: 'text' as const, text });

  it('joins text parts with newlines and notes images and audio', () => {
    const out = resultToText(
      result(t('first'), { type: 'image', data: 'AAAA', mimeType: 'image/png' }, t('second'), {
        type: 'audio',
        data: 'AAAA',
        mimeType: 'audio/wav',
      }),
    );
    expect(out).toBe('first\n[image image/png]\nsecond\n[audio audio/wav]');
  });

  it('leaves a single JSON text and mixed JSON/prose texts as they are', () => {
    expect(resultToText(result(t('{"a": 1}')))).toBe('{"a": 1}');
    expect(resultToText(result(t('{"a":1}'), t('done')))).toBe('{"a":1}\ndone');
    // A bare JSON number or string is not an object/array: no merging.
    expect(resultToText(result(t('1'), t('2')))).toBe('1\n2');
    expect(resultToText(result())).toBe('');
  });

  it('turns several JSON object/array texts into one JSON array, keeping their exact text', () => {
    const out = resultToText(result(t('{"id": 12345678901234567890}'), t(' [1, 2] ')));
    expect(out).toBe('[{"id": 12345678901234567890},[1, 2]]');
    const container = fc.oneof(fc.dictionary(fc.string(), fc.jsonValue()), fc.array(fc.jsonValue()));
    fc.assert(
      fc.property(fc.array(container, { minLength: 2, maxLength: 6 }), fc.boolean(), (values, pretty) => {
        const parts = values.map((v) => JSON.stringify(v, null, pretty ? 2 : undefined));
        const merged = resultToText(result(...parts.map(t)));
        expect(JSON.parse(merged)).toEqual(parts.map((p) => JSON.parse(p)));
      }),
    );
  });
});
