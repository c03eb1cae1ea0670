// Calls waiting for approval (`tools.approval: "ask"`): a panel above the
// views, shown while any call waits. It learns of new ones from the journal's
// stream (`approval.requested` / `approval.decided`) and reads the exact list
// from `GET /api/mcp/approvals` whenever the page (re)loads. A decision made
// here is sent with the session cookie, which the worker journals as
// `by: "page"`. Arguments are shown as text, config secrets already masked.
import * as api from './api.js';
import { $, clock, h } from './dom.js';

/** Waiting calls by id, oldest first (insertion order). */
const pending = new Map();
/** Why the last decision on a waiting call failed, by id: shown on its row until it is decided. */
const failures = new Map();

/** Reads the waiting calls afresh (at sign-in and after the stream reconnects). */
export async function loadApprovals() {
  const { approvals } = await api.approvals();
  pending.clear();
  for (const approval of approvals) pending.set(approval.id, approval);
  render();
}

/** One `approval.*` event of the stream. */
export function approvalEvent(event) {
  if (event.type === 'approval.requested') {
    const { id, server, tool, original } = event;
    pending.set(id, { id, server, tool, original, arguments: event.arguments, requested_at: event.at });
  } else if (event.type === 'approval.decided') {
    pending.delete(event.id);
    failures.delete(event.id);
  }
  render();
}

/** Signed out: nothing is shown. */
export function clearApprovals() {
  pending.clear();
  failures.clear();
  render();
}

async function decide(id, decision, row) {
  for (const button of row.querySelectorAll('button')) button.disabled = true;
  failures.delete(id);
  try {
    await api.decideApproval(id, decision);
    pending.delete(id);
  } catch (err) {
    // Decided elsewhere, or timed out: it no longer waits.
    if (err.status === 404) pending.delete(id);
    // Kept across the redraw below (and any later one): the decision was not made, and the row says why.
    else failures.set(id, err.message);
  }
  const next = [...pending.keys()].find((other) => other !== id) ?? (pending.has(id) ? id : undefined);
  render();
  // The button pressed is gone with its row: focus goes on to the next waiting call, or back to the page.
  const target = next === undefined ? $('#main') : $(`[data-approval="${CSS.escape(next)}"] button`);
  target?.focus();
}

function render() {
  for (const id of failures.keys()) if (!pending.has(id)) failures.delete(id);
  const panel = $('#approvals-panel');
  if (!panel) return;
  panel.hidden = pending.size === 0;
  $('#approval-count').textContent = String(pending.size);
  $('#approvals-list').replaceChildren(...[...pending.values()].map(item));
}

function item(approval) {
  const row = h('li', { class: 'approval', 'data-approval': approval.id });
  row.append(
    h(
      'div',
      { class: 'approval-head' },
      h('code', { class: 'approval-tool' }, approval.tool),
      h('span', { class: 'muted' }, ` on ${approval.server}`),
      // The browser's own time of day, as the journal shows times.
      h('time', { class: 'muted small', datetime: approval.requested_at, title: approval.requested_at }, ` asked ${clock(approval.requested_at)}`),
    ),
    h('pre', { class: 'approval-args', 'aria-label': 'Arguments' }, JSON.stringify(approval.arguments, null, 2)),
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', class: 'button primary small', onclick: () => decide(approval.id, 'allow', row) }, 'Allow'),
      h('button', { type: 'button', class: 'button danger small', onclick: () => decide(approval.id, 'deny', row) }, 'Deny'),
    ),
    h('p', { class: 'field-error approval-error', role: 'alert' }, failures.get(approval.id) ?? ''),
  );
  return row;
}
