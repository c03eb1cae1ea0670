// WAI-ARIA tabs with automatic activation: click, or arrow keys / Home / End
// move between the tabs of a tablist and select the focused one.

/** Wires `list` (an element with role=tablist); `onSelect(id)` gets the tab's `data-tab`. */
export function tablist(list, onSelect) {
  const tabs = () => [...list.querySelectorAll('[role=tab]')];
  list.addEventListener('click', (event) => {
    const tab = event.target.closest('[role=tab]');
    if (tab) onSelect(tab.dataset.tab);
  });
  list.addEventListener('keydown', (event) => {
    const all = tabs();
    const index = all.indexOf(document.activeElement);
    if (index < 0) return;
    const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: all.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    const next = all[(moves[event.key] + all.length) % all.length];
    next.focus();
    onSelect(next.dataset.tab);
  });
}

/** Marks `id` as the selected tab of `list`: aria-selected, and the only one in the Tab order. */
export function selectTab(list, id) {
  for (const tab of list.querySelectorAll('[role=tab]')) {
    const selected = tab.dataset.tab === id;
    tab.setAttribute('aria-selected', String(selected));
    tab.tabIndex = selected ? 0 : -1;
  }
}
