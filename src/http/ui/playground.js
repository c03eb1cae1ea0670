// The tool playground: call one tool by hand, as the model would. Arguments
// come from a form generated from the input schema (or as JSON), are checked
// against the schema, then sent to `POST /api/mcp/tools/:name/call` as a
// server-sent-event stream: `progress` events, then one `result`. Cancel
// aborts the request; the worker then cancels the MCP call on the server.
//
// A side drawer, not a modal: a call can wait for an approval, and the rest
// of the page must stay usable to give it. It lives outside the server panel,
// so the panel's live re-renders never disturb a run.
import { api, ApiError, reportUnauthorized } from './api.js';
import { h } from './dom.js';
import { formable, schemaForm, validate } from './schema-form.js';
import { appView, callToolResult } from './apps.js';

/** After this long without progress, the status says what the call may be waiting for. */
const QUIET_MS = 2_000;

let drawer;
/** The tool whose playground is open: on close the focus goes back to its Try button. */
let openTool;
/** The run in flight: `{tool, controller, timer, approval, paint}`; closing the drawer or opening another tool cancels it. */
let running;
/** The app shown in the drawer (`appView`), closed with it, on another run, or when another tool opens. */
let shownApp;

function closeApp() {
  shownApp?.close();
  shownApp = undefined;
}

/** Opens the playground on `tool` (a catalog tool: `name`, `original`, `description`, `parameters`) of `server`. */
export function openPlayground(tool, server) {
  openDrawer(tool, view(tool, server));
  const first = drawer.querySelector('.sf-top input, .sf-top select, .sf-top textarea, .pg-json-pane:not([hidden]) textarea');
  (first ?? drawer.querySelector('[data-action="run"]')).focus();
}

/**
 * Opens the drawer on the app of an app-only tool (`ui.visibility` without
 * "model"): no form, no run, since only its app calls it; the app itself.
 */
export function openToolApp(tool, server) {
  const app = appView(tool);
  openDrawer(tool, [
    head(tool, server, 'App of '),
    h(
      'div',
      { class: 'sheet-body pg-body' },
      tool.description ? h('p', { class: 'item-text pg-description' }, tool.description) : null,
      h('p', { class: 'hint' }, 'An app-only tool: a model never sees it; its app calls it. The app runs sandboxed, on its own origin.'),
      app.element,
    ),
  ]);
  shownApp = app;
  drawer.querySelector('[aria-label="Close the playground"]').focus();
}

function openDrawer(tool, nodes) {
  cancelRun();
  closeApp();
  drawer ??= document.body.appendChild(
    h('dialog', { class: 'playground', id: 'playground', 'aria-labelledby': 'playground-title', onkeydown: escCloses, onclose: () => (cancelRun(), closeApp()) }),
  );
  openTool = tool.name;
  drawer.replaceChildren(...nodes);
  if (!drawer.open) drawer.show();
}

/** Closes the playground (and cancels its call); e.g. on sign-out. */
export function closePlayground() {
  cancelRun();
  closeApp();
  const hadFocus = drawer?.contains(document.activeElement);
  drawer?.close();
  drawer?.replaceChildren();
  // The panel re-renders, so the button is found by its key, not kept.
  if (hadFocus && openTool) document.querySelector(`[data-key="${CSS.escape(`try:${openTool}`)}"]`)?.focus();
  openTool = undefined;
}

/**
 * A journal event of the page's stream. `approval.requested` for the tool
 * being run means the call waits for a decision (the journal does not say
 * which call asked, so any approval of that tool during the run counts);
 * `approval.decided` says how the wait ended.
 */
export function playgroundEvent(event) {
  if (!running || event.tool !== running.tool) return;
  if (event.type === 'approval.requested') running.approval = { id: event.id, decision: undefined };
  else if (event.type === 'approval.decided' && running.approval?.id === event.id) running.approval.decision = event.decision;
  else return;
  running.paint();
}

function escCloses(event) {
  if (event.key === 'Escape') {
    event.preventDefault();
    closePlayground();
  }
}

function cancelRun() {
  running?.controller.abort();
}

function view(tool, server) {
  const schema = tool.parameters ?? {};
  const canForm = formable(schema);
  const form = canForm ? schemaForm(schema) : undefined;
  const json = h('textarea', { class: 'pg-json mono', rows: '10', spellcheck: 'false', 'aria-label': 'Arguments as JSON', 'aria-describedby': 'pg-json-error' });
  json.value = '{}';
  const jsonError = h('p', { class: 'field-error', id: 'pg-json-error', role: 'alert' });
  const jsonPane = h('div', { class: 'pg-json-pane', hidden: canForm }, json, jsonError);
  let mode = canForm ? 'form' : 'json';

  const modeButton = (id, text) =>
    h('button', { type: 'button', class: 'button small', 'data-mode': id, 'aria-pressed': String(mode === id), onclick: () => setMode(id) }, text);
  const modes = canForm
    ? h('div', { class: 'pg-modes', role: 'group', 'aria-label': 'Arguments as' }, modeButton('form', 'Form'), modeButton('json', 'JSON'))
    : h('p', { class: 'muted small' }, 'This schema has shapes a form cannot show: write the arguments as JSON.');
  function setMode(next) {
    // Form → JSON carries the form's values over; JSON → form keeps the form as it was.
    if (next === 'json' && mode === 'form') json.value = JSON.stringify(form.read().value, null, 2);
    mode = next;
    for (const b of modes.querySelectorAll('[data-mode]')) b.setAttribute('aria-pressed', String(b.dataset.mode === mode));
    form.element.hidden = mode !== 'form';
    jsonPane.hidden = mode !== 'json';
    form.element.querySelector('.sf-summary').hidden = true;
  }

  /** The arguments to send, or undefined when they were refused (and the reasons shown). */
  function readArguments() {
    if (mode === 'form') {
      const { value, errors } = form.read();
      if (errors.length > 0) form.element.querySelector('.sf-summary').focus();
      return errors.length === 0 ? value : undefined;
    }
    jsonError.textContent = '';
    json.removeAttribute('aria-invalid');
    let value;
    try {
      value = JSON.parse(json.value.trim() === '' ? '{}' : json.value);
    } catch (err) {
      return refuseJson(`Not valid JSON: ${err.message}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return refuseJson('The arguments must be a JSON object.');
    const errors = validate(schema, value);
    if (errors.length > 0) return refuseJson(`Not sent: ${errors.map((e) => (e.path ? `${e.path} ${e.message}` : e.message)).join('; ')}.`);
    return value;
  }
  function refuseJson(text) {
    jsonError.textContent = text;
    json.setAttribute('aria-invalid', 'true');
    json.focus();
    return undefined;
  }

  const run = h('button', { type: 'submit', class: 'button primary', 'data-action': 'run' }, 'Run');
  const cancel = h('button', { type: 'button', class: 'button', 'data-action': 'cancel', hidden: true, onclick: cancelRun }, 'Cancel');
  const status = h('div', { class: 'pg-status', role: 'status', 'aria-live': 'polite' });
  const result = h('section', { class: 'pg-result', 'aria-label': 'Result' });
  const body = h(
    'form',
    {
      class: 'pg-form',
      novalidate: true,
      onsubmit: (event) => {
        event.preventDefault();
        if (running) return;
        const args = readArguments();
        if (args !== undefined) start(tool, args, { run, cancel, status, result });
      },
    },
    modes,
    form?.element,
    jsonPane,
    h('div', { class: 'pg-actions' }, run, cancel),
  );
  return [
    head(tool, server, 'Try '),
    h(
      'div',
      { class: 'sheet-body pg-body' },
      tool.description ? h('p', { class: 'item-text pg-description' }, tool.description) : null,
      h('p', { class: 'hint' }, 'Runs the tool for real, as the model would call it (approvals apply). Closing the playground cancels a running call.'),
      body,
      status,
      result,
    ),
  ];
}

function head(tool, server, title) {
  return h(
    'header',
    { class: 'sheet-head' },
    h(
      'div',
      { class: 'pg-title' },
      h('h2', { id: 'playground-title' }, title, h('code', {}, tool.name)),
      h('p', { class: 'muted small' }, 'on ', h('code', {}, server), tool.original && tool.original !== tool.name ? [' · original ', h('code', {}, tool.original)] : null),
    ),
    h('button', { type: 'button', class: 'icon-button', 'aria-label': 'Close the playground', onclick: closePlayground }, '×'),
  );
}

// ---------------------------------------------------------------- a run

async function start(tool, args, ui) {
  const name = tool.name;
  closeApp();
  const controller = new AbortController();
  const started = Date.now();
  let lastProgress;
  const run = { tool: name, controller, timer: undefined, approval: undefined, paint: () => {} };
  running = run;
  // Focus on Run, which goes away, moves to Cancel, which comes: Esc and Enter keep working.
  const refocusCancel = document.activeElement === ui.run;
  ui.run.hidden = true;
  ui.cancel.hidden = false;
  if (refocusCancel) ui.cancel.focus();
  ui.result.replaceChildren();
  // Each second only the time changes: the rest is rebuilt only when it changes, so a focused Allow keeps its focus.
  let shape;
  const paint = () => {
    const ms = Date.now() - started;
    const next = JSON.stringify([lastProgress, run.approval, ms >= QUIET_MS]);
    if (next !== shape) {
      shape = next;
      ui.status.replaceChildren(...runningStatus(ms, lastProgress, run.approval));
    }
    const elapsed = ui.status.querySelector('.pg-elapsed');
    if (elapsed) elapsed.textContent = seconds(ms);
  };
  run.paint = paint;
  paint();
  run.timer = setInterval(paint, 1000);
  try {
    const answer = await callStream(name, args, controller.signal, (progress) => {
      lastProgress = progress;
      paint();
    });
    ui.status.replaceChildren(h('span', { class: 'pg-done' }, `Answered in ${seconds(Date.now() - started)}.`));
    ui.result.replaceChildren(...resultNodes(answer));
    // A tool with an app shows it above the result, handed this call's arguments and result.
    if (tool.ui?.resource_uri && running === run) {
      shownApp = appView(tool, { input: args, result: callToolResult(answer) });
      ui.result.prepend(shownApp.element);
    }
  } catch (err) {
    if (controller.signal.aborted) {
      // Still waiting for a person, the call never reached the server: there was nothing to stop.
      const what = run.approval !== undefined && run.approval.decision !== 'allow' ? 'the call waited for approval and was not made' : 'the server was told to stop';
      ui.status.replaceChildren(h('span', { class: 'pg-cancelled', 'data-outcome': 'cancelled' }, `Cancelled after ${seconds(Date.now() - started)}; ${what}.`));
    } else {
      ui.status.replaceChildren(h('span', { class: 'pg-failed', 'data-outcome': 'failed' }, `The call did not complete: ${err.message}`));
    }
  } finally {
    clearInterval(run.timer);
    if (running === run) running = undefined;
    // The focus was on Cancel, which goes away: it moves to Run, which comes back.
    const refocus = document.activeElement === ui.cancel;
    ui.run.hidden = false;
    ui.cancel.hidden = true;
    if (refocus) ui.run.focus();
  }
}

const DECIDED = {
  allow: 'Approved: the call runs.',
  deny: 'Denied: the tool was not called.',
  timeout: 'No decision in time: the tool was not called.',
  cancelled: 'The wait for an approval was cancelled.',
};

/** "Running · 3 s", an approval being waited for, the progress bar once there is progress, or what a quiet call may be waiting for. */
function runningStatus(ms, progress, approval) {
  const waiting = approval && approval.decision === undefined;
  const nodes = [
    h(
      'span',
      { class: 'pg-running', 'data-outcome': waiting ? 'approval' : 'running' },
      h('span', { class: 'spinner', 'aria-hidden': 'true' }),
      `${waiting ? 'Waiting for approval' : 'Running'} · `,
      // Not announced: a live region read out every second would drown everything else.
      h('span', { class: 'pg-elapsed', 'aria-hidden': 'true' }, seconds(ms)),
    ),
  ];
  if (approval) {
    nodes.push(
      h(
        'div',
        { class: 'small pg-approval', 'data-approval': approval.id },
        waiting
          ? [
              h('p', {}, 'This tool asks for an approval before it runs; the result comes when it is decided. Decide here or in the approvals panel.'),
              h(
                'div',
                { class: 'pg-decide' },
                h('button', { type: 'button', class: 'button small primary', onclick: () => decide(approval, 'allow') }, 'Allow'),
                h('button', { type: 'button', class: 'button small danger-outline', onclick: () => decide(approval, 'deny') }, 'Deny'),
                approval.error ? h('span', { class: 'pg-failed' }, approval.error) : null,
              ),
            ]
          : (DECIDED[approval.decision] ?? approval.decision),
      ),
    );
  }
  if (progress) {
    const bar = h('progress', { class: 'pg-progress', 'aria-label': 'Progress' });
    if (typeof progress.total === 'number' && progress.total > 0) {
      bar.max = progress.total;
      bar.value = Math.min(progress.progress, progress.total);
    }
    const count = typeof progress.total === 'number' ? `${progress.progress} of ${progress.total}` : String(progress.progress);
    nodes.push(bar, h('span', { class: 'pg-progress-text' }, progress.message ? `${count} · ${progress.message}` : count));
  } else if (ms >= QUIET_MS && !approval) {
    nodes.push(
      h('span', { class: 'muted small pg-waiting' }, 'Waiting for the answer. The server reports no progress; a call that needs an approval waits here until it is given or refused.'),
    );
  }
  return nodes;
}

/** Decides the approval the run waits for, as the approvals panel would; the journal then says how it ended. */
async function decide(approval, decision) {
  try {
    await api(`/api/mcp/approvals/${encodeURIComponent(approval.id)}`, { method: 'POST', body: { decision } });
  } catch (err) {
    // Decided elsewhere meanwhile (404), or the session ended (401: the page asks to sign in).
    if (approval.decision === undefined && err.status !== 401) approval.error = err.message;
    running?.paint();
  }
}

const seconds = (ms) => (ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`);

/**
 * The call as a stream: resolves with the AgentToolResult of the `result`
 * event; `onProgress` gets each `progress` event. Rejects with an ApiError
 * for an error answer, or when the stream ends without a result.
 */
async function callStream(name, args, signal, onProgress) {
  const res = await fetch(`/api/mcp/tools/${encodeURIComponent(name)}/call`, {
    method: 'POST',
    credentials: 'same-origin',
    cache: 'no-store',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ arguments: args }),
    signal,
  });
  if (!res.ok || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const error = (await res.json().catch(() => undefined))?.error ?? {};
    const err = new ApiError(res.status, error.code ?? 'http_error', error.message ?? `HTTP ${res.status}`, error.field);
    if (res.status === 401) reportUnauthorized(err);
    throw err;
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replaceAll('\r\n', '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const message = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (message.event === 'progress') onProgress(JSON.parse(message.data));
      if (message.event === 'result') {
        reader.cancel().catch(() => {});
        return JSON.parse(message.data);
      }
    }
  }
  throw new ApiError(0, 'no_result', 'the worker ended the answer without a result');
}

function parseEvent(block) {
  const message = { event: 'message', data: '' };
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const key = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (key === 'event') message.event = value;
    if (key === 'data') data.push(value);
  }
  message.data = data.join('\n');
  return message;
}

// ---------------------------------------------------------------- the result

/** The result as the agent sees it: its content blocks, then structured content, then the raw JSON. */
function resultNodes(answer) {
  const details = answer?.details ?? {};
  const content = Array.isArray(answer?.content) ? answer.content : [];
  const flags = [
    details.is_error
      ? h('span', { class: 'tag pg-is-error', 'data-is-error': 'true' }, 'is_error: the tool failed')
      : h('span', { class: 'tag available', 'data-is-error': 'false' }, 'ok'),
    details.truncated ? h('span', { class: 'tag' }, 'truncated') : null,
    details.spilled ? h('span', { class: 'tag' }, `spilled: ${details.spilled.id} (${details.spilled.total_bytes} bytes)`) : null,
  ];
  return [
    h('h3', {}, 'Result ', flags),
    content.length === 0 ? h('p', { class: 'muted' }, 'No content.') : h('ol', { class: 'pg-blocks' }, content.map(block)),
    details.structured !== undefined
      ? h('div', { class: 'pg-structured' }, h('h4', {}, 'Structured content'), h('pre', { tabindex: '0' }, JSON.stringify(details.structured, null, 2)))
      : null,
    h('details', { class: 'pg-raw' }, h('summary', {}, 'Raw JSON'), h('pre', { tabindex: '0', 'aria-label': 'Raw result' }, JSON.stringify(answer, null, 2))),
  ].filter(Boolean);
}

/** One content block: text as text, an image shown, audio as a download (the page's CSP plays no data: media). */
function block(b) {
  if (b?.type === 'text') return h('li', { class: 'pg-block', 'data-type': 'text' }, h('pre', { class: 'pg-text' }, b.text));
  if ((b?.type === 'image' || b?.type === 'audio') && typeof b.data === 'string' && /^[A-Za-z0-9+/=\s]*$/.test(b.data)) {
    const mime = /^[\w.+-]+\/[\w.+-]+$/.test(b.mimeType ?? '') ? b.mimeType : 'application/octet-stream';
    const url = `data:${mime};base64,${b.data.replace(/\s/g, '')}`;
    const size = `${mime}, ${Math.floor((b.data.length * 3) / 4)} bytes`;
    if (b.type === 'image') {
      return h('li', { class: 'pg-block', 'data-type': 'image' }, h('img', { class: 'pg-image', src: url, alt: `Image returned by the tool (${size})` }), h('p', { class: 'muted small' }, size));
    }
    return h('li', { class: 'pg-block', 'data-type': 'audio' }, 'Audio ', h('a', { href: url, download: `audio.${mime.split('/')[1]}` }, `download (${size})`));
  }
  return h('li', { class: 'pg-block', 'data-type': 'other' }, h('pre', {}, JSON.stringify(b, null, 2)));
}
