// A form generated from a tool's input schema, and a small validator for the
// JSON Schema subset the form understands. What a form cannot express
// (oneOf/anyOf/allOf, $ref, maps of additionalProperties, unknown shapes)
// gets a JSON box of its own; the whole arguments can also be written as JSON.
import { h } from './dom.js';

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const SCALARS = new Set(['string', 'number', 'integer', 'boolean']);
let ids = 0;
const nextId = () => `sf-${++ids}`;

/**
 * What control a schema gets: `string`, `number`, `integer`, `boolean`,
 * `enum`, `object`, `array`, or `json` (a JSON box) for anything else.
 */
export function kindOf(schema) {
  if (!isObject(schema)) return 'json';
  if (schema.oneOf || schema.anyOf || schema.allOf || schema.not || schema.$ref) return 'json';
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return schema.enum.every((v) => ['string', 'number', 'boolean'].includes(typeof v)) ? 'enum' : 'json';
  }
  let type = schema.type;
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== 'null');
    if (types.length !== 1) return 'json';
    type = types[0];
  }
  if (type === undefined && isObject(schema.properties)) type = 'object';
  if (SCALARS.has(type)) return type;
  if (type === 'array') return isObject(schema.items) && kindOf(schema.items) !== 'json' ? 'array' : 'json';
  // An object whose keys are free (a map) is JSON; one with named properties is a fieldset.
  if (type === 'object') return isObject(schema.additionalProperties) && !isObject(schema.properties) ? 'json' : 'object';
  return 'json';
}

/** True when `schema` (a tool's input schema) can be edited as a form at its top level. */
export function formable(schema) {
  return schema === undefined || schema === null || (isObject(schema) && Object.keys(schema).length === 0) || kindOf(schema) === 'object';
}

/**
 * Builds the form of `schema`. Returns `{element, read()}`; `read()` gives
 * `{value, errors}` where errors are `[{path, message}]` (input that could
 * not be read, then what the validator found), each also shown at its field.
 */
export function schemaForm(schema) {
  const root = objectField(isObject(schema) ? schema : {}, { required: true, top: true });
  const summary = h('div', { class: 'form-error sf-summary', role: 'alert', tabindex: '-1', hidden: true });
  const element = h('div', { class: 'schema-form' }, summary, root.element);
  return {
    element,
    read() {
      const slots = new Map();
      const errors = [];
      const value = root.read('', { slots, errors }) ?? {};
      if (errors.length === 0) errors.push(...validate(schema ?? {}, value));
      showErrors(errors, slots, summary);
      return { value, errors };
    },
  };
}

/** Puts each error at the nearest field of its path; the rest (and a count) in the summary. */
function showErrors(errors, slots, summary) {
  for (const slot of slots.values()) {
    slot.error.textContent = '';
    slot.control?.removeAttribute('aria-invalid');
  }
  const unplaced = [];
  for (const err of errors) {
    let path = err.path;
    while (!slots.has(path) && path !== '') path = parentPath(path);
    const slot = slots.get(path);
    if (slot && path !== '') {
      slot.error.textContent = slot.error.textContent ? `${slot.error.textContent}; ${err.message}` : err.message;
      slot.control?.setAttribute('aria-invalid', 'true');
    } else unplaced.push(err);
  }
  summary.hidden = errors.length === 0;
  summary.replaceChildren(
    errors.length === 0 ? '' : `Not sent: ${errors.length} ${errors.length === 1 ? 'problem' : 'problems'} in the arguments.`,
    ...(unplaced.length ? [h('ul', {}, unplaced.map((e) => h('li', {}, e.path ? `${e.path}: ${e.message}` : e.message)))] : []),
  );
}

function parentPath(path) {
  const cut = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
  return cut <= 0 ? '' : path.slice(0, cut);
}

const join = (path, key) => (typeof key === 'number' ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`);

/** One field for `schema`: `{element, read(path, ctx)}`; read gives undefined for "not set". */
function field(schema, opts) {
  switch (kindOf(schema)) {
    case 'object':
      return objectField(schema, opts);
    case 'array':
      return arrayField(schema, opts);
    case 'enum':
      return enumField(schema, opts);
    case 'boolean':
      return booleanField(schema, opts);
    case 'number':
    case 'integer':
      return numberField(schema, opts);
    case 'string':
      return stringField(schema, opts);
    default:
      return jsonField(schema, opts);
  }
}

/** Label, hint and error line around a control; registers the error slot when read. */
function wrap(opts, schema, control, { kindText } = {}) {
  const id = control.id || (control.id = nextId());
  const error = h('p', { class: 'field-error', id: `${id}-error` });
  const hint = schema.description ? h('p', { class: 'hint', id: `${id}-hint` }, schema.description) : null;
  control.setAttribute('aria-describedby', [hint && hint.id, error.id].filter(Boolean).join(' '));
  const label = opts.label ?? opts.name;
  const element = h(
    'div',
    { class: 'field sf-field', 'data-field': opts.name ?? '' },
    label !== undefined
      ? h('label', { for: id }, h('code', {}, label), opts.required && !opts.item ? h('span', { class: 'sf-req' }, ' required') : null, kindText ? h('span', { class: 'muted small' }, ` ${kindText}`) : null)
      : null,
    control,
    hint,
    error,
  );
  return { element, slot: (path, ctx) => ctx.slots.set(path, { error, control }) };
}

function stringField(schema, opts) {
  const long = (schema.maxLength ?? 0) > 200 || schema.format === 'textarea';
  const control = long ? h('textarea', { rows: '3', spellcheck: 'false' }) : h('input', { type: 'text', spellcheck: 'false', autocomplete: 'off' });
  if (typeof schema.default === 'string') control.value = schema.default;
  const w = wrap(opts, schema, control, { kindText: schema.format ? `string (${schema.format})` : 'string' });
  return {
    element: w.element,
    read(path, ctx) {
      w.slot(path, ctx);
      // An empty optional text is left out; an empty required one is for the validator to name.
      return control.value === '' ? undefined : control.value;
    },
  };
}

function numberField(schema, opts) {
  const integer = kindOf(schema) === 'integer';
  const control = h('input', { type: 'number', step: integer ? '1' : 'any', inputmode: integer ? 'numeric' : 'decimal' });
  if (typeof schema.minimum === 'number') control.min = String(schema.minimum);
  if (typeof schema.maximum === 'number') control.max = String(schema.maximum);
  if (typeof schema.default === 'number') control.value = String(schema.default);
  const w = wrap(opts, schema, control, { kindText: integer ? 'integer' : 'number' });
  return {
    element: w.element,
    read(path, ctx) {
      w.slot(path, ctx);
      // The browser empties a number box that does not hold a number; it says so in `badInput`.
      if (control.validity.badInput) {
        ctx.errors.push({ path, message: 'is not a number' });
        return undefined;
      }
      return control.value === '' ? undefined : Number(control.value);
    },
  };
}

function booleanField(schema, opts) {
  if (opts.required) {
    const control = h('input', { type: 'checkbox', checked: schema.default === true });
    const w = wrap(opts, schema, control, { kindText: 'boolean' });
    w.element.classList.add('sf-check');
    return { element: w.element, read: (path, ctx) => (w.slot(path, ctx), control.checked) };
  }
  // Optional: "not set" must stay possible, so a choice of three.
  const choices = [
    ['', 'not set'],
    ['true', 'true'],
    ['false', 'false'],
  ];
  const control = h('select', {}, choices.map(([v, t]) => h('option', { value: v }, t)));
  if (typeof schema.default === 'boolean') control.value = String(schema.default);
  const w = wrap(opts, schema, control, { kindText: 'boolean' });
  return { element: w.element, read: (path, ctx) => (w.slot(path, ctx), control.value === '' ? undefined : control.value === 'true') };
}

function enumField(schema, opts) {
  const values = schema.enum;
  const control = h(
    'select',
    {},
    opts.required && schema.default !== undefined ? null : h('option', { value: '' }, opts.required ? 'choose…' : 'not set'),
    values.map((v, i) => h('option', { value: String(i) }, JSON.stringify(v).replace(/^"(.*)"$/, '$1'))),
  );
  const at = values.findIndex((v) => v === schema.default);
  if (at >= 0) control.value = String(at);
  const w = wrap(opts, schema, control, { kindText: 'one of' });
  return { element: w.element, read: (path, ctx) => (w.slot(path, ctx), control.value === '' ? undefined : values[Number(control.value)]) };
}

/** A JSON box for one value the form cannot express; empty = not set. */
function jsonField(schema, opts) {
  const control = h('textarea', { class: 'mono', rows: '3', spellcheck: 'false', placeholder: 'JSON' });
  if (schema?.default !== undefined) control.value = JSON.stringify(schema.default, null, 2);
  const w = wrap(opts, schema ?? {}, control, { kindText: 'JSON' });
  return {
    element: w.element,
    read(path, ctx) {
      w.slot(path, ctx);
      if (control.value.trim() === '') return undefined;
      try {
        return JSON.parse(control.value);
      } catch (err) {
        ctx.errors.push({ path, message: `is not valid JSON (${err.message})` });
        return undefined;
      }
    },
  };
}

function objectField(schema, opts) {
  const props = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const fields = Object.entries(props).map(([name, prop]) => [name, field(prop, { name, required: required.has(name) })]);
  const error = h('p', { class: 'field-error' });
  const body = fields.length
    ? fields.map(([, f]) => f.element)
    : opts.top
      ? h('p', { class: 'muted' }, 'This tool takes no arguments.')
      : h('p', { class: 'muted small' }, 'No properties.');
  const element = opts.top
    ? h('div', { class: 'sf-object sf-top' }, body, error)
    : h(
        'fieldset',
        { class: 'field sf-object', 'data-field': opts.name ?? '' },
        h('legend', {}, h('code', {}, opts.label ?? opts.name), opts.required ? h('span', { class: 'sf-req' }, ' required') : null),
        schema.description ? h('p', { class: 'hint' }, schema.description) : null,
        body,
        error,
      );
  return {
    element,
    read(path, ctx) {
      ctx.slots.set(path, { error });
      const value = {};
      for (const [name, f] of fields) {
        const v = f.read(join(path, name), ctx);
        // Defined, not assigned: a property named `__proto__` stays an argument.
        if (v !== undefined) Object.defineProperty(value, name, { value: v, enumerable: true, writable: true, configurable: true });
      }
      return Object.keys(value).length === 0 && !opts.required ? undefined : value;
    },
  };
}

function arrayField(schema, opts) {
  const items = [];
  const list = h('ol', { class: 'sf-items' });
  const error = h('p', { class: 'field-error' });
  const label = opts.label ?? opts.name;
  const add = h('button', { type: 'button', class: 'button small', onclick: () => addItem(true) }, `Add ${label ?? 'item'}`);
  function addItem(focus) {
    // An item is there because it was added: it counts as given (no "not set" choice, no "required" mark).
    const item = field(schema.items, { label: `${label ?? 'item'} ${items.length + 1}`, required: true, item: true });
    const remove = h('button', { type: 'button', class: 'button small ghost', 'aria-label': `Remove ${label} item` }, 'Remove');
    const row = h('li', { class: 'sf-item' }, item.element, remove);
    const entry = { item, row };
    remove.addEventListener('click', () => {
      items.splice(items.indexOf(entry), 1);
      row.remove();
      add.focus();
    });
    items.push(entry);
    list.append(row);
    if (focus) row.querySelector('input, select, textarea')?.focus();
  }
  if (Array.isArray(schema.default)) schema.default.forEach(() => addItem(false));
  const element = h(
    'fieldset',
    { class: 'field sf-array', 'data-field': opts.name ?? '' },
    h('legend', {}, h('code', {}, label), opts.required ? h('span', { class: 'sf-req' }, ' required') : null, h('span', { class: 'muted small' }, ' list')),
    schema.description ? h('p', { class: 'hint' }, schema.description) : null,
    list,
    add,
    error,
  );
  return {
    element,
    read(path, ctx) {
      ctx.slots.set(path, { error });
      const value = items.map(({ item }, i) => item.read(join(path, i), ctx)).filter((v) => v !== undefined);
      return value.length === 0 && !opts.required ? undefined : value;
    },
  };
}

/**
 * Checks `value` against `schema` for the subset the form understands: type
 * (incl. integer and type lists), enum, const, required, properties,
 * additionalProperties (false or a schema), items, min/maxItems,
 * min/maxLength, pattern, minimum/maximum and their exclusive forms, and
 * anyOf/oneOf/allOf by trying each branch. Anything else ($ref, formats,
 * if/then, dependencies…) is not checked here: the MCP server validates
 * the arguments again and answers a tool error when they do not fit.
 * Returns `[{path, message}]`, empty when nothing is wrong.
 */
export function validate(schema, value, path = '') {
  if (schema === true || !isObject(schema)) return [];
  const errors = [];
  const fail = (message, at = path) => errors.push({ path: at, message });
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => hasType(value, t))) {
      fail(`must be ${types.map((t) => (t === 'integer' ? 'an integer' : `a ${t}`)).join(' or ')}`);
      return errors;
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((v) => sameJson(v, value))) {
    fail(`must be one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  if ('const' in schema && !sameJson(schema.const, value)) fail(`must be ${JSON.stringify(schema.const)}`);
  if (Array.isArray(schema.allOf)) for (const s of schema.allOf) errors.push(...validate(s, value, path));
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some((s) => validate(s, value, path).length === 0)) {
    fail('matches none of the allowed shapes (anyOf)');
  }
  if (Array.isArray(schema.oneOf)) {
    const matching = schema.oneOf.filter((s) => validate(s, value, path).length === 0).length;
    if (matching !== 1) fail(matching === 0 ? 'matches none of the allowed shapes (oneOf)' : 'matches more than one shape (oneOf)');
  }
  if (typeof value === 'string') {
    if (typeof schema.minLength === 'number' && [...value].length < schema.minLength) fail(`must be at least ${schema.minLength} characters`);
    if (typeof schema.maxLength === 'number' && [...value].length > schema.maxLength) fail(`must be at most ${schema.maxLength} characters`);
    if (typeof schema.pattern === 'string') {
      let re;
      try {
        re = new RegExp(schema.pattern, 'u');
      } catch {
        re = undefined;
      }
      if (re && !re.test(value)) fail(`must match ${schema.pattern}`);
    }
  }
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) fail(`must be ≥ ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && value > schema.maximum) fail(`must be ≤ ${schema.maximum}`);
    if (typeof schema.exclusiveMinimum === 'number' && value <= schema.exclusiveMinimum) fail(`must be > ${schema.exclusiveMinimum}`);
    if (typeof schema.exclusiveMaximum === 'number' && value >= schema.exclusiveMaximum) fail(`must be < ${schema.exclusiveMaximum}`);
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === 'number' && value.length < schema.minItems) fail(`needs at least ${schema.minItems} items`);
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) fail(`takes at most ${schema.maxItems} items`);
    if (isObject(schema.items)) value.forEach((v, i) => errors.push(...validate(schema.items, v, join(path, i))));
  }
  if (isObject(value)) {
    const props = isObject(schema.properties) ? schema.properties : {};
    for (const name of Array.isArray(schema.required) ? schema.required : []) {
      if (!Object.hasOwn(value, name)) fail('is required', join(path, name));
    }
    for (const [name, v] of Object.entries(value)) {
      if (Object.hasOwn(props, name)) errors.push(...validate(props[name], v, join(path, name)));
      else if (schema.additionalProperties === false) fail(`is not a known property`, join(path, name));
      else if (isObject(schema.additionalProperties)) errors.push(...validate(schema.additionalProperties, v, join(path, name)));
    }
  }
  return errors;
}

function hasType(value, type) {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isObject(value);
    default:
      return true;
  }
}

function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}
