// What the server panel's buttons and the Add button do: each goes through
// the management API, says in the panel or a toast what came of it, and has
// the page read the catalog again.
import * as api from './api.js';
import { $ } from './dom.js';
import { confirmDialog, toast } from './feedback.js';
import { openServerForm } from './server-form.js';

/**
 * The actions on the page's `state`, drawing with `view` (its renderDetail,
 * renderServers, select, showView and scheduleRefresh).
 */
export function serverActions(state, view) {
  const { renderDetail, renderServers, select, showView, scheduleRefresh } = view;

  /** Runs `work` as `action` of `name`: its button says so, and a failure lands in the panel. */
  async function act(name, action, work) {
    state.busy.set(name, action);
    state.notices.delete(name);
    renderDetail();
    try {
      return await work();
    } catch (err) {
      // A fetch that never reached the worker says "Failed to fetch": said as the forms say it.
      const unreachable = !(err instanceof api.ApiError);
      const text = unreachable ? 'The worker could not be reached.' : err.message;
      // One that did not reach the worker goes once the page reaches it again.
      if (err.status !== 401) state.notices.set(name, { kind: 'error', text, unreachable });
      return undefined;
    } finally {
      state.busy.delete(name);
      renderDetail();
    }
  }

  async function addServer() {
    const result = await openServerForm($('#server-dialog'), undefined);
    if (!result?.saved) return;
    const view = result.saved;
    // The stream usually knows the server already; its newer state wins.
    if (!state.servers.has(view.name)) state.servers.set(view.name, { ...view, tools: [], resources: null, resource_templates: null, prompts: null });
    toast(`Added ${view.name}: ${view.state.replaceAll('_', ' ')}.`);
    select(view.name);
    scheduleRefresh();
  }

  /** A server added from the registry: shown in the servers view like one added by hand. */
  function addedFromRegistry(view) {
    if (!state.servers.has(view.name)) state.servers.set(view.name, { ...view, tools: [], resources: null, resource_templates: null, prompts: null });
    toast(`Added ${view.name}: ${view.state.replaceAll('_', ' ')}.`);
    showView('servers');
    select(view.name);
    scheduleRefresh();
  }

  async function editServer(name) {
    const entry = state.servers.get(name);
    if (!entry) return;
    const result = await openServerForm($('#server-dialog'), entry);
    // The panel may have been drawn anew while the form was open (the server's events): the dialog
    // cannot give focus back to an Edit button that is gone, so it goes to the one there now.
    $('#detail [data-key="action:edit"]')?.focus();
    if (result?.unchanged) toast('Nothing changed.');
    if (result?.saved) {
      // The saved config at once, not at the next refresh: an Edit right after opens on what was saved.
      const current = state.servers.get(name);
      if (current) state.servers.set(name, { ...current, config: result.saved.config, version: result.saved.version });
      toast(`Saved ${name}: ${result.saved.state.replaceAll('_', ' ')}.`);
      scheduleRefresh();
    }
  }

  async function toggleServer(name) {
    const enabled = state.servers.get(name)?.config.enabled !== false;
    const view = await act(name, 'toggle', () => api.patchServer(name, { enabled: !enabled }));
    if (view) toast(`${name} ${enabled ? 'disabled' : 'enabled'}.`);
    scheduleRefresh();
  }

  async function restartServer(name) {
    const view = await act(name, 'restart', () => api.restartServer(name));
    if (view) toast(`Restarted ${name}: ${view.state.replaceAll('_', ' ')}.`);
    scheduleRefresh();
  }

  async function deleteServer(name) {
    const ok = await confirmDialog(
      `Delete ${name}?`,
      'The server is stopped, its tools are removed, and its entry (with its stored credentials) is deleted from mcp_servers.json.',
      'Delete server',
    );
    if (!ok) return;
    const done = await act(name, 'delete', async () => {
      await api.deleteServer(name);
      return true;
    });
    if (!done) return;
    state.servers.delete(name);
    if (state.selected === name) state.selected = state.servers.keys().next().value ?? null;
    toast(`Deleted ${name}.`);
    renderServers();
    $('#add-server').focus();
  }

  /** OAuth consent: the worker answers with the URL to open, or says why it cannot. */
  async function signInServer(name) {
    const own = state.servers.get(name)?.config?.scope === 'per_user';
    const answer = await act(name, own ? 'connect' : 'signin', () => api.beginAuth(name));
    const url = answer?.authorization_url;
    if (typeof url === 'string' && /^https?:\/\//i.test(url)) {
      window.open(url, '_blank', 'noopener');
      const text = own
        ? 'Continue in the new tab, in this browser: once you have authorized, your calls use your own account.'
        : 'Continue signing in in the new tab; the state updates here when it is done.';
      state.notices.set(name, { kind: 'info', text });
      renderDetail();
    } else if (answer !== undefined) {
      state.notices.set(name, { kind: 'error', text: 'The worker did not return an authorization URL.' });
      renderDetail();
    }
  }

  /** A per_user server's tools, listed through the caller's own session (opened for it): what the playground then offers. */
  async function listOwnTools(name) {
    const counts = await act(name, 'list', () => api.refreshServer(name));
    if (counts !== undefined) {
      toast(`Your session of ${name} lists ${counts.tools} ${counts.tools === 1 ? 'tool' : 'tools'}.`);
      scheduleRefresh();
    }
  }

  return { addServer, addedFromRegistry, editServer, toggleServer, restartServer, deleteServer, signInServer, listOwnTools };
}
