// Small DOM helpers. Every piece of data reaches the page as text nodes or
// attribute values, never as HTML, so a tool description cannot inject markup.

/**
 * Creates an element. `attrs`: `class`, `text`, `on<event>` handlers, boolean
 * attributes (true = present, false/null/undefined = absent), anything else
 * as a string attribute. Children: nodes, strings, or arrays of them.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') el.textContent = String(value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

export const $ = (selector, root = document) => root.querySelector(selector);
export const $$ = (selector, root = document) => [...root.querySelectorAll(selector)];

/** A state badge: the colour comes from the state, the text says it (colour is never the only cue). */
export function badge(state) {
  const dot = h('span', { class: 'dot', 'aria-hidden': 'true' });
  return h('span', { class: `badge state-${state}`, 'data-state': state }, dot, label(state));
}

/**
 * The state a server's row shows: a per_user server waits, by design, for each
 * person's first call (each has a session of their own), so it reads `per user`
 * rather than a `pending` that never ends.
 */
export function shownState(entry) {
  return entry.config?.scope === 'per_user' && entry.state === 'pending' ? 'per_user' : entry.state;
}

/** `needs_reauth` → `needs reauth`. */
export function label(state) {
  return String(state).replaceAll('_', ' ');
}

/** What each auth kind is called on the page. */
export const AUTH_KIND_LABELS = {
  none: 'None',
  bearer: 'Bearer token',
  oauth: 'OAuth',
  client_credentials: 'Client credentials',
  workload_identity: 'Workload identity',
  enterprise: 'Enterprise-managed',
};

/** "12 s ago", "3 min ago", or the date for old times. */
export function ago(iso, now = Date.now()) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return '';
  const seconds = Math.max(0, Math.round((now - then) / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(then).toLocaleDateString();
}

export function clock(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : date.toLocaleTimeString([], { hour12: false });
}

/**
 * Replaces `container`'s content with `nodes`, keeping keyboard focus and
 * open disclosures: a live update must not throw the user's place away.
 * Elements that should survive carry a stable `data-key`.
 */
export function replaceKeeping(container, nodes) {
  const active = document.activeElement;
  const focusKey = container.contains(active) ? active?.getAttribute('data-key') : null;
  const open = new Set($$('details[open][data-key]', container).map((d) => d.getAttribute('data-key')));
  const scroll = $$('[data-scroll-key]', container).map((el) => [el.getAttribute('data-scroll-key'), el.scrollLeft, el.scrollTop]);
  container.replaceChildren(...nodes);
  for (const d of $$('details[data-key]', container)) if (open.has(d.getAttribute('data-key'))) d.open = true;
  for (const [key, left, top] of scroll) {
    const el = container.querySelector(`[data-scroll-key="${CSS.escape(key)}"]`);
    if (el) Object.assign(el, { scrollLeft: left, scrollTop: top });
  }
  if (focusKey) container.querySelector(`[data-key="${CSS.escape(focusKey)}"]`)?.focus();
}
