// The panel of one server: actions, last error, and what it offers (tools,
// resources, prompts), its masked configuration, and its lifecycle diagram.
import { AUTH_KIND_LABELS, ago, badge, h, label, shownState } from './dom.js';
import { tablist } from './tabs.js';
import { inputsPanel } from './user-inputs.js';

const TABS = [
  ['tools', 'Tools'],
  ['resources', 'Resources'],
  ['prompts', 'Prompts'],
  ['config', 'Configuration'],
  ['lifecycle', 'Lifecycle'],
];

/**
 * The panel's nodes for `entry` (a catalog entry). `ctx`: `offline` (the
 * worker cannot be reached: its states are not known now), `tab` and
 * `setTab(id)`, `busy` (action in flight or undefined), `notice`
 * (`{kind, text}` or undefined), `diagram` (the parsed SVG document or
 * undefined), and the action callbacks `edit`, `toggle`, `restart`,
 * `remove`, `signIn`, `tryTool(tool)` (opens the playground on a tool) and
 * `openApp(tool)` (opens the app of an app-only tool).
 */
export function detailNodes(entry, ctx) {
  const perUser = entry.config.scope === 'per_user' && Object.keys(entry.config.user_inputs ?? {}).length > 0;
  return [head(entry, ctx), notice(ctx.notice), lastError(entry), perUser && inputsPanel(entry.name), tabs(entry, ctx)].filter(Boolean);
}

/** What the panel shows when no server is selected. */
export function emptyDetail(hasServers) {
  return [
    h(
      'div',
      { class: 'placeholder' },
      h('h2', {}, hasServers ? 'Select a server' : 'No servers'),
      h(
        'p',
        { class: 'muted' },
        hasServers ? 'Its tools, resources, prompts, configuration and lifecycle show here.' : 'Add a server to see its tools here.',
      ),
    ),
  ];
}

function head(entry, ctx) {
  const enabled = entry.config.enabled !== false;
  const busy = ctx.busy;
  // aria-disabled, not disabled: a disabled button drops keyboard focus, and
  // the user should still be on Restart when the restart is done.
  const action = (key, text, busyText, onclick, extra = {}) =>
    h(
      'button',
      {
        type: 'button',
        class: `button ${extra.class ?? ''}`,
        'data-key': `action:${key}`,
        'aria-disabled': busy !== undefined ? 'true' : null,
        'aria-busy': busy === key ? 'true' : null,
        onclick: () => busy === undefined && onclick(),
      },
      busy === key ? busyText : text,
    );
  const oauth = entry.auth?.kind === 'oauth';
  // A per_user OAuth server has no grant of its own: each signed-in user (the admin too) connects their own account.
  const ownGrant = oauth && entry.config.scope === 'per_user';
  return h(
    'div',
    { class: 'detail-head' },
    h(
      'div',
      { class: 'detail-title' },
      h('h2', { id: 'detail-title' }, entry.name),
      badge(ctx.offline ? 'unknown' : shownState(entry)),
      h(
        'p',
        { class: 'meta' },
        summary(entry),
        ' · ',
        ctx.offline ? 'the worker cannot be reached; last known: ' : null,
        h('span', { 'data-since': '', title: entry.since }, sinceText(entry)),
      ),
    ),
    h(
      'div',
      { class: 'actions', role: 'group', 'aria-label': `Actions for ${entry.name}` },
      action('edit', 'Edit', 'Edit', ctx.edit),
      action('toggle', enabled ? 'Disable' : 'Enable', enabled ? 'Disabling…' : 'Enabling…', ctx.toggle),
      // A disabled server has nothing to restart: Enable starts it.
      enabled && action('restart', 'Restart', 'Restarting…', ctx.restart),
      oauth && !ownGrant && action('signin', 'Sign in', 'Signing in…', ctx.signIn, { class: entry.state === 'needs_reauth' ? 'primary' : '' }),
      action('delete', 'Delete', 'Deleting…', ctx.remove, { class: 'danger-outline' }),
    ),
    ownGrant &&
      h(
        'div',
        { class: 'actions', role: 'group', 'aria-label': `Your account on ${entry.name}` },
        action('connect', 'Connect / Reconnect', 'Connecting…', ctx.signIn, { class: 'primary' }),
      ),
  );
}

function summary(entry) {
  const config = entry.config;
  if (config.type === 'remote') return `Remote · ${config.url}`;
  return `Local · ${(config.command ?? []).join(' ')}`;
}

/** "ready since 2 min ago": when the server entered its current state. */
export function sinceText(entry) {
  return `${label(shownState(entry))} since ${ago(entry.since)}`;
}

function notice(n) {
  if (!n) return null;
  return h('p', { class: `notice ${n.kind}`, role: n.kind === 'error' ? 'alert' : 'status' }, n.text);
}

function lastError(entry) {
  if (!entry.error) return null;
  return h(
    'div',
    { class: 'error-box', role: 'note', 'aria-label': 'Last error' },
    h('p', { class: 'error-title' }, 'Last error', entry.error_kind ? h('span', { class: 'kind' }, entry.error_kind) : null),
    h('p', { class: 'error-text' }, entry.error),
  );
}

function tabs(entry, ctx) {
  const counts = {
    tools: entry.tools.length,
    resources: entry.resources === null ? null : entry.resources.length + templatesOf(entry).length,
    prompts: entry.prompts === null ? null : entry.prompts.length,
  };
  const active = TABS.some(([id]) => id === ctx.tab) ? ctx.tab : 'tools';
  const list = h(
    'div',
    { role: 'tablist', 'aria-label': `${entry.name} details`, class: 'subtabs' },
    TABS.map(([id, text]) =>
      h(
        'button',
        {
          type: 'button',
          role: 'tab',
          id: `subtab-${id}`,
          'data-key': `subtab:${id}`,
          'data-tab': id,
          'aria-selected': String(id === active),
          'aria-controls': 'subpanel',
          tabindex: id === active ? '0' : '-1',
        },
        text,
        id in counts ? count(counts[id], entry.state === 'ready') : null,
      ),
    ),
  );
  tablist(list, (id) => ctx.setTab(id));
  const panel = h(
    'div',
    { role: 'tabpanel', id: 'subpanel', 'aria-labelledby': `subtab-${active}`, class: 'subpanel' },
    panelFor(active, entry, ctx),
  );
  return h('div', { class: 'detail-tabs' }, list, panel);
}

/** A tab's count; a kind not listed has none to show: "…" while a ready server's listing is coming, else nothing. */
function count(n, ready) {
  if (n !== null) return h('span', { class: 'count' }, String(n));
  return ready ? h('span', { class: 'count', title: 'not listed yet' }, '…') : null;
}

function panelFor(tab, entry, ctx) {
  switch (tab) {
    case 'resources':
      return resources(entry);
    case 'prompts':
      return prompts(entry);
    case 'config':
      return configView(entry);
    case 'lifecycle':
      return diagram(entry, ctx);
    default:
      return tools(entry, ctx);
  }
}

function empty(text) {
  return h('p', { class: 'empty' }, text);
}

/** Why the list is empty, as a sentence about the server's state. */
function notReady(entry, what) {
  switch (shownState(entry)) {
    case 'per_user':
      return `Each person has a session of their own here: its ${what} show once a first call (yours or anyone's) opens one.`;
    case 'ready':
      return `This server offers no ${what}.`;
    case 'pending':
      return `The server is starting: its ${what} show once it is ready.`;
    case 'authenticating':
      return `The server is signing in: its ${what} show once it is ready.`;
    case 'needs_reauth':
      return `The server needs you to sign in again before it offers its ${what}.`;
    case 'error':
      // A start that failed, or a connection that ended after it was ready (transport_closed).
      return entry.error_kind === 'transport_closed'
        ? `The server's connection ended, so it offers no ${what} now. The last error above says why.`
        : `The server failed to start, so it offers no ${what} now. The last error above says why.`;
    case 'disabled':
      return `The server is disabled: enable it to see its ${what}.`;
    case 'stopped':
      return `The server has stopped and offers no ${what}.`;
    default:
      return `The server offers no ${what} in its current state (${label(entry.state)}).`;
  }
}

function tools(entry, ctx) {
  if (entry.tools.length === 0 && shownState(entry) === 'per_user' && !ctx.offline) {
    // Nobody's call has opened a session yet: the caller's own lists them now.
    const busy = ctx.busy === 'list';
    return h(
      'div',
      { class: 'empty' },
      h('p', {}, 'Each person has a session of their own here: list its tools through yours, or make a first call.'),
      h(
        'button',
        { type: 'button', class: 'button small', 'data-key': 'action:list-own', 'aria-busy': busy ? 'true' : null, onclick: () => !busy && ctx.listOwnTools() },
        busy ? 'Listing…' : 'List my tools',
      ),
    );
  }
  if (entry.tools.length === 0) return empty(notReady(entry, 'tools'));
  return h(
    'ul',
    { class: 'item-list', 'aria-label': 'Tools' },
    entry.tools.map((tool) =>
      h(
        'li',
        // Focusable by script only: the tools view's search opens a tool here.
        { class: 'item', 'data-tool': tool.name, 'data-key': `tool:${tool.name}`, tabindex: '-1' },
        h(
          'div',
          { class: 'item-head' },
          h('code', { class: 'item-name' }, tool.name),
          tool.original !== tool.name ? h('span', { class: 'muted small' }, 'original ', h('code', {}, tool.original)) : null,
          approvalTag(approvalOf(entry, tool)),
          appTag(tool),
          // An app-only tool is called by its app alone: it opens the app, never the playground.
          tool.model_visible === false
            ? ctx.openApp && tool.ui?.resource_uri && approvalOf(entry, tool) !== 'deny'
              ? h('button', { type: 'button', class: 'button small open-app', 'data-key': `app:${tool.name}`, 'aria-label': `Open the app of ${tool.name}`, onclick: () => ctx.openApp(tool) }, 'Open app')
              : null
            : // A denied tool is never called: the playground would only be refused.
              ctx.tryTool && approvalOf(entry, tool) !== 'deny'
              ? h('button', { type: 'button', class: 'button small try-tool', 'data-key': `try:${tool.name}`, 'aria-label': `Try ${tool.name}`, onclick: () => ctx.tryTool(tool) }, 'Try')
              : null,
        ),
        tool.description ? h('p', { class: 'item-text' }, tool.description) : null,
        params(tool.parameters),
        h(
          'details',
          { class: 'schema', 'data-key': `schema:${tool.name}` },
          h('summary', {}, 'Input schema'),
          h('pre', { tabindex: '0', 'aria-label': `Input schema of ${tool.name}` }, JSON.stringify(tool.parameters, null, 2)),
        ),
      ),
    ),
  );
}

/** An MCP Apps tool: `app-only` when a model never sees it, `app` when its result shows in an app. */
function appTag(tool) {
  if (tool.model_visible === false) return h('span', { class: 'tag app-only', title: 'Only its app calls it: never offered to a model' }, 'app-only');
  if (tool.ui?.resource_uri) return h('span', { class: 'tag app', title: 'Its result shows in an interactive app (MCP Apps)' }, 'app');
  return null;
}

/** The server config's `tools.approval` for a tool, as the worker reads it: its own entry, else `"*"`. */
function approvalOf(entry, tool) {
  const approval = entry.config?.tools?.approval;
  if (!approval) return undefined;
  return Object.hasOwn(approval, tool.original) ? approval[tool.original] : approval['*'];
}

function approvalTag(setting) {
  if (setting === 'deny') {
    return h('span', { class: 'tag not-available', title: 'Never offered to the model nor called: tools.approval denies it' }, 'denied');
  }
  if (setting === 'ask') return h('span', { class: 'tag', title: 'Each call waits for a person’s yes (tools.approval)' }, 'asks first');
  return null;
}

/** The top-level parameters as chips: `name: type`, required ones marked. */
function params(schema) {
  const props = schema?.properties;
  if (!props || typeof props !== 'object' || Object.keys(props).length === 0) return null;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return h(
    'p',
    { class: 'params' },
    Object.entries(props).map(([name, prop]) =>
      h(
        'span',
        { class: `param${required.has(name) ? ' required' : ''}`, title: required.has(name) ? 'required' : 'optional' },
        h('code', {}, name),
        prop?.type ? `: ${Array.isArray(prop.type) ? prop.type.join(' | ') : prop.type}` : '',
        required.has(name) ? h('span', { class: 'sr-only' }, ' (required)') : null,
      ),
    ),
  );
}

/** The templates listed with the resources (none while they are not listed). */
function templatesOf(entry) {
  return entry.resource_templates ?? [];
}

/** A ready server whose `what` (resources, prompts) are not listed yet: `null` in the catalog, not an empty list. */
function notListed(entry, what) {
  return entry.state === 'ready' && entry[what] === null ? empty(`This server's ${what} are not listed yet.`) : null;
}

function resources(entry) {
  const waiting = notListed(entry, 'resources');
  if (waiting) return waiting;
  const listed = entry.resources ?? [];
  const templates = templatesOf(entry);
  if (listed.length === 0 && templates.length === 0) return empty(notReady(entry, 'resources'));
  return [
    listed.length > 0 ? resourceList('Resources', listed, (r) => r.uri) : null,
    templates.length > 0 ? h('h3', { class: 'list-title' }, 'Templates') : null,
    templates.length > 0 ? resourceList('Resource templates', templates, (t) => t.uriTemplate) : null,
  ];
}

function resourceList(ariaLabel, list, address) {
  return h(
    'ul',
    { class: 'item-list', 'aria-label': ariaLabel },
    list.map((r) =>
      h(
        'li',
        { class: 'item' },
        h(
          'div',
          { class: 'item-head' },
          h('span', { class: 'item-name' }, r.name),
          r.mimeType ? h('span', { class: 'tag' }, r.mimeType) : null,
        ),
        h('p', { class: 'mono small' }, address(r)),
        r.description ? h('p', { class: 'item-text' }, r.description) : null,
      ),
    ),
  );
}

function prompts(entry) {
  const waiting = notListed(entry, 'prompts');
  if (waiting) return waiting;
  if (entry.prompts === null || entry.prompts.length === 0) return empty(notReady(entry, 'prompts'));
  return h(
    'ul',
    { class: 'item-list', 'aria-label': 'Prompts' },
    entry.prompts.map((p) =>
      h(
        'li',
        { class: 'item' },
        h('div', { class: 'item-head' }, h('code', { class: 'item-name' }, p.name)),
        p.description ? h('p', { class: 'item-text' }, p.description) : null,
        Array.isArray(p.arguments) && p.arguments.length > 0
          ? h(
              'p',
              { class: 'params' },
              p.arguments.map((a) =>
                h(
                  'span',
                  { class: `param${a?.required ? ' required' : ''}` },
                  h('code', {}, String(a?.name ?? '?')),
                  a?.required ? ' (required)' : '',
                ),
              ),
            )
          : null,
      ),
    ),
  );
}

/**
 * The masked config: secrets appear as their key, "stored" and the mask, nothing more. A user
 * is sent no working directory, arguments, environment or headers (the admin's business), so
 * those rows are not shown to them rather than shown empty.
 */
function configView(entry) {
  const c = entry.config;
  const user = document.body.dataset.role === 'user';
  const rows = [['Type', c.type === 'remote' ? 'Remote (HTTP)' : 'Local (stdio process)']];
  if (c.type === 'local') {
    rows.push([user ? 'Program' : 'Command', h('span', { class: 'argv' }, (c.command ?? []).map((a) => h('code', {}, a)))]);
    if (!user) {
      rows.push(['Working directory', c.cwd ? h('code', {}, c.cwd) : h('span', { class: 'muted' }, 'the worker’s')]);
      rows.push(['Environment', secrets(c.env)]);
    }
  } else {
    rows.push(['URL', h('code', {}, c.url)], ['Transport', c.transport]);
    if (!user) rows.push(['Headers', secrets(c.headers)]);
    rows.push(['Authentication', authText(c.auth, entry.auth)]);
  }
  rows.push(
    ['Enabled', c.enabled ? 'yes' : 'no'],
    ['Timeouts', `connect ${c.timeout_seconds} s · call ${c.call_timeout_seconds} s`],
    ['Concurrent calls', String(c.max_concurrent_calls)],
    ['Tool filter', filterText(c.tools)],
  );
  return h('dl', { class: 'config' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

function secrets(map) {
  const entries = Object.entries(map ?? {});
  if (entries.length === 0) return h('span', { class: 'muted' }, 'none');
  return h(
    'ul',
    { class: 'secret-list' },
    entries.map(([key, s]) =>
      h('li', {}, h('code', {}, key), ' ', h('span', { class: 'muted' }, s.has_value ? `stored ${s.masked}` : 'empty')),
    ),
  );
}

function authText(auth, status) {
  if (!auth || auth.kind === 'none') return 'none';
  // A user is shown that a secret is stored, never its mask (theirs is null).
  const stored = (mask) => (mask ? `stored ${mask}` : 'stored');
  if (auth.kind === 'bearer') return `bearer token ${auth.has_token ? stored(auth.token_masked) : 'missing'}`;
  const parts = [`${AUTH_KIND_LABELS[auth.kind] ?? auth.kind} (${label(status?.status ?? 'configured')})`];
  if (auth.client_id) parts.push(`client ${auth.client_id}`);
  if (auth.has_client_secret) parts.push(`client secret ${stored(auth.client_secret_masked)}`);
  if (auth.scopes?.length) parts.push(`scopes ${auth.scopes.join(' ')}`);
  return parts.join(' · ');
}

function filterText(tools) {
  const include = tools?.include;
  const exclude = tools?.exclude ?? [];
  if (!include && exclude.length === 0) return 'all tools';
  const parts = [include ? `only ${include.join(', ')}` : null, exclude.length ? `never ${exclude.join(', ')}` : null];
  return parts.filter(Boolean).join('; ');
}

/** Zoom steps of the lifecycle diagram; 1 is its drawn size. */
const ZOOMS = [0.5, 0.75, 1, 1.5, 2];
/** Graphviz sizes in points (4/3 px): at zoom 1 the smallest label, 9 pt, is 12 px. */
const PX_PER_PT = 4 / 3;

/**
 * The server machine's diagram, inlined so the current state can be marked
 * (`.current`). It is drawn at its own size, not squeezed into the panel
 * (where its labels would be a few pixels tall): the panel scrolls, a drag
 * pans it, and the zoom buttons scale it.
 */
function diagram(entry, ctx) {
  const doc = ctx.diagram;
  if (!doc) return empty('Loading the diagram…');
  const svg = document.importNode(doc.documentElement, true);
  const width = Number((svg.getAttribute('viewBox') ?? '').trim().split(/[\s,]+/)[2]);
  svg.removeAttribute('width');
  svg.removeAttribute('height');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `Lifecycle of a server; ${entry.name} is in ${label(entry.state)}`);
  svg.classList.add('diagram-svg');
  const zoom = ZOOMS.includes(ctx.zoom) ? ctx.zoom : 1;
  if (Number.isFinite(width) && width > 0) svg.style.width = `${Math.round(width * PX_PER_PT * zoom)}px`;
  svg.querySelector(`#${CSS.escape(`state_${entry.state}`)}`)?.classList.add('current');
  const step = (by) => ZOOMS[Math.min(ZOOMS.length - 1, Math.max(0, ZOOMS.indexOf(zoom) + by))];
  const zoomButton = (key, text, ariaLabel, to) =>
    h('button', { type: 'button', class: 'button small', 'data-key': `zoom:${key}`, 'aria-label': ariaLabel, disabled: to === zoom, onclick: () => ctx.setZoom(to) }, text);
  const pane = h('div', { class: 'diagram', 'data-scroll-key': 'diagram', tabindex: '0', 'aria-label': 'Lifecycle diagram (scrolls; drag to pan)' }, svg);
  dragToPan(pane);
  return [
    h(
      'div',
      { class: 'diagram-bar' },
      h('p', { class: 'muted small' }, 'Current state highlighted: ', badge(entry.state)),
      h(
        'div',
        { class: 'zoom', role: 'group', 'aria-label': 'Zoom' },
        zoomButton('out', '−', 'Zoom out', step(-1)),
        h('output', { class: 'muted small', 'aria-live': 'polite' }, `${Math.round(zoom * 100)} %`),
        zoomButton('in', '+', 'Zoom in', step(1)),
        zoomButton('reset', 'Actual size', 'Actual size', 1),
      ),
    ),
    pane,
  ];
}

/** Dragging with the primary button scrolls `pane`, as a map does. */
function dragToPan(pane) {
  let from = null;
  pane.addEventListener('pointerdown', (event) => {
    if (event.button !== 0) return;
    from = { x: event.clientX, y: event.clientY, left: pane.scrollLeft, top: pane.scrollTop };
    pane.setPointerCapture(event.pointerId);
    pane.classList.add('panning');
  });
  pane.addEventListener('pointermove', (event) => {
    if (from === null) return;
    pane.scrollLeft = from.left - (event.clientX - from.x);
    pane.scrollTop = from.top - (event.clientY - from.y);
  });
  const stop = () => {
    from = null;
    pane.classList.remove('panning');
  };
  pane.addEventListener('pointerup', stop);
  pane.addEventListener('pointercancel', stop);
}
