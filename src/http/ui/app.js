// The management page. State comes from the catalog (what each server offers)
// and the journal's event stream (live states, without reloading). The API
// token is exchanged once for an HttpOnly cookie and never kept by the page.
import * as api from './api.js';
import { approvalEvent, clearApprovals, loadApprovals } from './approvals.js';
import { detailNodes, emptyDetail, sinceText } from './details.js';
import { forgetInputs } from './user-inputs.js';
import { $, $$, h, badge, label, replaceKeeping, shownState } from './dom.js';
import { renderFleet } from './fleet.js';
import { filterOptions, JOURNAL_ROWS, journalRows } from './journal.js';
import { closePlayground, openPlayground, openToolApp, playgroundEvent } from './playground.js';
import { selectTab, tablist } from './tabs.js';
import { toolSearch } from './tool-search.js';
import { registryView } from './registry.js';
import { serverActions } from './server-actions.js';
import { toast } from './feedback.js';

/** Events kept in memory for the journal view. */
const KEEP_EVENTS = 2000;
/** What a transition event says about a server; `stateSeq` is the event's seq. */
const LIVE_FIELDS = ['state', 'ready', 'error', 'error_kind', 'since', 'stateSeq'];
const pick = (from, keys) => Object.fromEntries(keys.map((key) => [key, from[key]]));

const state = {
  /** name → catalog entry; `stateSeq` marks the journal event a live state came from. */
  servers: new Map(),
  /** name → id of the server's current actor: a replaced actor's last steps are not its state. */
  actors: new Map(),
  selected: null,
  tab: 'tools',
  view: 'servers',
  events: [],
  lastSeq: 0,
  busy: new Map(),
  notices: new Map(),
  diagram: undefined,
  stream: undefined,
  filterKey: '',
  /** `GET /api/mcp/fleet`; the Fleet view shows once it lists more than one worker. */
  fleet: null,
  /**
   * True while the event stream is down: the states shown may no longer be
   * true, so every server shows as unknown until a reload reads them again.
   */
  offline: false,
  /** The lifecycle diagram's zoom (1: its drawn size). */
  diagramZoom: 1,
};

/** How often the fleet view is read again (the workers' heartbeats are 2 s apart). */
const FLEET_EVERY_MS = 5_000;
/** Journal events after which the tools view asks its search again: what is callable may have changed. */
const SEARCH_AGAIN_ON = new Set(['server.transitioned', 'server.removed', 'tools.registered', 'tools.unregistered']);
/** Events that change nothing the catalog says: a server that logs or is called often would have it read again and again. */
const CATALOG_UNCHANGED_BY = new Set(['server.log', 'tool.called', 'approval.requested', 'approval.decided']);

/** The tools view's search box; made in `boot`. */
let search;
/** The "Add from registry" view; made in `boot`. */
let registry;
/** What the Add button and the server panel's buttons do. */
const actions = serverActions(state, { renderDetail, renderServers, select, showView, scheduleRefresh });

// ---------------------------------------------------------------- sign-in

async function boot() {
  api.whenUnauthorized(() => showSignIn('Your session ended. Sign in again.'));
  tablist($('#view-nav [role=tablist]'), showView);
  $('#sign-in-form').addEventListener('submit', submitSignIn);
  $('#sign-out').addEventListener('click', signOut);
  $('#add-server').addEventListener('click', actions.addServer);
  $('#journal-filter').addEventListener('change', renderJournal);
  search = toolSearch({ input: $('#tool-search'), list: $('#tool-results'), status: $('#tool-search-status'), onOpen: openTool });
  registry = registryView({ input: $('#registry-search'), list: $('#registry-results'), status: $('#registry-status'), more: $('#registry-more'), form: $('#registry-form'), onAdded: actions.addedFromRegistry });
  setInterval(tickTimes, 15_000);
  setInterval(() => loadFleet(), FLEET_EVERY_MS);

  // `?token=` is read once and removed at once, so it stays in neither the address bar nor history.
  const url = new URL(location.href);
  const token = url.searchParams.get('token');
  if (token !== null) {
    url.searchParams.delete('token');
    history.replaceState(null, '', url.pathname + url.search + url.hash);
    try {
      await api.signIn(token);
    } catch (err) {
      return showSignIn(err.status === 401 ? 'The token in the link is not this worker’s.' : err.message);
    }
  }
  try {
    const { signed_in: signedIn, oidc } = await api.session();
    // The provider's sign-in is a plain link: the worker sends the browser there and back.
    $('#oidc-sign-in').hidden = oidc !== true;
    if (!signedIn) return showSignIn();
    await start();
  } catch (err) {
    if (err.status !== 401) showSignIn(`The worker could not be reached: ${err.message}`);
  }
}

function showSignIn(message) {
  closeStream();
  state.servers.clear();
  forgetInputs();
  state.events = [];
  state.lastSeq = 0;
  for (const id of ['#servers-view', '#tools-view', '#journal-view', '#fleet-view', '#view-nav', '#session-bar']) $(id).hidden = true;
  search?.clear();
  closePlayground();
  clearApprovals();
  $('#sign-in-view').hidden = false;
  $('#token-error').textContent = message ?? '';
  const input = $('#token-input');
  if (message) input.setAttribute('aria-invalid', 'true');
  else input.removeAttribute('aria-invalid');
  input.value = '';
  input.focus();
}

async function submitSignIn(event) {
  event.preventDefault();
  const input = $('#token-input');
  const token = input.value.trim();
  // The token leaves the DOM before anything else happens.
  input.value = '';
  if (token === '') return showSignIn('Enter the API token.');
  try {
    await api.signIn(token);
  } catch (err) {
    return showSignIn(err.status === 401 ? 'That is neither the API token of this worker nor a user key.' : err.message);
  }
  try {
    await start();
  } catch (err) {
    if (err.status !== 401) return showSignIn(`The worker could not be reached: ${err.message}`);
  }
  $('#main').focus({ preventScroll: true });
}

async function signOut() {
  try {
    await api.signOut();
  } finally {
    showSignIn();
    toast('Signed out.');
  }
}

// ---------------------------------------------------------------- data

async function start() {
  await showWho();
  await load();
  $('#sign-in-view').hidden = true;
  $('#token-error').textContent = '';
  $('#view-nav').hidden = false;
  $('#session-bar').hidden = false;
  showView(state.view);
  loadDiagram();
}

/**
 * Who is signed in: a user (not the admin) sees their name, and no way to add
 * servers (the API would refuse it). What they are shown is theirs already.
 */
async function showWho() {
  const me = await api.me();
  document.body.dataset.role = me.admin ? 'admin' : 'user';
  $('#who').textContent = me.admin ? '' : `Signed in as ${me.principal}`;
  $('#add-server').hidden = !me.admin;
  $('#tab-registry').hidden = !me.admin;
  if (!me.admin && state.view === 'registry') state.view = 'servers';
}

/**
 * Reads the journal, then the catalog, then follows the stream from the
 * journal's last event: nothing between the reads is missed, and replayed
 * events are dropped by their seq.
 */
async function load() {
  await loadFleet({ signedIn: true });
  const { events } = await api.events(0);
  const { servers } = await api.catalog();
  state.events = events.slice(-KEEP_EVENTS);
  state.lastSeq = events.at(-1)?.seq ?? 0;
  state.actors.clear();
  for (const event of events) {
    if (event.type === 'worker.started') state.actors.clear();
    if (event.type === 'server.configured') state.actors.set(event.server, event.actor);
  }
  state.servers = new Map(servers.map((s) => [s.name, s]));
  state.offline = false;
  // The worker answers again: what said it could not be reached no longer holds.
  for (const [name, notice] of state.notices) if (notice.unreachable) state.notices.delete(name);
  const wanted = state.selected ?? decodeURIComponent(location.hash.replace(/^#server=/, ''));
  state.selected = state.servers.has(wanted) ? wanted : (servers[0]?.name ?? null);
  openStream();
  await loadApprovals();
  renderServers();
  renderJournal();
}

let retryTimer;
let retryDelay = 1000;

function openStream() {
  closeStream();
  setLive('connecting');
  const stream = new EventSource(`/api/mcp/events/stream?since=${state.lastSeq}`);
  state.stream = stream;
  stream.addEventListener('open', () => {
    retryDelay = 1000;
    setLive('live');
  });
  stream.addEventListener('journal', (message) => onEvent(JSON.parse(message.data)));
  stream.addEventListener('error', () => {
    // EventSource would resume with Last-Event-ID, but a restarted worker
    // numbers its journal from 1 again: reload everything instead.
    if (state.stream !== stream) return;
    closeStream();
    setLive('reconnecting');
    state.offline = true;
    renderServers();
    retryTimer = setTimeout(reconnect, retryDelay);
  });
}

async function reconnect() {
  try {
    await load();
  } catch (err) {
    // A 401 has already brought up the sign-in form.
    if (err.status === 401) return;
    setLive('offline');
    retryDelay = Math.min(retryDelay * 2, 15_000);
    retryTimer = setTimeout(reconnect, retryDelay);
  }
}

function closeStream() {
  clearTimeout(retryTimer);
  state.stream?.close();
  state.stream = undefined;
}

function setLive(mode) {
  const text = { connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…', offline: 'Offline' }[mode];
  $('#live').dataset.state = mode;
  $('#live-text').textContent = text;
}

/** One journal event: a state change shows at once; the rest comes with the next catalog read, for an event that may change it. */
function onEvent(event) {
  if (event.seq <= state.lastSeq) return;
  state.lastSeq = event.seq;
  state.events.push(event);
  if (state.events.length > KEEP_EVENTS) state.events.splice(0, state.events.length - KEEP_EVENTS);
  // Another worker's event (a shared database): its journal line shows, the states here are this worker's.
  if (event.worker !== undefined && state.fleet !== null && event.worker !== state.fleet.self) {
    renderJournal();
    return;
  }

  if (event.type.startsWith('approval.')) playgroundEvent(event);
  if (event.type.startsWith('approval.')) approvalEvent(event);
  const entry = event.server === undefined ? undefined : state.servers.get(event.server);
  if (event.type === 'worker.started') {
    // A new run of the worker: the previous run's actors are gone.
    state.actors.clear();
  } else if (event.type === 'server.configured') {
    state.actors.set(event.server, event.actor);
    if (!entry) state.servers.set(event.server, placeholder(event));
  } else if (event.type === 'server.transitioned' && entry) {
    const current = state.actors.get(event.server);
    if (current === undefined || current === event.actor) {
      const live = { state: event.to, ready: event.to === 'ready', since: event.at, stateSeq: event.seq };
      Object.assign(entry, live, pick(event, ['error', 'error_kind']));
    }
  } else if (event.type === 'tools.registered' && entry) {
    // The tools at once, as the journal has them (a server back to ready never shows "no tools"
    // until the next catalog read, which follows and brings the rest).
    const byName = new Map((entry.tools ?? []).map((tool) => [tool.name, tool]));
    for (const tool of event.tools) byName.set(tool.name, catalogTool(tool));
    entry.tools = [...byName.values()];
  } else if (event.type === 'tools.unregistered' && entry) {
    const gone = new Set(event.tools);
    entry.tools = (entry.tools ?? []).filter((tool) => !gone.has(tool.name));
  } else if (event.type === 'server.removed') {
    state.servers.delete(event.server);
    state.actors.delete(event.server);
    if (state.selected === event.server) state.selected = state.servers.keys().next().value ?? null;
  }
  renderServers();
  renderJournal();
  if (state.view === 'tools' && SEARCH_AGAIN_ON.has(event.type)) search.refresh();
  if (!CATALOG_UNCHANGED_BY.has(event.type)) scheduleRefresh();
}

/** A journal's tool entry as the catalog lists it. */
function catalogTool(tool) {
  const ui = tool.ui ?? null;
  return {
    name: tool.name,
    original: tool.original,
    description: tool.description,
    parameters: tool.parameters ?? {},
    ui,
    model_visible: !Array.isArray(ui?.visibility) || ui.visibility.includes('model'),
  };
}

/** A server seen in the stream before the catalog knows it. */
function placeholder(event) {
  return {
    name: event.server,
    config: event.config,
    state: 'pending',
    ready: false,
    error: null,
    error_kind: null,
    auth: { kind: event.config?.auth?.kind ?? 'none', status: 'none' },
    tool_count: 0,
    since: event.at,
    tools: [],
    // Not listed: the catalog says what the server offers once it is read.
    resources: null,
    resource_templates: null,
    prompts: null,
    stateSeq: event.seq,
  };
}

/** Reads the fleet; the Fleet tab shows when more than one worker shares the database. */
async function loadFleet({ signedIn = !$('#session-bar').hidden } = {}) {
  // Signed out, a request would only be refused (and ask to sign in again); the fleet is the admin's to see.
  if (!signedIn || document.body.dataset.role !== 'admin') return;
  try {
    state.fleet = await api.fleet();
  } catch {
    return;
  }
  const several = state.fleet.workers.length > 1;
  $('#tab-fleet').hidden = !several;
  if (!several && state.view === 'fleet') showView('servers');
  else if (state.view === 'fleet') renderFleet(state.fleet);
}

let refreshTimer;
function scheduleRefresh() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(refresh, 150);
}

/** Re-reads the catalog; a state the stream delivered after the request was sent is kept. */
async function refresh() {
  const asOf = state.lastSeq;
  let servers;
  try {
    ({ servers } = await api.catalog());
  } catch {
    return;
  }
  const next = new Map();
  for (const server of servers) {
    const known = state.servers.get(server.name);
    if (known?.stateSeq > asOf) {
      Object.assign(server, pick(known, LIVE_FIELDS));
    }
    next.set(server.name, server);
  }
  state.servers = next;
  if (state.selected !== null && !next.has(state.selected)) state.selected = next.keys().next().value ?? null;
  renderServers();
}

async function loadDiagram() {
  if (state.diagram) return;
  try {
    const res = await fetch('/ui/diagrams/server.svg', { cache: 'no-cache' });
    if (!res.ok) return;
    const doc = new DOMParser().parseFromString(await res.text(), 'image/svg+xml');
    if (doc.documentElement.nodeName !== 'svg') return;
    // Our own file, but inlined into the page: nothing in it may run.
    for (const el of doc.querySelectorAll('script, foreignObject')) el.remove();
    state.diagram = doc;
    renderDetail();
  } catch {
    // The diagram is a help, not a requirement: the panel says it is loading.
  }
}

// ---------------------------------------------------------------- rendering

function showView(view) {
  state.view = view;
  selectTab($('#view-nav [role=tablist]'), view);
  $('#servers-view').hidden = view !== 'servers';
  $('#tools-view').hidden = view !== 'tools';
  $('#journal-view').hidden = view !== 'journal';
  $('#registry-view').hidden = view !== 'registry';
  $('#fleet-view').hidden = view !== 'fleet';
  renderServers();
  renderJournal();
  if (view === 'fleet') renderFleet(state.fleet);
  if (view === 'tools') search.refresh();
  if (view === 'registry') registry.shown();
}

function renderServers() {
  if (state.view !== 'servers') return;
  const entries = [...state.servers.values()];
  $('#server-count').textContent = String(entries.length);
  $('#servers-empty').hidden = entries.length > 0;
  const rows = entries.map((entry) => {
    const selected = entry.name === state.selected;
    return h(
      'tr',
      // A click anywhere on the row selects it too; the name's button is the keyboard's way.
      { class: selected ? 'selected' : null, 'data-name': entry.name, onclick: (e) => e.target.closest('button') || select(entry.name) },
      h(
        'td',
        {},
        h(
          'button',
          {
            type: 'button',
            class: 'row-button',
            'data-key': `row:${entry.name}`,
            'aria-current': selected ? 'true' : null,
            onclick: () => select(entry.name),
          },
          entry.name,
        ),
        entry.error ? h('span', { class: 'row-error', title: entry.error }, entry.error_kind ?? 'error') : null,
      ),
      h('td', {}, shownBadge(entry)),
      h('td', { class: 'col-type muted' }, entry.config.type ?? ''),
      h('td', { class: 'num' }, String(entry.tools?.length ?? entry.tool_count ?? 0)),
    );
  });
  replaceKeeping($('#servers-body'), rows);
  renderDetail();
}

/** Scrolls the lifecycle pane alone so the current state sits in its middle. */
function centreCurrentState() {
  const pane = $('#detail .diagram');
  const current = pane?.querySelector('svg .current');
  if (!pane || !current) return;
  const box = current.getBoundingClientRect();
  const frame = pane.getBoundingClientRect();
  pane.scrollLeft += box.left + box.width / 2 - (frame.left + frame.width / 2);
  pane.scrollTop += box.top + box.height / 2 - (frame.top + frame.height / 2);
}

/** The state badge, or `unknown` (with the last known state) while the worker cannot be reached. */
function shownBadge(entry) {
  if (!state.offline) return badge(shownState(entry));
  const unknown = badge('unknown');
  unknown.title = `The worker cannot be reached: last known state ${label(shownState(entry))}`;
  return unknown;
}

function renderDetail() {
  const container = $('#detail');
  const entry = state.selected === null ? undefined : state.servers.get(state.selected);
  if (!entry) {
    container.removeAttribute('aria-labelledby');
    replaceKeeping(container, emptyDetail(state.servers.size > 0));
    return;
  }
  container.setAttribute('aria-labelledby', 'detail-title');
  const name = entry.name;
  replaceKeeping(
    container,
    detailNodes(entry, {
      offline: state.offline,
      tab: state.tab,
      setTab: (tab) => {
        state.tab = tab;
        renderDetail();
        // The diagram is larger than its pane: centre the current state in the pane (not the page).
        if (tab === 'lifecycle') centreCurrentState();
      },
      zoom: state.diagramZoom,
      setZoom: (zoom) => {
        state.diagramZoom = zoom;
        renderDetail();
      },
      busy: state.busy.get(name),
      notice: state.notices.get(name),
      diagram: state.diagram,
      edit: () => actions.editServer(name),
      toggle: () => actions.toggleServer(name),
      restart: () => actions.restartServer(name),
      remove: () => actions.deleteServer(name),
      signIn: () => actions.signInServer(name),
      listOwnTools: () => actions.listOwnTools(name),
      tryTool: (tool) => openPlayground(tool, name),
      openApp: (tool) => openToolApp(tool, name),
    }),
  );
}

function renderJournal() {
  if (state.view !== 'journal') return;
  const select = $('#journal-filter');
  const names = new Set([...state.servers.keys(), ...state.events.flatMap((e) => (e.server === undefined ? [] : [e.server]))]);
  const key = [...names].sort().join('\n');
  if (key !== state.filterKey) {
    state.filterKey = key;
    filterOptions(select, state.events, state.servers.keys());
  }
  const rows = journalRows(state.events, select.value);
  $('#journal-body').replaceChildren(...rows);
  $('#journal-empty').hidden = rows.length > 0;
  // Only the newest are shown: say so rather than let the list look whole.
  $('#journal-more').hidden = rows.length < JOURNAL_ROWS;
}

function select(name, { scroll = true } = {}) {
  state.selected = name;
  history.replaceState(null, '', `#server=${encodeURIComponent(name)}`);
  renderServers();
  // Another server's lifecycle: its current state, wherever it is drawn, comes into the pane's view.
  if (state.tab === 'lifecycle') centreCurrentState();
  // On a narrow screen the panel is below the list: bring it into view.
  if (scroll && matchMedia('(max-width: 860px)').matches) {
    const still = matchMedia('(prefers-reduced-motion: reduce)').matches;
    $('#detail').scrollIntoView({ block: 'start', behavior: still ? 'auto' : 'smooth' });
  }
}

/**
 * A search result chosen: its server's panel on its Tools tab, scrolled to
 * the tool with its input schema open and the focus on it.
 */
function openTool(result) {
  if (!state.servers.has(result.server)) {
    toast(`${result.server} is no longer configured.`);
    return;
  }
  state.tab = 'tools';
  showView('servers');
  select(result.server, { scroll: false });
  const item = $(`#detail [data-tool="${CSS.escape(result.name)}"]`);
  if (!item) {
    // Not in the panel: its server does not offer it now (the panel says why).
    $('#detail').scrollIntoView({ block: 'start' });
    return;
  }
  const schema = $('details.schema', item);
  if (schema) schema.open = true;
  const still = matchMedia('(prefers-reduced-motion: reduce)').matches;
  item.scrollIntoView({ block: 'center', behavior: still ? 'auto' : 'smooth' });
  item.focus({ preventScroll: true });
}

/** Keeps "since 12 s ago" true without re-rendering the panel. */
function tickTimes() {
  const entry = state.servers.get(state.selected);
  for (const el of $$('[data-since]', $('#detail'))) if (entry) el.textContent = sinceText(entry);
}

boot();
