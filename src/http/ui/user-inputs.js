// A per_user server's inputs, as the signed-in person has them: each one's
// description and whether it is set (never its value), and a form to set or
// clear their own. One panel per server, kept across the detail's re-renders:
// a live update must not wipe what the person is typing.
import { api } from './api.js';
import { h } from './dom.js';

const panels = new Map();

const path = (server) => `/api/mcp/servers/${encodeURIComponent(server)}/inputs`;

/** Forgets every panel: the next person to sign in sees their own inputs, not the last one's. */
export function forgetInputs() {
  panels.clear();
}

/** The panel of `server`'s inputs (the same element each time; it loads itself). */
export function inputsPanel(server) {
  let panel = panels.get(server);
  if (panel === undefined) {
    panel = h('section', { class: 'user-inputs', 'aria-label': `Your inputs for ${server}` });
    panels.set(server, panel);
    show(panel, server, undefined, { kind: 'info', text: 'Loading your inputs…' });
    api(path(server)).then(
      (answer) => show(panel, server, answer.inputs),
      (err) => show(panel, server, undefined, { kind: 'error', text: err.message }),
    );
  }
  return panel;
}

function show(panel, server, inputs, notice) {
  const names = Object.keys(inputs ?? {});
  const save = async (values) => {
    try {
      const answer = await api(path(server), { method: 'PUT', body: values });
      show(panel, server, answer.inputs, { kind: 'info', text: 'Saved. Your next call connects with it.' });
    } catch (err) {
      show(panel, server, inputs, { kind: 'error', text: err.message });
    }
  };
  const form = h(
    'form',
    {
      class: 'inputs-form',
      onsubmit: (event) => {
        event.preventDefault();
        // Only the fields typed in: an empty one leaves its value as it is.
        const values = {};
        for (const name of names) {
          const field = form.elements.namedItem(name);
          if (field.value !== '') values[name] = field.value;
        }
        if (Object.keys(values).length > 0) void save(values);
      },
    },
    names.map((name) => {
      const input = inputs[name];
      const id = `input-${server}-${name}`;
      return h(
        'div',
        { class: 'field', 'data-input': name },
        h('label', { for: id }, h('code', {}, name), ' ', h('span', { class: 'muted' }, input.description ?? '')),
        h(
          'div',
          { class: 'input-row' },
          h('input', {
            id,
            name,
            // Kept focused through a live update of the panel around it.
            'data-key': `input:${server}:${name}`,
            type: input.secret ? 'password' : 'text',
            autocomplete: 'off',
            placeholder: input.set ? 'set: type to replace it' : 'not set',
          }),
          h('span', { class: `tag ${input.set ? 'is-set' : 'not-available'}`, 'data-set': String(input.set) }, input.set ? 'set' : 'not set'),
          input.set
            ? h('button', { type: 'button', class: 'button small', 'data-key': `clear:${server}:${name}`, 'aria-label': `Clear ${name}`, onclick: () => void save({ [name]: null }) }, 'Clear')
            : null,
        ),
      );
    }),
    names.length > 0 ? h('button', { type: 'submit', class: 'button primary small', 'data-key': `save-inputs:${server}` }, 'Save') : null,
  );
  // replaceChildren (unlike h) writes a null as the text "null": leave the missing parts out.
  const parts = [
    h('h3', {}, 'Your inputs'),
    h('p', { class: 'muted small' }, 'This server runs a session of its own for each person, with their own values. Values are never shown back.'),
    notice ? h('p', { class: `notice ${notice.kind}`, role: notice.kind === 'error' ? 'alert' : 'status' }, notice.text) : null,
    inputs === undefined ? null : form,
  ];
  panel.replaceChildren(...parts.filter((part) => part !== null));
}
