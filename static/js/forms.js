// Forms built from a request message's JSON schema (the OpenAPI document): a typed input per
// scalar, a dropdown per enum, a fieldset per nested message, add/remove rows for repeated fields
// and maps. A field left untouched is not sent: value() holds only what the user set, so the
// server's defaults and validation apply to the rest (an empty list is never sent by accident).
import { resolve } from './api.js';
import { button, element } from './dom.js';
import { renderMarkdown } from './markdown.js';

const MAX_DEPTH = 6; // deeper (or recursive) messages are edited as JSON text
let counter = 0;
const nextId = () => `f${(counter += 1)}`;

function kindOf(schema) {
  const s = resolve(schema);
  const choices = s.oneOf || s.anyOf;
  if (choices && choices.length && !s.type) return kindOf(choices[0]);
  if (Array.isArray(s.enum)) return 'enum';
  if (s.type === 'array') return 'array';
  if (s.type === 'object' && s.properties && !s.additionalProperties) return 'message';
  if (s.type === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object' && !s.properties) return 'map';
  if (s.type === 'boolean') return 'boolean';
  if (s.type === 'integer' || s.type === 'number') return 'number';
  if (s.type === 'string') return 'string';
  return 'json'; // google.protobuf.Value, Struct, Any: free JSON
}

// An enum's names: the schema's own, or those of its first named choice (an enum also takes
// numbers, so the document offers names or an integer).
function enumNames(s) {
  if (Array.isArray(s.enum)) return s.enum;
  const named = (s.oneOf || s.anyOf || []).map(resolve).find((c) => Array.isArray(c.enum));
  return named ? named.enum : [];
}

function typeHint(schema) {
  const s = resolve(schema);
  if (s.format) return s.format;
  return s.type || 'JSON';
}

function describe(schema, raw) {
  const text = (raw && raw.description) || resolve(schema).description || '';
  return text ? element('div', { class: 'hint' }, renderMarkdown(text)) : null;
}

// An editor: { node, get() -> value or undefined when unset }.
function editor(name, path, schema, depth, initial) {
  const s = resolve(schema);
  const kind = depth > MAX_DEPTH ? 'json' : kindOf(s);
  if (kind === 'message') return messageEditor(name, path, s, depth, initial);
  if (kind === 'array') return listEditor(name, path, s, depth, initial);
  if (kind === 'map') return mapEditor(name, path, s, depth, initial);
  return scalarEditor(name, path, schema, kind, initial);
}

function scalarEditor(name, path, schema, kind, initial) {
  const s = resolve(schema);
  const id = nextId();
  let input;
  let get;
  const has = initial !== undefined && initial !== null;
  if (kind === 'enum' || kind === 'boolean') {
    const options = kind === 'enum' ? enumNames(s).map(String) : ['true', 'false'];
    input = element('select', { id, name: path }, element('option', { value: '', text: '(not set)' }),
      ...options.map((option) => element('option', { value: option, text: option })));
    if (has) input.value = String(initial);
    get = () => {
      if (input.value === '') return undefined;
      return kind === 'boolean' ? input.value === 'true' : input.value;
    };
  } else if (kind === 'number') {
    input = element('input', {
      id, name: path, type: 'number', step: s.type === 'integer' ? '1' : 'any',
      min: s.minimum === undefined ? undefined : String(s.minimum),
      max: s.maximum === undefined ? undefined : String(s.maximum),
    });
    if (has) input.value = String(initial);
    get = () => (input.value.trim() === '' ? undefined : Number(input.value));
  } else if (kind === 'json') {
    input = element('textarea', { id, name: path, rows: '3', spellcheck: 'false', placeholder: 'JSON' });
    if (has) input.value = JSON.stringify(initial, null, 2);
    get = () => {
      if (!input.value.trim()) return undefined;
      try {
        return JSON.parse(input.value);
      } catch (error) {
        throw new SyntaxError(`${path}: ${error.message}`);
      }
    };
  } else if (s.format === 'date-time') {
    // A Timestamp: picked in local time, sent as RFC 3339 in UTC.
    input = element('input', { id, name: path, type: 'datetime-local', step: '1' });
    const date = has ? new Date(initial) : null;
    if (date && !Number.isNaN(date.getTime())) {
      input.value = new Date(date.getTime() - date.getTimezoneOffset() * 60000).toISOString().slice(0, 19);
    }
    get = () => (input.value === '' ? undefined : new Date(input.value).toISOString());
  } else {
    // int64 travels as a JSON string (proto3 JSON), so it is a text box that takes digits only.
    const integral = s.format === 'int64' || s.format === 'uint64';
    input = element('input', {
      id, name: path, type: 'text', autocomplete: 'off', spellcheck: 'false',
      inputmode: integral ? 'numeric' : undefined,
      pattern: integral ? '-?[0-9]+' : undefined,
      placeholder: integral ? '0' : undefined,
    });
    if (has) input.value = String(initial);
    get = () => (input.value === '' ? undefined : input.value);
  }
  input.dataset.path = path;
  const label = element('label', { for: id }, element('span', { class: 'field-name', text: name }), ' ',
    element('span', { class: 'muted type', text: kind === 'enum' ? 'enum' : typeHint(schema) }));
  return { node: element('div', { class: 'field' }, label, input, describe(schema, s)), get };
}

function messageEditor(name, path, s, depth, initial) {
  const children = [];
  const body = element('div', { class: 'fields' });
  for (const [key, child] of Object.entries(s.properties || {})) {
    const childPath = path ? `${path}.${key}` : key;
    const sub = editor(key, childPath, child, depth + 1, initial ? initial[key] : undefined);
    children.push([key, sub]);
    body.append(sub.node);
  }
  const get = () => {
    const value = {};
    for (const [key, sub] of children) {
      const got = sub.get();
      if (got !== undefined) value[key] = got;
    }
    return Object.keys(value).length ? value : undefined;
  };
  if (depth === 0) return { node: body, get };
  const box = element('details', { class: 'message', dataset: { path } },
    element('summary', {}, element('span', { class: 'field-name', text: name }), ' ',
      element('span', { class: 'muted type', text: 'message' })),
    describe({}, s), body);
  if (initial && Object.keys(initial).length) box.open = true;
  return { node: box, get };
}

function rows(name, path, makeRow, initialRows, note) {
  const list = element('ol', { class: 'rows' });
  const items = [];
  const add = (initial) => {
    const row = makeRow(items.length, initial);
    const item = element('li', {}, row.node);
    const entry = { row, item };
    item.append(button('Remove', () => {
      items.splice(items.indexOf(entry), 1);
      item.remove();
    }, { class: 'small secondary', 'aria-label': `Remove from ${name}` }));
    items.push(entry);
    list.append(item);
    return item;
  };
  for (const initial of initialRows) add(initial);
  const addButton = button(`Add to ${name}`, () => {
    const item = add(undefined);
    const first = item.querySelector('input, select, textarea, summary');
    if (first) first.focus();
  }, { class: 'small secondary', dataset: { add: path } });
  const node = element('fieldset', { class: 'repeated', dataset: { path } },
    element('legend', {}, element('span', { class: 'field-name', text: name }), ' ', element('span', { class: 'muted type', text: note })),
    list, addButton);
  return { node, items };
}

function listEditor(name, path, s, depth, initial) {
  const itemSchema = s.items || {};
  const { node, items } = rows(name, path, (index, value) => {
    // Repeated messages are open at once: a new row is there to be filled in.
    const sub = editor(`${name}[${index}]`, `${path}.${index}`, itemSchema, depth + 1, value ?? (kindOf(itemSchema) === 'message' ? {} : undefined));
    if (sub.node.tagName === 'DETAILS') sub.node.open = true;
    return sub;
  }, Array.isArray(initial) ? initial : [], 'repeated');
  if (s.description) node.append(describe({}, s));
  const get = () => {
    if (!items.length) return undefined;
    // A row the user added but left empty still counts: it is an element at its defaults.
    return items.map(({ row }) => {
      const value = row.get();
      return value === undefined ? (kindOf(itemSchema) === 'message' ? {} : '') : value;
    });
  };
  return { node, get };
}

function mapEditor(name, path, s, depth, initial) {
  const valueSchema = s.additionalProperties;
  const { node, items } = rows(name, path, (index, pair) => {
    const id = nextId();
    const keyInput = element('input', { id, name: `${path}.${index}.key`, autocomplete: 'off' });
    if (pair) keyInput.value = pair[0];
    const sub = editor('value', `${path}.${index}.value`, valueSchema, depth + 1, pair ? pair[1] : undefined);
    const row = element('div', { class: 'map-row' },
      element('div', { class: 'field' }, element('label', { for: id, text: 'key' }), keyInput), sub.node);
    return { node: row, get: () => (keyInput.value === '' ? undefined : [keyInput.value, sub.get()]) };
  }, Object.entries(initial && typeof initial === 'object' ? initial : {}), 'map');
  const get = () => {
    const pairs = items.map(({ row }) => row.get()).filter(Boolean);
    return pairs.length ? Object.fromEntries(pairs) : undefined;
  };
  return { node, get };
}

// A form for a request message. value() is the message with only the fields set (may throw a
// SyntaxError naming a JSON field that does not parse).
export function buildForm(schema, initial = {}) {
  const root = editor('', '', schema, 0, initial);
  const form = element('div', { class: 'schema-form' }, root.node);
  if (!form.querySelector('input, select, textarea')) {
    form.append(element('p', { class: 'muted', text: 'This request has no fields.' }));
  }
  return { node: form, value: () => root.get() ?? {} };
}
