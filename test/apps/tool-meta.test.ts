// What a listed tool's `_meta` says about its app: both spellings of the
// resource URI, the visibility and its default, and what is ignored.
import { describe, expect, test } from 'vitest';
import { catalogUi, modelVisible, toolUiRef } from '../../src/apps/tool-meta.js';
import { appResource } from '../../src/apps/tool-ui.js';

describe('toolUiRef', () => {
  test('the nested _meta.ui.resourceUri, with the default visibility', () => {
    expect(toolUiRef({ _meta: { ui: { resourceUri: 'ui://a/app.html' } } })).toEqual({
      resource_uri: 'ui://a/app.html',
      visibility: ['model', 'app'],
    });
  });

  test('the older flat _meta["ui/resourceUri"]; the nested one wins when both are there', () => {
    expect(toolUiRef({ _meta: { 'ui/resourceUri': 'ui://old/app.html' } })).toEqual({
      resource_uri: 'ui://old/app.html',
      visibility: ['model', 'app'],
    });
    expect(toolUiRef({ _meta: { 'ui/resourceUri': 'ui://old/app.html', ui: { resourceUri: 'ui://new/app.html' } } })?.resource_uri).toBe(
      'ui://new/app.html',
    );
  });

  test('a visibility alone makes an app-only tool without a resource', () => {
    const ui = toolUiRef({ _meta: { ui: { visibility: ['app'] } } });
    expect(ui).toEqual({ resource_uri: null, visibility: ['app'] });
    expect(modelVisible(ui)).toBe(false);
    expect(catalogUi({ ui: { resourceUri: null, visibility: ['app'] } })).toEqual({
      ui: { resource_uri: null, visibility: ['app'] },
      model_visible: false,
    });
  });

  test('no _meta.ui, a URI that is not ui://, unknown visibility values', () => {
    expect(toolUiRef({})).toBeUndefined();
    expect(toolUiRef({ _meta: { other: 1 } })).toBeUndefined();
    expect(toolUiRef({ _meta: { ui: {} } })).toBeUndefined();
    // A `_meta.ui` whose URI is not ui:// is UI metadata without an app to render.
    expect(toolUiRef({ _meta: { ui: { resourceUri: 'https://evil.test/app.html' } } })).toEqual({ resource_uri: null, visibility: ['model', 'app'] });
    expect(toolUiRef({ _meta: { 'ui/resourceUri': 'https://evil.test/app.html' } })).toEqual({ resource_uri: null, visibility: ['model', 'app'] });
    expect(toolUiRef({ _meta: { ui: { resourceUri: 'ui://a', visibility: ['model', 'admin', 'model', 3] } } })).toEqual({
      resource_uri: 'ui://a',
      visibility: ['model'],
    });
    expect(modelVisible(undefined)).toBe(true);
    expect(catalogUi({})).toEqual({ ui: null, model_visible: true });
  });
});

describe('appResource', () => {
  const meta = { ui: { csp: { frameDomains: ['https://player.example'] }, domain: 'app.example', prefersBorder: false } };

  test('text or base64 blob; the resource _meta.ui with every array defaulted', () => {
    const fromText = appResource('s', 'ui://a', { contents: [{ uri: 'ui://a', mimeType: 'text/html;profile=mcp-app', text: '<p>hi</p>', _meta: meta }] });
    expect(fromText).toEqual({
      html: '<p>hi</p>',
      csp: { connectDomains: [], resourceDomains: [], frameDomains: ['https://player.example'], baseUriDomains: [] },
      permissions: {},
      prefersBorder: false,
      domain: 'app.example',
    });
    const blob = Buffer.from('<p>é</p>', 'utf8').toString('base64');
    expect(appResource('s', 'ui://a', { contents: [{ uri: 'ui://a', mimeType: 'Text/HTML; profile=mcp-app', blob }] }).html).toBe('<p>é</p>');
  });

  test('refused: another MIME type, no content, a malformed _meta.ui', () => {
    expect(() => appResource('s', 'ui://a', { contents: [{ uri: 'ui://a', mimeType: 'text/html', text: '' }] })).toThrow(/is not an MCP App/);
    expect(() => appResource('s', 'ui://a', { contents: [{ uri: 'ui://a', text: '' }] })).toThrow(/mimeType null/);
    expect(() => appResource('s', 'ui://a', { contents: [] })).toThrow(/came back empty/);
    expect(() =>
      appResource('s', 'ui://a', {
        contents: [{ uri: 'ui://a', mimeType: 'text/html;profile=mcp-app', text: '', _meta: { ui: { csp: { connectDomains: 'https://x' } } } }],
      }),
    ).toThrow(/malformed _meta.ui/);
  });
});
