// The tools view: a search over every tool of the fleet, asked of the worker
// (`GET /api/mcp/tools/search`) as the user types. Results come best first;
// a tool that cannot be called now says so in words, not only in colour.
import { searchTools } from './api.js';
import { h, replaceKeeping } from './dom.js';

/** Quiet time after the last keystroke before the worker is asked. */
export const SEARCH_DEBOUNCE_MS = 200;
/** Results asked for; the API allows up to 100. */
export const SEARCH_LIMIT = 20;
const HINT = 'Type what you want to do, e.g. “add two numbers”.';

/**
 * Wires the search box `input` to the result list `list` and the status line
 * `status`. `onOpen(result)` is called when a result is chosen. Returns
 * `refresh()` (ask again for the current text, e.g. after the fleet changed)
 * and `clear()` (empty the box and the results, e.g. on sign-out).
 */
export function toolSearch({ input, list, status, onOpen }) {
  let timer;
  /** Numbers each request: an answer that is not the latest one's is dropped. */
  let latest = 0;

  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(run, SEARCH_DEBOUNCE_MS);
  });
  // Enter asks at once instead of waiting for the debounce.
  input.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter') return;
    event.preventDefault();
    clearTimeout(timer);
    run();
  });

  async function run() {
    const query = input.value.trim();
    const ticket = ++latest;
    if (query === '') {
      show([], HINT);
      return;
    }
    list.setAttribute('aria-busy', 'true');
    try {
      const { tools } = await searchTools(query, SEARCH_LIMIT);
      if (ticket !== latest) return;
      show(tools, tools.length === 0 ? `No tool matches “${query}”.` : `${tools.length} ${tools.length === 1 ? 'tool' : 'tools'}, best match first.`);
    } catch (err) {
      if (ticket !== latest) return;
      // A 401 has already brought up the sign-in form.
      if (err.status !== 401) show([], `The search failed: ${err.message}`);
    } finally {
      if (ticket === latest) list.removeAttribute('aria-busy');
    }
  }

  function show(results, text) {
    // A live region: the same line again (a refresh after a fleet change) is not announced again.
    if (status.textContent !== text) status.textContent = text;
    // Asked again after a fleet change, the list must not take the focus off the result the user is on.
    replaceKeeping(list, results.map((result) => resultItem(result, onOpen)));
  }

  status.textContent = HINT;
  return {
    refresh() {
      clearTimeout(timer);
      if (input.value.trim() !== '') timer = setTimeout(run, SEARCH_DEBOUNCE_MS);
    },
    clear() {
      clearTimeout(timer);
      latest += 1;
      input.value = '';
      list.replaceChildren();
      list.removeAttribute('aria-busy');
      status.textContent = HINT;
    },
  };
}

/** One result: its name opens the tool's details; server, availability, score and description beside it. */
function resultItem(result, onOpen) {
  const available = result.available === true;
  const denied = result.denied === true;
  return h(
    'li',
    { class: `item result${available ? '' : ' unavailable'}`, 'data-name': result.name, 'data-available': String(available), 'data-denied': String(denied) },
    h(
      'div',
      { class: 'item-head' },
      h(
        'button',
        { type: 'button', class: 'row-button result-name', 'data-key': `result:${result.name}`, onclick: () => onOpen(result) },
        h('code', { class: 'item-name' }, result.name),
      ),
      h('span', { class: 'muted small' }, 'on ', h('code', {}, result.server)),
      available
        ? h('span', { class: 'tag available' }, 'available')
        : denied
          ? h('span', { class: 'tag not-available', title: 'Never offered to the model nor called: its server’s tools.approval denies it' }, 'denied')
          : h('span', { class: 'tag not-available', title: 'A call would fail now: its server is not ready' }, 'not available'),
      h('span', { class: 'score muted small', title: 'Relevance to the query: higher is better' }, `score ${formatScore(result.score)}`),
    ),
    result.description ? h('p', { class: 'item-text' }, result.description) : null,
    Array.isArray(result.matched) && result.matched.length > 0
      ? h('p', { class: 'muted small' }, `matched in ${result.matched.join(', ')}`)
      : null,
  );
}

function formatScore(score) {
  return typeof score === 'number' && Number.isFinite(score) ? score.toFixed(2) : '—';
}
