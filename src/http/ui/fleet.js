// The fleet view: the workers sharing one database and, per server, the
// state each of them runs it in. Shown only when there is more than one.
import { $, ago, badge, h } from './dom.js';

/** Renders `fleet` (`GET /api/mcp/fleet`) into the fleet view. */
export function renderFleet(fleet) {
  const workers = fleet?.workers ?? [];
  $('#worker-count').textContent = String(workers.length);
  $('#workers-body').replaceChildren(
    ...workers.map((worker) =>
      h(
        'tr',
        { 'data-worker': worker.id },
        h('th', { scope: 'row', class: 'mono' }, worker.id, worker.id === fleet.self ? h('span', { class: 'muted' }, ' (this page)') : null),
        h('td', { class: 'mono' }, worker.url ?? '—'),
        h('td', {}, ago(worker.started_at)),
        h('td', {}, ago(worker.last_seen)),
        h('td', {}, worker.alive ? 'yes' : h('strong', {}, 'no')),
      ),
    ),
  );
  $('#fleet-head').replaceChildren(
    h('th', { scope: 'col' }, 'Server'),
    ...workers.map((worker) => h('th', { scope: 'col', class: 'mono' }, worker.id)),
  );
  $('#fleet-body').replaceChildren(
    ...(fleet?.servers ?? []).map((server) =>
      h(
        'tr',
        { 'data-name': server.name },
        h('th', { scope: 'row' }, server.name),
        ...workers.map((worker) => {
          const state = server.states[worker.id];
          return h('td', { 'data-worker': worker.id }, state === undefined ? '—' : badge(state));
        }),
      ),
    ),
  );
}
