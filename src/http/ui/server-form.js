// The add and edit forms (docs/credentials.md). Secret inputs always open empty: the page
// only ever knows a secret's name and mask. On edit, an untouched secret is
// left out of the PATCH (the worker keeps it), a typed one replaces it, and
// "Remove" sends null. Errors are shown next to the field the API names.
import { addServer, ApiError, patchServer } from './api.js';
import { $, $$, AUTH_KIND_LABELS, h } from './dom.js';

let uid = 0;
const nextId = (base) => `${base.replace(/[^A-Za-z0-9_-]/g, '-')}-${++uid}`;

/** One labelled control with its hint and the slot its error goes into. */
function field(path, labelText, control, hint) {
  const id = control.id || (control.id = nextId(`f-${path}`));
  const hintEl = hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null;
  const error = h('p', { class: 'field-error', id: `${id}-error`, 'data-error-for': path });
  control.setAttribute('aria-describedby', [hintEl?.id, error.id].filter(Boolean).join(' '));
  return h('div', { class: 'field', 'data-field': path }, h('label', { for: id }, labelText), control, hintEl, error);
}

const input = (attrs = {}) => h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', ...attrs });
const list = (text) => text.split(',').map((s) => s.trim()).filter(Boolean);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const KEEP_PLACEHOLDER = 'Unchanged — type to replace';
/** The number fields: config key → control name. */
const LIMITS = [
  ['timeout_seconds', 'timeout'],
  ['call_timeout_seconds', 'callTimeout'],
  ['max_concurrent_calls', 'maxCalls'],
];

/** A number input's value: a number when it reads as one, else the text, so the API can say what is wrong. */
function numberOf(el) {
  const raw = el.value.trim();
  if (raw === '') return undefined;
  const n = Number(raw);
  return Number.isFinite(n) ? n : raw;
}

/**
 * One stored-or-new secret (auth.token, auth.client_secret). `stored`: is a
 * value stored, and its mask. `patch()` → undefined (keep), a string, or null.
 */
function secretField(path, labelText, stored, { removable = true } = {}) {
  const control = input({ type: 'password', autocomplete: 'new-password', placeholder: stored?.has ? KEEP_PLACEHOLDER : '' });
  let removed = false;
  const state = stored?.has ? h('span', { class: 'secret-state' }, 'stored ', h('code', {}, stored.masked ?? '••••')) : null;
  // A secret its kind requires (a bearer token) is replaced, never removed: another kind of auth drops it.
  const remove = stored?.has && removable
    ? h(
        'button',
        { type: 'button', class: 'button small ghost', 'aria-pressed': 'false', 'aria-label': `Remove ${labelText}`, onclick: toggle },
        'Remove',
      )
    : null;
  function toggle() {
    removed = !removed;
    control.disabled = removed;
    if (removed) control.value = '';
    remove.setAttribute('aria-pressed', String(removed));
    remove.textContent = removed ? 'Undo remove' : 'Remove';
    remove.setAttribute('aria-label', removed ? `Keep ${labelText}` : `Remove ${labelText}`);
    state.replaceChildren(...(removed ? ['will be removed on save'] : ['stored ', h('code', {}, stored.masked ?? '••••')]));
    wrap.classList.toggle('removed', removed);
  }
  const wrap = field(path, labelText, control);
  if (state) wrap.querySelector('label').after(state);
  if (remove) control.after(remove);
  return {
    el: wrap,
    value: () => (control.value === '' ? undefined : control.value),
    patch: () => (removed ? null : control.value === '' ? undefined : control.value),
  };
}

/**
 * `env` or `headers`: the stored keys (names and masks only) plus new rows.
 * `values()` for a POST; `patch()` for a PATCH, undefined when untouched.
 */
function secretMap(path, legend, stored, noun) {
  const rows = h('div', { class: 'secret-rows' });
  const storedRows = Object.entries(stored ?? {}).map(([key, secret]) => storedRow(path, key, secret));
  const newRows = [];
  rows.append(...storedRows.map((row) => row.el));
  const add = h('button', { type: 'button', class: 'button small', onclick: addRow }, `Add ${noun}`);
  function addRow() {
    const row = newRow(path, noun, () => {
      newRows.splice(newRows.indexOf(row), 1);
      row.el.remove();
      add.focus();
    });
    newRows.push(row);
    rows.append(row.el);
    row.focus();
  }
  const hint = storedRows.length > 0 ? 'Stored values are never shown. Leave a value empty to keep it.' : null;
  const el = h(
    'fieldset',
    { class: 'field secret-map', 'data-field': path },
    h('legend', {}, legend),
    hint && h('p', { class: 'hint' }, hint),
    rows,
    h('p', { class: 'field-error', 'data-error-for': path }),
    add,
  );
  return {
    el,
    /** A new row with a value but no name: said on that row rather than dropped with what was typed. */
    problem() {
      const row = newRows.find((each) => each.key() === '' && each.value() !== '');
      return row && { row, message: `a ${noun} needs a NAME; or Discard it` };
    },
    values() {
      const out = {};
      for (const row of newRows) if (row.key() !== '') out[row.key()] = row.value();
      return out;
    },
    patch() {
      const out = {};
      for (const row of storedRows) {
        const change = row.patch();
        if (change !== undefined) out[row.key] = change;
      }
      for (const row of newRows) if (row.key() !== '') out[row.key()] = row.value();
      return Object.keys(out).length > 0 ? out : undefined;
    },
  };
}

function storedRow(path, key, secret) {
  const id = nextId(`${path}-${key}`);
  const value = input({ type: 'password', id, autocomplete: 'new-password', placeholder: KEEP_PLACEHOLDER });
  const storedState = () => (secret.has_value ? ['stored ', h('code', {}, secret.masked)] : ['empty']);
  const state = h('span', { class: 'secret-state' }, storedState());
  const error = h('p', { class: 'field-error', id: `${id}-error`, 'data-error-for': `${path}.${key}` });
  value.setAttribute('aria-describedby', error.id);
  let removed = false;
  const remove = h(
    'button',
    { type: 'button', class: 'button small ghost', 'aria-pressed': 'false', 'aria-label': `Remove ${key}` },
    'Remove',
  );
  const el = h(
    'div',
    { class: 'secret-row', 'data-field': `${path}.${key}` },
    h('div', { class: 'secret-name' }, h('label', { for: id }, h('code', {}, key)), state),
    value,
    remove,
    error,
  );
  remove.addEventListener('click', () => {
    removed = !removed;
    value.disabled = removed;
    if (removed) value.value = '';
    remove.setAttribute('aria-pressed', String(removed));
    remove.textContent = removed ? 'Undo' : 'Remove';
    remove.setAttribute('aria-label', removed ? `Keep ${key}` : `Remove ${key}`);
    state.replaceChildren(...(removed ? ['will be removed on save'] : storedState()));
    el.classList.toggle('removed', removed);
  });
  return { el, key, patch: () => (removed ? null : value.value === '' ? undefined : value.value) };
}

function newRow(path, noun, discard) {
  const keyInput = input({ class: 'secret-key-input', placeholder: 'NAME', 'aria-label': `New ${noun} name`, 'data-part': 'key' });
  const value = input({ type: 'password', autocomplete: 'new-password', placeholder: 'value', 'aria-label': `New ${noun} value`, 'data-part': 'value' });
  const error = h('p', { class: 'field-error', id: nextId(`${path}-new-error`), 'data-error-for': '' });
  // Either input's problem is read out when focus lands on it.
  keyInput.setAttribute('aria-describedby', error.id);
  value.setAttribute('aria-describedby', error.id);
  const el = h(
    'div',
    { class: 'secret-row new' },
    keyInput,
    value,
    h('button', { type: 'button', class: 'button small ghost', 'aria-label': `Discard new ${noun}`, onclick: discard }, 'Discard'),
    error,
  );
  // The row answers for its key, so a 400 on `env.NAME` lands here.
  keyInput.addEventListener('input', () => {
    el.setAttribute('data-field', `${path}.${keyInput.value.trim()}`);
    error.setAttribute('data-error-for', `${path}.${keyInput.value.trim()}`);
  });
  return { el, error, key: () => keyInput.value.trim(), value: () => value.value, focus: () => keyInput.focus() };
}

/** The form's controls for `config` (the masked one on edit, defaults on add). */
function buildControls(config, editing) {
  const auth = config.auth ?? { kind: 'none' };
  const c = {};
  c.name = input({ name: 'name', value: config.name ?? '', disabled: editing, required: true });
  const type = config.type ?? 'local';
  const radio = (value) =>
    h('input', { type: 'radio', name: 'type', value, id: nextId(`type-${value}`), checked: type === value, disabled: editing });
  c.typeLocal = radio('local');
  c.typeRemote = radio('remote');
  c.command = h('textarea', { rows: '3', spellcheck: 'false', autocomplete: 'off', class: 'mono' });
  c.command.value = (config.command ?? []).join('\n');
  c.cwd = input({ value: config.cwd ?? '', class: 'mono' });
  c.env = secretMap('env', 'Environment variables', config.env, 'variable');
  c.url = input({ type: 'url', value: config.url ?? '', placeholder: 'https://example.com/mcp', class: 'mono' });
  c.transport = h(
    'select',
    {},
    [['auto', 'Auto (Streamable HTTP, then SSE)'], ['streamable_http', 'Streamable HTTP'], ['sse', 'SSE']].map(([value, text]) =>
      h('option', { value, selected: (config.transport ?? 'auto') === value }, text),
    ),
  );
  c.headers = secretMap('headers', 'Headers', config.headers, 'header');
  c.authKind = h(
    'select',
    {},
    authKinds(auth.kind).map(([value, text]) => h('option', { value, selected: auth.kind === value }, text)),
  );
  const storedToken = auth.kind === 'bearer' ? { has: auth.has_token, masked: auth.token_masked } : undefined;
  c.token = secretField('auth.token', 'Token', storedToken, { removable: false });
  c.clientId = input({ value: auth.client_id ?? '', class: 'mono' });
  c.clientSecret = secretField(
    'auth.client_secret',
    'Client secret',
    auth.kind === 'oauth' ? { has: auth.has_client_secret, masked: auth.client_secret_masked } : undefined,
  );
  c.scopes = input({ value: (auth.scopes ?? []).join(' ') });
  c.callbackPort = input({ type: 'number', min: '1', max: '65535', value: auth.callback_port ?? '' });
  c.dpop = h('input', { type: 'checkbox', id: nextId('dpop'), checked: auth.dpop === true });
  c.enabled = h('input', { type: 'checkbox', id: nextId('enabled'), checked: config.enabled !== false });
  c.timeout = input({ type: 'number', min: '1', step: 'any', value: config.timeout_seconds ?? '', placeholder: '60' });
  c.callTimeout = input({ type: 'number', min: '1', step: 'any', value: config.call_timeout_seconds ?? '', placeholder: '120' });
  c.maxCalls = input({ type: 'number', min: '1', step: '1', value: config.max_concurrent_calls ?? '', placeholder: '16' });
  c.maxAge = input({ type: 'number', min: '1', step: 'any', value: config.catalog_max_age_seconds ?? '' });
  c.include = input({ value: (config.tools?.include ?? []).join(', '), class: 'mono' });
  c.exclude = input({ value: (config.tools?.exclude ?? []).join(', '), class: 'mono' });
  return c;
}

function layout(c, editing) {
  const typeField = h(
    'fieldset',
    { class: 'field type-choice', 'data-field': 'type' },
    h('legend', {}, 'Type'),
    h('label', { class: 'choice', for: c.typeLocal.id }, c.typeLocal, ' Local (stdio process)'),
    h('label', { class: 'choice', for: c.typeRemote.id }, c.typeRemote, ' Remote (HTTP)'),
    h('p', { class: 'field-error', 'data-error-for': 'type' }),
  );
  const local = h(
    'div',
    { class: 'group', 'data-group': 'local' },
    field('command', 'Command', c.command, 'One argument per line. It is run directly, never through a shell.'),
    field('cwd', 'Working directory', c.cwd, 'Optional. Default: where the worker runs.'),
    c.env.el,
  );
  const bearer = h('div', { class: 'group', 'data-group': 'bearer' }, c.token.el);
  const oauth = h(
    'div',
    { class: 'group', 'data-group': 'oauth' },
    field('auth.client_id', 'Client ID', c.clientId, 'Optional. Empty: dynamic client registration.'),
    c.clientSecret.el,
    field('auth.scopes', 'Scopes', c.scopes, 'Space-separated.'),
    field('auth.callback_port', 'Callback port', c.callbackPort, 'Optional. Empty: a free port, picked once.'),
    h(
      'div',
      { class: 'field', 'data-field': 'auth.dpop' },
      h('label', { class: 'choice', for: c.dpop.id }, c.dpop, ' DPoP-bound tokens (RFC 9449)'),
      h('p', { class: 'field-error', 'data-error-for': 'auth.dpop' }),
    ),
  );
  const remote = h(
    'div',
    { class: 'group', 'data-group': 'remote' },
    field('url', 'URL', c.url),
    field('transport', 'Transport', c.transport),
    c.headers.el,
    field('auth.kind', 'Authentication', c.authKind),
    bearer,
    oauth,
  );
  const enabled = h(
    'div',
    { class: 'field check', 'data-field': 'enabled' },
    h('label', { class: 'choice', for: c.enabled.id }, c.enabled, ' Enabled'),
    h('p', { class: 'hint' }, 'A disabled server stays configured but is never started.'),
    h('p', { class: 'field-error', 'data-error-for': 'enabled' }),
  );
  const limits = h(
    'details',
    { class: 'limits' },
    h('summary', {}, 'Limits and tool filter'),
    h(
      'div',
      { class: 'grid-3' },
      field('timeout_seconds', 'Connect timeout (s)', c.timeout),
      field('call_timeout_seconds', 'Call timeout (s)', c.callTimeout),
      field('max_concurrent_calls', 'Concurrent calls', c.maxCalls),
    ),
    field(
      'catalog_max_age_seconds',
      'Catalog max age (s)',
      c.maxAge,
      'Optional. Tools, resources and prompts listed longer ago than this are listed again when next read, for a server whose changes do not arrive. Empty: rely on its announcements.',
    ),
    field('tools.include', 'Only these tools', c.include, 'Original tool names, comma-separated. Empty: all tools.'),
    field('tools.exclude', 'Never these tools', c.exclude, 'Original tool names, comma-separated.'),
  );
  const nameHint = editing ? 'A server cannot be renamed.' : 'Letters, digits, _ and -. Tools are named name__tool.';
  const nameField = field('name', 'Name', c.name, nameHint);
  return { fields: [nameField, typeField, local, remote, enabled, limits], groups: { local, remote, bearer, oauth } };
}

/** Shows the groups that apply to the chosen type and auth kind. */
function syncGroups(c, groups) {
  const remote = c.typeRemote.checked;
  groups.local.hidden = remote;
  groups.remote.hidden = !remote;
  groups.bearer.hidden = c.authKind.value !== 'bearer';
  groups.oauth.hidden = c.authKind.value !== 'oauth';
}

/** POST body of the add form. */
function addBody(c) {
  const body = { name: c.name.value.trim(), type: c.typeRemote.checked ? 'remote' : 'local' };
  if (body.type === 'local') {
    body.command = c.command.value.split('\n').map((s) => s.trim()).filter(Boolean);
    if (c.cwd.value.trim() !== '') body.cwd = c.cwd.value.trim();
    const env = c.env.values();
    if (Object.keys(env).length > 0) body.env = env;
  } else {
    body.url = c.url.value.trim();
    body.transport = c.transport.value;
    const headers = c.headers.values();
    if (Object.keys(headers).length > 0) body.headers = headers;
    body.auth = { kind: c.authKind.value };
    if (c.authKind.value === 'bearer') body.auth.token = c.token.value();
    if (c.authKind.value === 'oauth') Object.assign(body.auth, oauthFields(c, c.clientSecret.value()));
  }
  body.enabled = c.enabled.checked;
  for (const [key, control] of LIMITS) {
    const n = numberOf(c[control]);
    if (n !== undefined) body[key] = n;
  }
  const maxAge = numberOf(c.maxAge);
  if (maxAge !== undefined) body.catalog_max_age_seconds = maxAge;
  const include = list(c.include.value);
  const exclude = list(c.exclude.value);
  if (include.length > 0 || exclude.length > 0) body.tools = { include: include.length > 0 ? include : null, exclude };
  return body;
}

function oauthFields(c, secret) {
  const out = { scopes: c.scopes.value.split(/\s+/).filter(Boolean) };
  if (c.clientId.value.trim() !== '') out.client_id = c.clientId.value.trim();
  if (secret !== undefined) out.client_secret = secret;
  const port = numberOf(c.callbackPort);
  if (port !== undefined) out.callback_port = port;
  if (c.dpop.checked) out.dpop = true;
  return out;
}

/** PATCH body of the edit form: only what differs from `config`; secrets only when typed or removed. */
function patchBody(c, config) {
  const patch = {};
  if (config.type === 'local') {
    const command = c.command.value.split('\n').map((s) => s.trim()).filter(Boolean);
    if (!same(command, config.command)) patch.command = command;
    const cwd = c.cwd.value.trim() === '' ? null : c.cwd.value.trim();
    if (cwd !== config.cwd) patch.cwd = cwd;
    const env = c.env.patch();
    if (env) patch.env = env;
  } else {
    if (c.url.value.trim() !== config.url) patch.url = c.url.value.trim();
    if (c.transport.value !== config.transport) patch.transport = c.transport.value;
    const headers = c.headers.patch();
    if (headers) patch.headers = headers;
    const auth = authPatch(c, config.auth);
    if (Object.keys(auth).length > 0) patch.auth = auth;
  }
  if (c.enabled.checked !== config.enabled) patch.enabled = c.enabled.checked;
  for (const [key, control] of LIMITS) {
    // Emptied: back to the default the placeholder shows (a PATCH sets a value; the file then leaves it out).
    const n = numberOf(c[control]) ?? Number(c[control].placeholder);
    if (n !== config[key]) patch[key] = n;
  }
  // Emptied: back to no age limit.
  const maxAge = numberOf(c.maxAge) ?? null;
  if (maxAge !== (config.catalog_max_age_seconds ?? null)) patch.catalog_max_age_seconds = maxAge;
  const include = list(c.include.value);
  const tools = {};
  if (!same(include.length > 0 ? include : null, config.tools?.include ?? null)) tools.include = include.length > 0 ? include : null;
  if (!same(list(c.exclude.value), config.tools?.exclude ?? [])) tools.exclude = list(c.exclude.value);
  if (Object.keys(tools).length > 0) patch.tools = tools;
  return patch;
}

/**
 * The auth kinds the form offers. Machine-to-machine credentials are set in
 * the file or the API; a server that has them keeps them (the form shows the
 * kind and changes nothing of it) unless another kind is chosen.
 */
function authKinds(stored) {
  const kinds = ['none', 'bearer', 'oauth'].map((kind) => [kind, AUTH_KIND_LABELS[kind]]);
  if (!kinds.some(([kind]) => kind === stored) && Object.hasOwn(AUTH_KIND_LABELS, stored)) kinds.push([stored, `${AUTH_KIND_LABELS[stored]} (kept; edit in the file or API)`]);
  return kinds;
}

function authPatch(c, stored) {
  const kind = c.authKind.value;
  if (kind !== stored.kind) {
    // A new kind starts from scratch; the worker drops the old kind's secret.
    if (kind === 'bearer') return { kind, token: c.token.value() };
    if (kind === 'oauth') return { kind, ...oauthFields(c, c.clientSecret.value()) };
    return { kind };
  }
  const out = {};
  if (kind === 'bearer') {
    const token = c.token.patch();
    if (token !== undefined) out.token = token;
  }
  if (kind === 'oauth') {
    const clientId = c.clientId.value.trim() === '' ? null : c.clientId.value.trim();
    if (clientId !== stored.client_id) out.client_id = clientId;
    const secret = c.clientSecret.patch();
    if (secret !== undefined) out.client_secret = secret;
    const scopes = c.scopes.value.split(/\s+/).filter(Boolean);
    if (!same(scopes, stored.scopes)) out.scopes = scopes;
    const port = numberOf(c.callbackPort) ?? null;
    if (port !== stored.callback_port) out.callback_port = port;
    if (c.dpop.checked !== (stored.dpop === true)) out.dpop = c.dpop.checked;
  }
  return out;
}

/** The wrapper answering for `path` (`env.KEY`, `auth.token`, `command.0`…), most specific first. */
function wrapperFor(form, path) {
  let current = path ?? '';
  while (current !== '') {
    for (const el of $$(`[data-field="${CSS.escape(current)}"]`, form)) if (!el.closest('[hidden]')) return el;
    const dot = current.lastIndexOf('.');
    current = dot < 0 ? '' : current.slice(0, dot);
  }
  return undefined;
}

/** The number inputs by the field they answer for. */
const NUMBER_FIELDS = [
  ...LIMITS.map(([key, control]) => [key, control]),
  ['catalog_max_age_seconds', 'maxAge'],
  ['auth.callback_port', 'callbackPort'],
];

/**
 * A problem the form can tell before sending: a number input holding what is
 * not a number (the browser then reads it as empty, which would drop it), or a
 * new variable or header with a value but no name.
 */
function formProblem(c) {
  for (const [path, control] of NUMBER_FIELDS) {
    if (c[control].validity?.badInput && !c[control].closest('[hidden]')) return { field: path, message: 'is not a number' };
  }
  for (const map of [c.env, c.headers]) {
    const problem = !map.el.closest('[hidden]') && map.problem();
    if (problem) return problem;
  }
  return undefined;
}

function showProblem(form, problem) {
  if (problem.row) {
    problem.row.error.textContent = problem.message;
    const key = $('[data-part="key"]', problem.row.el);
    key.setAttribute('aria-invalid', 'true');
    key.focus();
    return;
  }
  showError(form, { field: problem.field, message: problem.message });
}

function clearErrors(form) {
  for (const slot of $$('.field-error, .form-error', form)) slot.textContent = '';
  for (const el of $$('[aria-invalid]', form)) el.removeAttribute('aria-invalid');
  $('.form-error', form).hidden = true;
}

function showError(form, err) {
  const field = err.field ?? (err.code === 'conflict' ? 'name' : undefined);
  const wrapper = field ? wrapperFor(form, field) : undefined;
  if (wrapper) {
    const own = `[data-error-for="${CSS.escape(wrapper.getAttribute('data-field'))}"]`;
    const slot = wrapper.querySelector(own) ?? wrapper.querySelector('.field-error');
    // The API prefixes the path ("env.K: …"); next to the field it is redundant.
    slot.textContent = err.message.startsWith(`${err.field}: `) ? err.message.slice(err.field.length + 2) : err.message;
    // In a new row, a problem of the key ("key must be…") is the name's; any other is the value's.
    const part = slot.textContent.startsWith('key ') ? 'key' : 'value';
    const control =
      wrapper.querySelector(`input[data-part="${part}"]`) ??
      wrapper.querySelector('input:not([type=radio]):not(:disabled), textarea, select') ??
      wrapper.querySelector('input');
    control?.setAttribute('aria-invalid', 'true');
    wrapper.closest('details')?.setAttribute('open', '');
    control?.focus();
    return;
  }
  const box = $('.form-error', form);
  box.textContent =
    // The worker's message already says the server failed to start, and its kind.
    err.code === 'start_failed' ? `${err.message.replace(/\.$/, '')}. Nothing was saved.` : err.message;
  box.hidden = false;
  box.focus();
}

/**
 * Opens the add form (no `entry`) or the edit form of `entry` in `dialog`.
 * Resolves with `{saved: ServerView}`, `{unchanged: true}`, or undefined when cancelled.
 */
export function openServerForm(dialog, entry) {
  const editing = entry !== undefined;
  const config = editing ? { name: entry.name, ...entry.config } : { type: 'local', enabled: true };
  const c = buildControls(config, editing);
  const { fields, groups } = layout(c, editing);
  const title = editing ? `Edit ${entry.name}` : 'Add server';
  const submit = h('button', { type: 'submit', class: 'button primary' }, editing ? 'Save changes' : 'Add server');
  const cancel = h('button', { type: 'button', class: 'button' }, 'Cancel');
  const form = h(
    'form',
    { novalidate: true, class: 'server-form' },
    h(
      'header',
      { class: 'sheet-head' },
      h('h2', { id: 'server-form-title' }, title),
      h('button', { type: 'button', class: 'icon-button', 'aria-label': 'Close', 'data-close': '' }, '×'),
    ),
    h('div', { class: 'sheet-body' }, h('p', { class: 'form-error', role: 'alert', tabindex: '-1', hidden: true }), fields),
    h('footer', { class: 'sheet-foot' }, cancel, submit),
  );
  syncGroups(c, groups);
  for (const el of [c.typeLocal, c.typeRemote, c.authKind]) el.addEventListener('change', () => syncGroups(c, groups));
  dialog.replaceChildren(form);

  return new Promise((resolve) => {
    let result;
    // Whatever was typed (secrets included) leaves the DOM with the form.
    const finish = (value) => {
      result = value;
      dialog.close();
    };
    dialog.addEventListener('close', function cleared() {
      dialog.removeEventListener('close', cleared);
      dialog.replaceChildren();
      resolve(result);
    });
    cancel.addEventListener('click', () => finish(undefined));
    $('[data-close]', form).addEventListener('click', () => finish(undefined));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      clearErrors(form);
      // What the browser cannot hand over is said here, before anything is sent or lost.
      const problem = formProblem(c);
      if (problem) return showProblem(form, problem);
      const body = editing ? patchBody(c, entry.config) : addBody(c);
      if (editing && Object.keys(body).length === 0) return finish({ unchanged: true });
      submit.disabled = true;
      submit.setAttribute('aria-busy', 'true');
      const idle = submit.textContent;
      submit.textContent = editing ? 'Saving…' : 'Starting…';
      try {
        const saved = editing ? await patchServer(entry.name, body) : await addServer(body);
        finish({ saved });
      } catch (err) {
        showError(form, err instanceof ApiError ? err : new ApiError(0, 'network', 'The worker could not be reached.'));
      } finally {
        submit.disabled = false;
        submit.removeAttribute('aria-busy');
        submit.textContent = idle;
      }
    });
    dialog.showModal();
    const first = !editing ? c.name : config.type === 'remote' ? c.url : c.command;
    first.focus();
  });
}
