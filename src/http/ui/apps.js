// An MCP App on the page. The app runs in a frame of the worker's sandbox
// origin (another port, an opaque origin: `sandbox` without
// allow-same-origin), under a CSP made from the origins it declared. Its
// bridge runs in the worker; the page only relays: what the frame posts goes
// to `POST /api/mcp/apps/:id/messages`, what the worker sends arrives on the
// app's event stream and is posted into the frame. A message from any other
// window is ignored; one that is not JSON-RPC is dropped and said so. What
// goes wrong (a refused message, a CSP violation, an app that never starts)
// is shown under the frame.
import { api } from './api.js';
import { h } from './dom.js';

/** An app that has not said a word this long after its frame loaded did not start. */
const START_MS = 10_000;
/** Bounds on the height an app may ask for. */
const MIN_HEIGHT = 60;
const MAX_HEIGHT = 4_000;
/** The largest message relayed (the API's body limit is 1 MiB). */
const MAX_MESSAGE = 900 * 1024;

/**
 * The app of `tool` (a catalog tool with `ui`), optionally showing one call
 * of it: `input` (its arguments) and `result` (as the server answered:
 * `content`, `structuredContent`, `isError`). Returns `{element, close}`;
 * call `close` when the view goes away.
 */
export function appView(tool, { input, result } = {}) {
  const holder = h('div', { class: 'app-frame-holder' }, h('p', { class: 'muted small' }, 'Opening the app…'));
  const problems = h('ul', { class: 'app-problems', role: 'alert', 'aria-label': 'Problems of the app' });
  const notes = h('ul', { class: 'app-notes', 'aria-label': 'What the app asks' });
  const element = h(
    'section',
    { class: 'app-view', 'data-app-tool': tool.name, 'aria-label': `App of ${tool.name}` },
    h('h4', {}, 'App ', h('span', { class: 'muted small' }, tool.ui?.resource_uri ?? '')),
    holder,
    problems,
    notes,
  );
  let closed = false;
  let id;
  let frame;
  let stream;
  let startTimer;
  let heard = false;
  /** Messages go to the worker one after another, in the order the app sent them. */
  let relay = Promise.resolve();

  const problem = (text) => {
    if (closed) return;
    problems.append(h('li', { class: 'app-problem' }, text));
  };
  const note = (...children) => notes.append(h('li', { class: 'app-note' }, ...children));

  function onMessage(event) {
    // Only the app's own frame is listened to; anything else on the page is not the app.
    if (!frame || event.source !== frame.contentWindow) return;
    heard = true;
    clearTimeout(startTimer);
    const message = event.data;
    const text = jsonRpcText(message);
    if (text === undefined) {
      problem('The app sent a message that is not JSON-RPC; it was dropped.');
      return;
    }
    relay = relay.then(() =>
      api(`/api/mcp/apps/${id}/messages`, { method: 'POST', body: { message } }).catch((err) => {
        problem(`The app's message was refused: ${err.message}`);
      }),
    );
  }

  function onEvent(name, handler) {
    stream.addEventListener(name, (event) => {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch {
        return;
      }
      handler(data);
    });
  }

  async function start() {
    let opened;
    try {
      opened = await api('/api/mcp/apps', {
        method: 'POST',
        body: { tool: tool.name, ...(input === undefined ? {} : { input }), ...(result === undefined ? {} : { result }) },
      });
    } catch (err) {
      holder.replaceChildren();
      problem(`The app could not be opened: ${err.message}`);
      return;
    }
    if (closed) {
      api(`/api/mcp/apps/${opened.id}`, { method: 'DELETE' }).catch(() => {});
      return;
    }
    id = opened.id;
    for (const value of opened.csp_dropped ?? []) problem(`Ignored a declared source that is not a plain origin: ${value}`);
    stream = new EventSource(`/api/mcp/apps/${id}/stream`);
    onEvent('message', (message) => frame?.contentWindow?.postMessage(message, '*'));
    onEvent('size', (size) => {
      if (typeof size.height === 'number' && Number.isFinite(size.height)) {
        frame.style.height = `${Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, Math.ceil(size.height)))}px`;
      }
    });
    onEvent('problem', (data) => problem(String(data.message)));
    onEvent('app-message', (data) => note('The app says: ', h('q', {}, String(data.text))));
    let context;
    onEvent('model-context', (data) => {
      // One note, the latest: each update replaces the one before.
      context?.remove();
      context = h('li', { class: 'app-note app-context' }, 'For the model, the app offers: ', h('q', {}, String(data.text)));
      notes.append(context);
    });
    onEvent('open-link', (data) =>
      note('The app asks to open ', h('a', { href: String(data.url), target: '_blank', rel: 'noopener noreferrer' }, String(data.url))),
    );
    onEvent('closed', (data) => {
      stream.close();
      problem(`The app was closed: ${data.reason}`);
    });
    stream.addEventListener('error', () => {
      if (stream.readyState === EventSource.CLOSED) problem('The connection to the app was lost.');
    });
    window.addEventListener('message', onMessage);
    // The frame's origin is opaque: the page's `postMessage(…, '*')` reaches that one window only.
    frame = h('iframe', {
      class: 'app-frame',
      'data-mcp-app': tool.name,
      'data-app-id': id,
      title: `App of ${tool.name}`,
      sandbox: opened.sandbox,
      allow: opened.allow || false,
      referrerpolicy: 'no-referrer',
      'data-border': opened.prefers_border === false ? 'none' : 'shown',
      src: opened.frame_url,
    });
    frame.addEventListener('load', () => {
      startTimer = setTimeout(() => {
        if (!heard) problem(`The app did not start: its frame said nothing in ${START_MS / 1000} s (a failed load, or a script the policy blocked).`);
      }, START_MS);
    });
    holder.replaceChildren(frame);
  }

  start();
  return {
    element,
    close() {
      if (closed) return;
      closed = true;
      clearTimeout(startTimer);
      window.removeEventListener('message', onMessage);
      stream?.close();
      if (id !== undefined) api(`/api/mcp/apps/${id}`, { method: 'DELETE' }).catch(() => {});
    },
  };
}

/** The message as JSON text when it is a JSON-RPC 2.0 message of a relayable size, else undefined. */
function jsonRpcText(message) {
  if (message === null || typeof message !== 'object' || Array.isArray(message) || message.jsonrpc !== '2.0') return undefined;
  if (typeof message.method !== 'string' && !('id' in message)) return undefined;
  let text;
  try {
    text = JSON.stringify(message);
  } catch {
    return undefined;
  }
  return text.length <= MAX_MESSAGE ? text : undefined;
}

/** A playground result as the server answered it: what an app is handed as its tool result. */
export function callToolResult(answer) {
  const details = answer?.details ?? {};
  return {
    content: Array.isArray(answer?.content) ? answer.content : [],
    ...(details.structured !== undefined && details.structured !== null && typeof details.structured === 'object' ? { structuredContent: details.structured } : {}),
    isError: details.is_error === true,
  };
}
