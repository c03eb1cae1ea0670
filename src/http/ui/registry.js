// The "Add from registry" view: search the MCP Registry through the worker
// (`GET /api/mcp/registry/servers`, so the browser needs no CORS), pick an
// entry and a way to run it, fill the inputs it asks for, and add it
// (`POST /api/mcp/registry/install`: the worker converts the entry to a config).
// Secret inputs are password fields; their values live only in the field
// until sent, and the form is removed once the server is added.
import { installFromRegistry, searchRegistry } from './api.js';
import { h } from './dom.js';

const DEBOUNCE_MS = 250;
const HINT = 'Search the MCP Registry by server name, e.g. “filesystem”.';

/**
 * Wires the view: `input` (search box), `list` (results), `status` (live
 * line), `more` (next-page button), `form` (a container for the install
 * form). `onAdded(view)` gets the ServerView of a server just added.
 */
export function registryView({ input, list, status, more, form, onAdded }) {
  let timer;
  let latest = 0;
  let cursor = null;
  let query = '';

  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => run(false), DEBOUNCE_MS);
  });
  input.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter') return;
    event.preventDefault();
    clearTimeout(timer);
    run(false);
  });
  more.addEventListener('click', () => run(true));

  async function run(next) {
    if (!next) {
      query = input.value.trim();
      cursor = null;
    }
    const ticket = ++latest;
    list.setAttribute('aria-busy', 'true');
    try {
      const page = await searchRegistry(query, next ? cursor : null);
      if (ticket !== latest) return;
      cursor = page.next_cursor;
      const items = page.servers.map((entry) => entryItem(entry, () => openForm(entry)));
      if (next) list.append(...items);
      else list.replaceChildren(...items);
      more.hidden = cursor === null;
      const shown = list.children.length;
      status.textContent = shown === 0 ? `No registry entry matches “${query}”.` : `${shown} ${shown === 1 ? 'entry' : 'entries'}${cursor ? ', more available' : ''}.`;
    } catch (err) {
      if (ticket !== latest) return;
      if (err.status !== 401) status.textContent = `The registry search failed: ${err.message}`;
    } finally {
      if (ticket === latest) list.removeAttribute('aria-busy');
    }
  }

  function openForm(entry) {
    form.replaceChildren(installForm(entry, { onCancel: closeForm, onAdded: (view) => (closeForm(), onAdded(view)) }));
    form.hidden = false;
    form.querySelector('input[name="name"]')?.focus();
  }

  function closeForm() {
    form.replaceChildren();
    form.hidden = true;
  }

  status.textContent = HINT;
  return {
    /** Shows the first page when the view is opened with nothing searched yet. */
    shown() {
      if (list.children.length === 0 && input.value.trim() === '') run(false);
    },
    clear() {
      clearTimeout(timer);
      latest += 1;
      input.value = '';
      list.replaceChildren();
      more.hidden = true;
      closeForm();
      status.textContent = HINT;
    },
  };
}

function entryItem(entry, onPick) {
  const runnable = entry.options.some((o) => o.problem === null);
  const types = [...new Set(entry.options.map((o) => o.type))].join(', ') || 'nothing to run';
  return h(
    'li',
    { class: 'item registry-entry', 'data-name': entry.name },
    h(
      'div',
      { class: 'item-head' },
      h('code', { class: 'item-name' }, entry.name),
      h('span', { class: 'muted small' }, entry.version),
      h('span', { class: 'tag' }, types),
      h(
        'button',
        {
          type: 'button',
          class: 'button small',
          disabled: !runnable,
          title: runnable ? undefined : entry.options.map((o) => o.problem).filter(Boolean).join('; ') || 'nothing to run',
          'aria-label': `Add ${entry.name}`,
          onclick: onPick,
        },
        'Add…',
      ),
    ),
    entry.description ? h('p', { class: 'item-text' }, entry.title ? `${entry.title}: ${entry.description}` : entry.description) : null,
  );
}

/** A server name from the entry's (`io.github.owner/weather-mcp` → `weather-mcp`). */
function suggestedName(entry) {
  const tail = entry.name.split('/').at(-1) ?? entry.name;
  return tail.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64) || 'server';
}

function installForm(entry, { onCancel, onAdded }) {
  const runnable = entry.options.filter((o) => o.problem === null);
  let option = runnable[0];
  const fields = h('div', { class: 'registry-inputs' });
  const error = h('p', { class: 'field-error', role: 'alert' });
  const nameInput = h('input', { id: 'registry-name', name: 'name', type: 'text', required: true, pattern: '[A-Za-z0-9_\\-]{1,64}', autocomplete: 'off', spellcheck: 'false' });
  nameInput.value = suggestedName(entry);

  const choose =
    runnable.length > 1
      ? h(
          'div',
          { class: 'field' },
          h('label', { for: 'registry-option' }, 'Run it as'),
          h(
            'select',
            {
              id: 'registry-option',
              name: 'option',
              onchange: (event) => {
                option = runnable.find((o) => o.id === event.target.value) ?? option;
                renderInputs();
              },
            },
            runnable.map((o) => h('option', { value: o.id }, o.label)),
          ),
        )
      : h('p', { class: 'muted small' }, `Runs as ${option.label}.`);

  function renderInputs() {
    fields.replaceChildren(...option.inputs.map(inputField));
  }
  renderInputs();

  const submit = h('button', { type: 'submit', class: 'button primary' }, 'Add server');
  const formEl = h(
    'form',
    {
      class: 'registry-form',
      'aria-label': `Add ${entry.name}`,
      novalidate: true,
      // A stale "Required: …" goes as soon as the user types.
      oninput: () => {
        error.textContent = '';
      },
      onsubmit: async (event) => {
        event.preventDefault();
        error.textContent = '';
        const values = {};
        for (const field of formEl.querySelectorAll('[data-kind]')) {
          const value = field.value;
          if (value === '') continue;
          (values[field.dataset.kind] ??= {})[field.dataset.input] = value;
        }
        const missing = [...formEl.querySelectorAll('[data-kind][required]')].filter((f) => f.value === '');
        if (missing.length > 0) {
          error.textContent = `Required: ${missing.map((f) => f.dataset.input).join(', ')}.`;
          missing[0].focus();
          return;
        }
        submit.disabled = true;
        try {
          const view = await installFromRegistry({ name: nameInput.value.trim(), server: entry.name, version: entry.version, package: option.id, values });
          onAdded(view);
        } catch (err) {
          if (err.status !== 401) error.textContent = err.message;
        } finally {
          submit.disabled = false;
        }
      },
    },
    h('h2', {}, `Add ${entry.title ?? entry.name}`),
    h('p', { class: 'muted small' }, `${entry.name} ${entry.version}`),
    h('div', { class: 'field' }, h('label', { for: 'registry-name' }, 'Server name'), nameInput, h('p', { class: 'hint' }, 'Letters, digits, _ and -; its tools are named name__tool.')),
    choose,
    fields,
    error,
    h('div', { class: 'actions' }, h('button', { type: 'button', class: 'button', onclick: onCancel }, 'Cancel'), submit),
  );
  return formEl;
}

const KIND_LABEL = { env: 'Environment variable', header: 'Header', arg: 'Argument', variable: 'Value' };

/** One input: a password field for a secret, a select for choices, a text field otherwise. */
function inputField(input) {
  const id = `registry-${input.kind}-${input.name}`.replace(/[^A-Za-z0-9_-]/g, '_');
  const common = { id, 'data-kind': input.kind, 'data-input': input.name, required: input.required, autocomplete: 'off', spellcheck: 'false' };
  let control;
  if (Array.isArray(input.choices) && input.choices.length > 0) {
    control = h('select', common, input.required ? null : h('option', { value: '' }, '(default)'), input.choices.map((c) => h('option', { value: c, selected: c === input.default }, c)));
  } else {
    control = h('input', { ...common, type: input.secret ? 'password' : 'text', placeholder: input.placeholder ?? input.default ?? '' });
  }
  const hint = [input.description, input.default !== undefined && !input.secret ? `default: ${input.default}` : null, input.secret ? 'secret: never shown again' : null]
    .filter(Boolean)
    .join(' · ');
  return h(
    'div',
    { class: 'field', 'data-input-field': `${input.kind}:${input.name}` },
    h('label', { for: id }, `${KIND_LABEL[input.kind] ?? input.kind} `, h('code', {}, input.name), input.required ? ' (required)' : ''),
    control,
    hint ? h('p', { class: 'hint' }, hint) : null,
  );
}
