// The journal view: lifecycle events, newest first, optionally one server's.
import { badge, clock, h } from './dom.js';

/** Rows shown at most; the journal itself keeps more. */
export const JOURNAL_ROWS = 300;

/** Table rows for `events` (oldest first) of `server` ('' = all), newest first. */
export function journalRows(events, server) {
  const rows = [];
  for (let i = events.length - 1; i >= 0 && rows.length < JOURNAL_ROWS; i -= 1) {
    const event = events[i];
    if (server !== '' && event.server !== server) continue;
    rows.push(
      h(
        'tr',
        { 'data-seq': event.seq, 'data-server': event.server, 'data-worker': event.worker },
        h('td', { class: 'num muted' }, String(event.seq)),
        h('td', { class: 'nowrap' }, h('time', { datetime: event.at, title: event.at }, clock(event.at))),
        h(
          'td',
          {},
          event.server === undefined ? '' : h('code', {}, event.server),
          // In a fleet sharing one journal: which worker's run it is.
          event.worker === undefined ? null : h('span', { class: 'muted worker' }, ` on ${event.worker}`),
        ),
        h('td', { class: 'nowrap' }, event.type),
        h('td', {}, h('div', { class: 'event-detail' }, detail(event))),
      ),
    );
  }
  return rows;
}

function detail(event) {
  switch (event.type) {
    case 'server.transitioned':
      return [
        event.from ? badge(event.from) : h('span', { class: 'muted' }, 'start'),
        h('span', { class: 'arrow', 'aria-label': 'to' }, ' → '),
        badge(event.to),
        event.error ? h('span', { class: 'event-error' }, kind(event.error_kind), ' ', event.error) : null,
      ];
    case 'server.configured':
      return h('span', { class: 'muted' }, `new ${event.config?.type ?? ''} configuration`);
    case 'server.removed':
      return h('span', { class: 'muted' }, 'removed from the configuration');
    case 'worker.started':
      return h('span', { class: 'muted' }, 'the worker started: what follows is its run');
    case 'resources.listed':
      return resourcesListed(event);
    case 'prompts.listed':
      return event.prompts.length === 0 ? offersNo('prompts') : names(event.prompts.map((prompt) => prompt.name), 'listed', 'prompt');
    case 'tools.registered':
      return names(event.tools.map((tool) => tool.name), 'registered');
    case 'tools.unregistered':
      return names(event.tools, 'unregistered');
    case 'tool.shadowed':
      return [h('code', {}, event.tool), ` replaced the tool of ${event.shadowed_server}`];
    case 'catalog.changed':
      return h('span', {}, `${event.kind} changed: `, changeList(event));
    case 'server.log':
      return [h('span', { class: 'kind' }, event.level), event.logger ? ` ${event.logger}: ` : ' ', event.message];
    case 'approval.requested':
      return [h('code', {}, event.tool), ' asks for approval: ', h('code', {}, JSON.stringify(event.arguments))];
    case 'approval.decided':
      return [
        h('code', {}, event.tool),
        ` ${event.decision}`,
        event.by ? ` by ${event.by}` : '',
        event.decided_by ? ` (${event.decided_by})` : '',
        event.principal ? `, asked by ${event.principal}` : '',
      ];
    case 'tool.called':
      return [
        h('code', {}, event.tool),
        ` called by ${event.principal}: ${event.outcome}, ${event.duration_ms} ms`,
        event.refused_by ? ` (over ${event.refused_by})` : '',
      ];
    case 'consent.begun':
      return h('span', {}, `OAuth consent begun by ${event.principal}`);
    case 'consent.failed':
      return h('span', {}, `OAuth consent for ${event.principal} failed: ${event.error}`);
    case 'inputs.changed':
      return h('span', {}, `${event.principal} changed their inputs`, event.set.length > 0 ? `; set ${event.set.join(', ')}` : '', event.removed.length > 0 ? `; removed ${event.removed.join(', ')}` : '');
    case 'session.changed':
      return `${event.principal}'s session: ${event.state}${event.reason ? ` (${event.reason})` : ''}${event.error ? ` — ${event.error}` : ''}`;
    default:
      return '';
  }
}

/**
 * Counted as the server's Resources tab counts them: resources, and the
 * templates apart ("7 resources and 2 templates listed").
 */
function resourcesListed(event) {
  const { resources, templates } = event;
  if (resources.length === 0 && templates.length === 0) return offersNo('resources');
  const all = [...resources.map((resource) => resource.uri), ...templates.map((t) => t.uriTemplate)];
  const counted = [plural(resources.length, 'resource'), templates.length > 0 ? plural(templates.length, 'template') : null];
  return listing(all, `${counted.filter(Boolean).join(' and ')} listed`);
}

/** What the server's tab says of an empty list, said the same way here. */
function offersNo(what) {
  return h('span', { class: 'muted' }, `offers no ${what}`);
}

/** `+added −removed ~changed`, each list as names. */
function changeList(event) {
  const parts = [['+', event.added], ['−', event.removed], ['~', event.changed]]
    .filter(([, list]) => list.length > 0)
    .map(([sign, list]) => `${sign}${list.join(', ')}`);
  return parts.join(' ');
}

function kind(errorKind) {
  return errorKind ? h('span', { class: 'kind' }, errorKind) : null;
}

function names(list, verb, noun = 'tool') {
  return listing(list, `${plural(list.length, noun)} ${verb}`);
}

/** `head: a, b, c, d and 3 more`, the whole list in the title. */
function listing(list, head) {
  const shown = list.slice(0, 4).join(', ');
  const more = list.length > 4 ? ` and ${list.length - 4} more` : '';
  return h('span', { title: list.join(', ') }, head, list.length ? `: ${shown}${more}` : '');
}

function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** The filter's options: every server seen in the journal or configured now, sorted. */
export function filterOptions(select, events, servers) {
  const names = new Set(servers);
  // A worker's own events name no server: they show under "All servers", not as an empty choice.
  for (const event of events) if (event.server !== undefined) names.add(event.server);
  const current = select.value;
  const sorted = [...names].sort((a, b) => a.localeCompare(b));
  select.replaceChildren(h('option', { value: '' }, 'All servers'), ...sorted.map((name) => h('option', { value: name }, name)));
  select.value = sorted.includes(current) ? current : '';
}
