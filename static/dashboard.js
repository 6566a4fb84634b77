// The Portico dashboard explorer: a form for every RPC, built from the server's /openapi.json.
//
// Nothing here names an individual RPC: services, methods, descriptions, routes and request
// skeletons all come from the document (its `x-portico-rpc` and `x-portico-streaming` fields
// tie each operation to its RPC), so an RPC added to a .proto appears after regeneration. Only
// login and logout have fixed routes, because the dashboard itself needs them.
//
// Calls go through the canonical route `POST /{package}.{Service}/{Method}`: its body is always
// the whole request message, so one code path serves every method whatever its HTTP binding.
'use strict';

const TOKEN_KEY = 'portico.token';
const USER_KEY = 'portico.user';
const LOGIN_PATH = '/v1/auth:login';
const LOGOUT_PATH = '/v1/auth:logout';
// Nested messages are expanded this deep in a request skeleton; deeper ones (and recursive
// messages) start as {} so the skeleton stays readable.
const SKELETON_DEPTH = 3;
// google.rpc.Code names by number: a Status body carries only the number.
const CODES = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND',
  'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED',
  'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED',
];
// What a proto3 JSON string of this format holds when its field is left at its default.
const STRING_DEFAULTS = { int64: '0', 'date-time': '1970-01-01T00:00:00Z' };
const KIND_LABELS = {
  unary: 'unary',
  server_streaming: 'server stream',
  client_streaming: 'client stream',
  bidi_streaming: 'bidirectional stream',
};

const state = {
  doc: null, // the OpenAPI document
  methods: new Map(), // RPC full name -> method (see indexMethods)
  current: null, // the selected method
  controller: null, // AbortController of the call in flight
};

const $ = (id) => document.getElementById(id);

function element(tag, props = {}, ...children) {
  // textContent only, never innerHTML: descriptions and replies come from outside.
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === 'text') node.textContent = value;
    else if (key === 'dataset') Object.assign(node.dataset, value);
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

function show(node, visible) {
  node.hidden = !visible;
}

// -- the session --------------------------------------------------------------------------------

// sessionStorage, not localStorage: the token lives as long as the tab and is not shared with
// other tabs or left behind on disk after the browser closes.
function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

function forgetSession() {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(USER_KEY);
}

function authHeaders(headers) {
  const bearer = token();
  return bearer ? { ...headers, Authorization: `Bearer ${bearer}` } : headers;
}

function showLogin(message = '') {
  abortCall();
  show($('explorer'), false);
  show($('session'), false);
  show($('login'), true);
  $('login-message').textContent = message;
  show($('login-message'), Boolean(message));
  $('password').value = '';
  ($('username').value ? $('password') : $('username')).focus();
}

function showExplorer() {
  show($('login'), false);
  show($('login-error'), false);
  $('whoami').textContent = `Signed in as ${sessionStorage.getItem(USER_KEY) || '?'}`;
  show($('session'), true);
  show($('explorer'), true);
}

async function logIn(event) {
  event.preventDefault();
  const username = $('username').value.trim();
  const password = $('password').value;
  show($('login-error'), false);
  show($('login-message'), false);
  $('login-submit').disabled = true;
  try {
    const response = await fetch(LOGIN_PATH, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ username, password }),
    });
    const body = await readJson(response);
    if (!response.ok || !body || !body.token) {
      $('login-error').textContent = `Login failed: ${statusText(response, body)}`;
      show($('login-error'), true);
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, body.token);
    sessionStorage.setItem(USER_KEY, username);
    showExplorer();
  } catch (error) {
    $('login-error').textContent = `Login failed: ${error.message}`;
    show($('login-error'), true);
  } finally {
    $('login-submit').disabled = false;
  }
}

async function logOut() {
  abortCall();
  try {
    // Revokes the token on the server; whatever it answers, this tab forgets it.
    await fetch(LOGOUT_PATH, {
      method: 'POST',
      headers: authHeaders({ 'Content-Type': 'application/json' }),
      body: '{}',
    });
  } catch (error) {
    // The server may be gone; forgetting the token is still the right thing.
  }
  forgetSession();
  showLogin('Logged out.');
}

function sessionEnded(body) {
  // A 401 means the token expired, was revoked or never was: only a new login helps.
  forgetSession();
  const reason = body && body.message ? ` (${body.message})` : '';
  showLogin(`Your session has ended${reason}: log in again.`);
}

// -- the document -------------------------------------------------------------------------------

function canonicalPath(rpc) {
  const dot = rpc.lastIndexOf('.');
  return `/${rpc.slice(0, dot)}/${rpc.slice(dot + 1)}`;
}

// One entry per RPC, with every route the document gives it; the canonical one is kept apart.
function indexMethods(doc) {
  const methods = new Map();
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const [verb, operation] of Object.entries(item)) {
      const rpc = operation['x-portico-rpc'];
      if (!rpc) continue;
      let method = methods.get(rpc);
      if (!method) {
        const dot = rpc.lastIndexOf('.');
        const kind = operation['x-portico-streaming'] || 'unary';
        method = {
          rpc,
          service: (operation.tags && operation.tags[0]) || rpc.slice(0, dot),
          name: rpc.slice(dot + 1),
          kind,
          clientStreaming: kind === 'client_streaming' || kind === 'bidi_streaming',
          serverStreaming: kind === 'server_streaming' || kind === 'bidi_streaming',
          routes: [],
          canonical: null,
        };
        methods.set(rpc, method);
      }
      const route = { verb: verb.toUpperCase(), path, operation };
      if (route.verb === 'POST' && path === canonicalPath(rpc)) method.canonical = route;
      else method.routes.push(route);
    }
  }
  return methods;
}

function packageOf(service) {
  const dot = service.lastIndexOf('.');
  return dot < 0 ? '' : service.slice(0, dot);
}

// Services in the document's tag order (the registry's), grouped by proto package (the API).
function groupByPackage(doc, methods) {
  const order = (doc.tags || []).map((tag) => tag.name);
  const descriptions = new Map((doc.tags || []).map((tag) => [tag.name, tag.description || '']));
  const services = new Map(order.map((name) => [name, []]));
  for (const method of methods.values()) {
    if (!services.has(method.service)) services.set(method.service, []);
    services.get(method.service).push(method);
  }
  const packages = new Map();
  for (const [service, list] of services) {
    if (!list.length) continue;
    const name = packageOf(service);
    if (!packages.has(name)) packages.set(name, []);
    packages.get(name).push({ name: service, description: descriptions.get(service), methods: list });
  }
  return packages;
}

function renderMethodList(doc, methods) {
  const list = $('method-list');
  list.replaceChildren();
  for (const [pkg, services] of groupByPackage(doc, methods)) {
    const group = element('section', { class: 'api' }, element('h2', { text: pkg || '(no package)' }));
    for (const service of services) {
      const items = element('ul');
      for (const method of service.methods) {
        const button = element(
          'button',
          { type: 'button', class: 'method', dataset: { rpc: method.rpc } },
          method.name,
        );
        if (method.kind !== 'unary') {
          button.append(' ', element('span', { class: 'kind', text: KIND_LABELS[method.kind] }));
        }
        button.addEventListener('click', () => selectMethod(method.rpc));
        items.append(element('li', { dataset: { rpc: method.rpc } }, button));
      }
      const shortName = service.name.slice(pkg.length ? pkg.length + 1 : 0);
      const heading = element('h3', { text: shortName });
      if (service.description) heading.title = service.description;
      group.append(element('div', { class: 'service', dataset: { service: service.name } }, heading, items));
    }
    list.append(group);
  }
  applyFilter();
}

// Every word typed must occur in the method's full name or summary.
function applyFilter() {
  const words = $('filter').value.toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  for (const item of $('method-list').querySelectorAll('li[data-rpc]')) {
    const method = state.methods.get(item.dataset.rpc);
    const text = `${method.rpc} ${summaryOf(method)}`.toLowerCase();
    const match = words.every((word) => text.includes(word));
    show(item, match);
    shown += match;
  }
  // Hide services and APIs left empty, so the list stays a short read.
  for (const box of $('method-list').querySelectorAll('.service, .api')) {
    show(box, box.querySelector('li:not([hidden])') !== null);
  }
  $('method-count').textContent = `${shown} of ${state.methods.size} methods`;
}

function mainOperation(method) {
  return (method.canonical || method.routes[0]).operation;
}

function summaryOf(method) {
  return mainOperation(method).summary || '';
}

// -- schemas and request skeletons --------------------------------------------------------------

function resolve(schema) {
  // Follows local $refs (#/components/schemas/...), with a bound in case of a cycle of refs.
  for (let hops = 0; schema && schema.$ref && hops < 32; hops += 1) {
    const keys = schema.$ref.replace(/^#\//, '').split('/');
    let node = state.doc;
    for (const key of keys) node = node ? node[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    schema = node;
  }
  return schema || {};
}

// A request with every field at its proto3 default, so a user sees the message's shape and can
// send it as it is; enums take their first value (the proto3 zero value).
function skeleton(schema, depth = 0) {
  const s = resolve(schema);
  if ('default' in s) return s.default;
  if (Array.isArray(s.enum)) return s.enum[0];
  const choices = s.oneOf || s.anyOf;
  if (choices && choices.length) return skeleton(choices[0], depth);
  switch (s.type) {
    case 'object':
      // Maps, Struct and Any (additionalProperties) are empty by default; so are messages
      // past the expansion depth, which also stops recursive messages.
      if (!s.properties || s.additionalProperties || depth >= SKELETON_DEPTH) return {};
      return Object.fromEntries(
        Object.entries(s.properties).map(([key, value]) => [key, skeleton(value, depth + 1)]),
      );
    case 'array':
      return [];
    case 'string':
      return STRING_DEFAULTS[s.format] ?? '';
    case 'integer':
    case 'number':
      return 0;
    case 'boolean':
      return false;
    default:
      return null; // google.protobuf.Value and NullValue
  }
}

function typeLabel(schema) {
  if (schema.$ref) return schema.$ref.split('/').pop();
  if (schema.type === 'array') return `${typeLabel(schema.items || {})}[]`;
  if (schema.type === 'object' && schema.additionalProperties && !schema.properties) {
    return typeof schema.additionalProperties === 'object'
      ? `map<string, ${typeLabel(schema.additionalProperties)}>`
      : 'object';
  }
  if (schema.format) return `${schema.type} (${schema.format})`;
  return schema.type || 'any JSON';
}

function requestSchema(method) {
  const content = (mainOperation(method).requestBody || {}).content || {};
  const media = content['application/json'] || content['application/x-ndjson'] || {};
  return media.schema || {};
}

function requestTemplate(method) {
  const value = skeleton(requestSchema(method));
  // Streamed requests are NDJSON: one message per line, so the skeleton is one compact line.
  return method.clientStreaming ? JSON.stringify(value) : JSON.stringify(value, null, 2);
}

// -- the selected method ------------------------------------------------------------------------

function selectMethod(rpc) {
  const method = state.methods.get(rpc);
  if (!method) return;
  abortCall();
  state.current = method;
  for (const button of $('method-list').querySelectorAll('button.method')) {
    button.classList.toggle('selected', button.dataset.rpc === rpc);
    if (button.dataset.rpc === rpc) button.setAttribute('aria-current', 'true');
    else button.removeAttribute('aria-current');
  }
  if (location.hash !== `#${rpc}`) history.replaceState(null, '', `#${rpc}`);

  const operation = mainOperation(method);
  $('method-name').textContent = method.rpc;
  $('method-kind').textContent = KIND_LABELS[method.kind] || method.kind;
  $('method-kind').dataset.kind = method.kind;
  const open = Array.isArray(operation.security) && operation.security.length === 0;
  $('method-access').textContent = open ? 'public' : 'needs a token';
  $('method-service').textContent = `Service ${method.service}`;
  $('method-description').textContent = operation.description || operation.summary || '';

  const routes = method.routes.map((route) => routeItem(route, ''));
  if (method.canonical) routes.push(routeItem(method.canonical, 'canonical: the dashboard calls this one'));
  $('method-routes').replaceChildren(...routes);

  renderFields(method);
  $('request-label').textContent = method.clientStreaming
    ? 'Request stream (NDJSON: one JSON message per line)'
    : 'Request (JSON)';
  fillEditor(requestTemplate(method));
  $('call').disabled = !method.canonical;
  clearResponse();
  show($('placeholder'), false);
  show($('method'), true);
}

// The editor fits its text (within bounds), so the response stays close below it.
function fillEditor(text) {
  $('request').value = text;
  $('request').rows = Math.min(Math.max(text.split('\n').length + 1, 4), 24);
}

function routeItem(route, note) {
  const item = element('li', {}, element('code', { text: `${route.verb} ${route.path}` }));
  if (note) item.append(' ', element('span', { class: 'muted', text: `(${note})` }));
  return item;
}

function renderFields(method) {
  const schema = resolve(requestSchema(method));
  const entries = Object.entries(schema.properties || {});
  const list = $('field-list');
  list.replaceChildren();
  for (const [name, field] of entries) {
    list.append(
      element('dt', {}, element('code', { text: name }), ' ', element('span', { class: 'muted', text: typeLabel(field) })),
      element('dd', { text: field.description || resolve(field).description || '' }),
    );
  }
  show($('fields'), entries.length > 0);
}

// -- calling ------------------------------------------------------------------------------------

// Drops the call in flight (another method chosen, a new call, logout): its reply is no longer
// wanted, so it leaves the response pane alone.
function abortCall() {
  const controller = state.controller;
  state.controller = null;
  if (controller) controller.abort();
}

// The Stop button: the call ends, and the pane says so.
function stopCall() {
  if (state.controller) state.controller.abort();
}

function clearResponse() {
  $('response-status').textContent = '';
  delete $('response-status').dataset.state;
  show($('error'), false);
  $('violations').replaceChildren();
  $('response-body').textContent = '';
  show($('response-body'), false);
  $('stream').replaceChildren();
  show($('stream'), false);
  show($('stop'), false);
}

function setCallState(callState, detail = '') {
  const status = $('response-status');
  status.dataset.state = callState;
  status.textContent = detail;
  const busy = callState === 'waiting' || callState === 'open';
  $('call').disabled = busy;
  show($('stop'), busy && state.current && state.current.serverStreaming);
}

// Brings the answer into view: below a long form it would otherwise go unseen.
function revealResponse() {
  $('response').scrollIntoView({ block: 'nearest' });
}

// The request body as sent, or an error naming the line that is not JSON.
function requestBody(method, text) {
  if (!method.clientStreaming) {
    const trimmed = text.trim() || '{}';
    JSON.parse(trimmed); // a local syntax error reads better than the server's 400
    return trimmed;
  }
  const lines = text.split('\n').filter((line) => line.trim());
  lines.forEach((line, index) => {
    try {
      JSON.parse(line);
    } catch (error) {
      throw new SyntaxError(`line ${index + 1}: ${error.message}`);
    }
  });
  return lines.map((line) => `${line}\n`).join('');
}

async function callMethod() {
  const method = state.current;
  if (!method || !method.canonical) return;
  abortCall();
  clearResponse();
  let body;
  try {
    body = requestBody(method, $('request').value);
  } catch (error) {
    setCallState('invalid', `Not sent: the request is not valid JSON (${error.message}).`);
    return;
  }
  const controller = new AbortController();
  state.controller = controller;
  const started = performance.now();
  setCallState('waiting', method.serverStreaming ? 'Waiting for the first reply…' : 'Calling…');
  let results = 0;
  try {
    const response = await fetch(method.canonical.path, {
      method: 'POST',
      headers: authHeaders({
        'Content-Type': method.clientStreaming ? 'application/x-ndjson' : 'application/json',
        Accept: method.serverStreaming ? 'application/x-ndjson' : 'application/json',
      }),
      body,
      signal: controller.signal,
    });
    const head = `${response.status} ${response.statusText || ''}`.trim();
    const contentType = response.headers.get('content-type') || '';
    if (response.ok && contentType.startsWith('application/x-ndjson')) {
      setCallState('open', `${head} · streaming · 0 results`);
      show($('stream'), true);
      revealResponse();
      const failed = await readStream(response, (count) => {
        results = count;
        setCallState('open', `${head} · streaming · ${count} result${count === 1 ? '' : 's'}`);
      });
      if (state.controller !== controller) return; // superseded: see abortCall
      const plural = results === 1 ? '' : 's';
      if (failed) setCallState('failed', `${head} · stream failed after ${results} result${plural}`);
      else setCallState('ended', `${head} · stream ended · ${results} result${plural}`);
      return;
    }
    const reply = await readJson(response);
    if (state.controller !== controller) return; // superseded: see abortCall
    if (response.status === 401) {
      sessionEnded(reply);
      return;
    }
    const elapsed = Math.round(performance.now() - started);
    setCallState(response.ok ? 'done' : 'error', `${head} · ${elapsed} ms`);
    if (!response.ok) showError(reply);
    $('response-body').textContent = typeof reply === 'string' ? reply : JSON.stringify(reply, null, 2);
    show($('response-body'), true);
    revealResponse();
  } catch (error) {
    if (state.controller !== controller) return; // superseded: see abortCall
    if (error.name === 'AbortError') {
      const plural = results === 1 ? '' : 's';
      setCallState('stopped', `Stopped after ${results} result${plural}.`);
    } else {
      controller.abort(); // a reply we cannot read must not keep its connection open
      setCallState('error', `The call failed: ${error.message}`);
    }
  } finally {
    if (state.controller === controller) {
      state.controller = null;
      $('call').disabled = false;
      show($('stop'), false);
    }
  }
}

// Reads an NDJSON reply line by line as it arrives, appending each result at once (the live
// view). Returns true when the stream ended with an {"error": Status} line.
async function readStream(response, onCount) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let count = 0;
  let failed = false;
  const take = (line) => {
    if (!line.trim()) return;
    const frame = JSON.parse(line);
    if ('error' in frame) {
      failed = true;
      showError(frame.error);
      return;
    }
    count += 1;
    const value = 'result' in frame ? frame.result : frame;
    $('stream').append(element('li', {}, element('pre', { text: JSON.stringify(value, null, 2) })));
    onCount(count);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let newline;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      take(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
    }
  }
  take(buffer);
  return failed;
}

async function readJson(response) {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch (error) {
    return text; // not JSON (a proxy's error page, say): shown as it is
  }
}

function statusText(response, body) {
  if (body && typeof body === 'object' && body.message) return body.message;
  return `${response.status} ${response.statusText || ''}`.trim();
}

// A google.rpc.Status: its code, its message and the fields that were wrong.
function showError(status) {
  if (!status || typeof status !== 'object') {
    $('error-code').textContent = 'Error';
    $('error-message').textContent = String(status || '');
    show($('error'), true);
    return;
  }
  const code = Number(status.code || 0);
  $('error-code').textContent = `${CODES[code] || 'code'} (${code})`;
  $('error-message').textContent = status.message || '';
  const items = [];
  for (const detail of status.details || []) {
    // Proto field names or lowerCamelCase, as the server's JSON setting says.
    for (const violation of detail.field_violations || detail.fieldViolations || []) {
      items.push(
        element(
          'li',
          { class: 'violation' },
          element('code', { class: 'field', text: violation.field || '(request)' }),
          ' ',
          element('span', { class: 'description', text: violation.description || '' }),
        ),
      );
    }
  }
  $('violations').replaceChildren(...items);
  show($('error'), true);
}

// -- start --------------------------------------------------------------------------------------

async function loadDocument() {
  try {
    const response = await fetch('/openapi.json', { headers: { Accept: 'application/json' } });
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
    state.doc = await response.json();
  } catch (error) {
    $('method-list').replaceChildren(
      element('p', { class: 'error-text', text: `Cannot load /openapi.json: ${error.message}` }),
    );
    return;
  }
  state.methods = indexMethods(state.doc);
  const info = state.doc.info || {};
  $('doc-info').textContent = `${info.title || ''} ${info.version || ''}`.trim();
  renderMethodList(state.doc, state.methods);
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (state.methods.has(wanted)) selectMethod(wanted);
  document.body.dataset.ready = 'true';
}

function start() {
  $('login-form').addEventListener('submit', logIn);
  $('logout').addEventListener('click', logOut);
  $('filter').addEventListener('input', applyFilter);
  $('call').addEventListener('click', callMethod);
  $('stop').addEventListener('click', stopCall);
  $('reset').addEventListener('click', () => {
    if (state.current) fillEditor(requestTemplate(state.current));
  });
  $('request').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      if (!$('call').disabled) callMethod();
    }
  });
  if (token()) showExplorer();
  else showLogin();
  loadDocument();
}

start();
