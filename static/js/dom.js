// Small DOM functions shared by every view. Text goes in through textContent only, never parsed
// as markup: names, descriptions and replies all come from outside the page.

export const $ = (id) => document.getElementById(id);

export function element(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'text') node.textContent = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else if (key === 'on') for (const [name, fn] of Object.entries(value)) node.addEventListener(name, fn);
    else if (value === true) node.setAttribute(key, '');
    else node.setAttribute(key, value);
  }
  node.append(...children.filter((child) => child !== null && child !== undefined && child !== false));
  return node;
}

export function show(node, visible) {
  node.hidden = !visible;
}

export function button(label, onClick, props = {}) {
  return element('button', { type: 'button', ...props, on: { click: onClick } }, label);
}

// Status words the APIs use, by how an operator should read them. Anything else is neutral.
const GOOD = /^(RUNNING|READY|HEALTH_OK|RESOURCE_READY|RELIABILITY_OK|CLOUDLET_STATE_READY|POD_STATE_RUNNING|OK|SCHEDULED|STARTED|TRUE)$/;
const BUSY = /(PROVISIONING|RECONCILING|CREAT|UPDAT|DELET|STARTING|STOPPING|SCHEDULING|PENDING|REQUESTED|PREPARING|INIT|UPGRAD|DESTROYING|HEALTH_WARN|PROGRESS|EMBRYO)/;
const BAD = /(ERROR|FAIL|DEGRADED|HEALTH_ERR|NOT_READY|UNKNOWN|ABORT|CRASH|EXITED|TERMINATED|DEAD|OFFLINE)/;

const GOOD_END = /_(STARTED|READY|RUNNING)$/; // event types such as APP_STARTED

export function tone(value) {
  const word = String(value || '').toUpperCase();
  if (GOOD.test(word) || GOOD_END.test(word)) return 'good';
  if (BAD.test(word)) return 'bad';
  if (BUSY.test(word)) return 'busy';
  return 'neutral';
}

// A status as a coloured pill; the prefix an enum repeats (POD_STATE_, CLOUDLET_STATE_) is
// dropped from the label but kept in the title.
export function statusPill(value) {
  const raw = String(value ?? '');
  const label = raw.replace(/^(POD_STATE_|CLOUDLET_STATE_|HEALTH_|RESOURCE_|RELIABILITY_)/, '') || '—';
  return element('span', { class: `pill ${tone(raw)}`, title: raw, dataset: { status: raw } }, label);
}

// -- time -------------------------------------------------------------------------------------

// The APIs write times four ways: RFC 3339 strings, google.protobuf.Timestamp objects, and
// epoch numbers (int64 as strings) in seconds or nanoseconds. All become a Date.
export function toDate(raw) {
  if (raw === null || raw === undefined || raw === '' || raw === '0' || raw === 0) return null;
  if (typeof raw === 'object' && 'seconds' in raw) {
    return new Date(Number(raw.seconds) * 1000 + Math.floor(Number(raw.nanos || 0) / 1e6));
  }
  if (typeof raw === 'string' && /^\d{4}-\d\d-\d\dT/.test(raw)) {
    const date = new Date(raw);
    return Number.isNaN(date.getTime()) ? null : date;
  }
  if (/^\d+$/.test(String(raw))) {
    const digits = String(raw).length;
    const number = Number(raw);
    if (digits >= 18) return new Date(number / 1e6); // nanoseconds
    if (digits >= 15) return new Date(number / 1e3); // microseconds
    if (digits >= 12) return new Date(number); // milliseconds
    if (digits >= 9) return new Date(number * 1000); // seconds
  }
  return null;
}

const FORMAT = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

// Local time to read, the value as the server sent it on hover.
export function timeCell(raw) {
  const date = toDate(raw);
  const rawText = typeof raw === 'object' && raw !== null ? JSON.stringify(raw) : String(raw ?? '');
  if (!date) return element('span', { class: 'muted', text: rawText && rawText !== '0' ? rawText : '—' });
  return element('time', { datetime: date.toISOString(), title: rawText, class: 'ts' }, FORMAT.format(date));
}

// -- tables -----------------------------------------------------------------------------------

// columns: [{ label, value(row) -> Node|string, key }]; rows get data-key = key(row).
export function table(columns, rows, { key, onOpen, empty = 'Nothing here yet.', label } = {}) {
  const head = element('tr', {}, ...columns.map((c) => element('th', { scope: 'col', text: c.label })));
  const body = element('tbody');
  for (const row of rows) {
    const tr = element('tr', { dataset: { key: key ? key(row) : '' } });
    for (const column of columns) {
      const value = column.value(row);
      tr.append(element('td', { dataset: { label: column.label } }, value instanceof Node ? value : String(value ?? '')));
    }
    if (onOpen) {
      tr.classList.add('clickable');
      tr.tabIndex = 0;
      tr.addEventListener('click', (event) => {
        if (!event.target.closest('button, a')) onOpen(row);
      });
      tr.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' && event.target === tr) onOpen(row);
      });
    }
    body.append(tr);
  }
  if (!rows.length) {
    body.append(element('tr', {}, element('td', { colspan: String(columns.length), class: 'muted', text: empty })));
  }
  const wrapper = element('div', { class: 'table-wrap' }, element('table', { 'aria-label': label }, element('thead', {}, head), body));
  return wrapper;
}

export function link(href, text) {
  return element('a', { href }, text);
}

// A definition list of a plain object's scalar fields (times shown as times).
export function facts(pairs) {
  const list = element('dl', { class: 'facts' });
  for (const [label, value] of pairs) {
    list.append(element('dt', { text: label }), element('dd', {}, value instanceof Node ? value : String(value ?? '—')));
  }
  return list;
}

export function bytes(value) {
  let number = Number(value);
  if (!Number.isFinite(number)) return String(value);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let unit = 0;
  while (number >= 1024 && unit < units.length - 1) {
    number /= 1024;
    unit += 1;
  }
  return `${number.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}
