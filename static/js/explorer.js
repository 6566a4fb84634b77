// The explorer: every RPC the signed-in role may call, with a form built from its request
// schema (or JSON for experts), its reply or live stream, and the call as curl or grpcurl.
// Nothing here names an individual RPC: it all comes from the OpenAPI document.
import { api, authHeaders, CallError, codeName, mainOperation, readJson, readResults, requestSchema } from './api.js';
import { copyText, curlCommand, grpcurlCommand } from './commands.js';
import { $, button, element, show } from './dom.js';
import { buildForm } from './forms.js';
import { record } from './history.js';
import { renderMarkdown } from './markdown.js';
import { mayCall } from './session.js';

const KIND_LABELS = {
  unary: 'unary',
  server_streaming: 'server stream',
  client_streaming: 'client stream',
  bidi_streaming: 'bidirectional stream',
};

const state = { current: null, controller: null, form: null, mode: 'form' };

function packageOf(service) {
  const dot = service.lastIndexOf('.');
  return dot < 0 ? '' : service.slice(0, dot);
}

// Services in the document's tag order, grouped by proto package (the API); only the methods
// this role may call (the server refuses the others anyway).
function groups() {
  const doc = api.doc;
  const order = (doc.tags || []).map((tag) => tag.name);
  const descriptions = new Map((doc.tags || []).map((tag) => [tag.name, tag.description || '']));
  const services = new Map(order.map((name) => [name, []]));
  for (const method of api.methods.values()) {
    if (!mayCall(method.rpc)) continue;
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

export function renderMethodList() {
  const list = $('method-list');
  list.replaceChildren();
  for (const [pkg, services] of groups()) {
    const group = element('section', { class: 'api' }, element('h2', { text: pkg || '(no package)' }));
    for (const service of services) {
      const items = element('ul');
      for (const method of service.methods) {
        const link = element('a', { class: 'method', href: `#/explorer/${method.rpc}`, dataset: { rpc: method.rpc } }, method.name);
        if (method.kind !== 'unary') link.append(' ', element('span', { class: 'kind', text: KIND_LABELS[method.kind] }));
        items.append(element('li', { dataset: { rpc: method.rpc } }, link));
      }
      const shortName = service.name.slice(pkg.length ? pkg.length + 1 : 0);
      const heading = element('h3', { text: shortName, title: service.description || '' });
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
  let total = 0;
  for (const item of $('method-list').querySelectorAll('li[data-rpc]')) {
    const method = api.methods.get(item.dataset.rpc);
    const text = `${method.rpc} ${mainOperation(method).summary || ''}`.toLowerCase();
    const match = words.every((word) => text.includes(word));
    show(item, match);
    shown += match;
    total += 1;
  }
  for (const box of $('method-list').querySelectorAll('.service, .api')) {
    show(box, box.querySelector('li:not([hidden])') !== null);
  }
  $('method-count').textContent = `${shown} of ${total} methods`;
}

// -- the selected method ------------------------------------------------------------------------

export function openMethod(rpc, prefill = null) {
  const method = api.methods.get(rpc);
  abortCall();
  for (const link of $('method-list').querySelectorAll('a.method')) {
    if (link.dataset.rpc === rpc) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (!method || !mayCall(rpc)) {
    state.current = null;
    show($('method'), false);
    $('placeholder').textContent = method ? `Your role may not call ${rpc}.` : (rpc ? `No method ${rpc}.` : 'Choose a method on the left.');
    show($('placeholder'), true);
    return;
  }
  state.current = method;
  const operation = mainOperation(method);
  // A line may break after a dot of the full name, never inside a word ("CreateC / luster").
  $('method-name').replaceChildren(...method.rpc.split('.').flatMap((part, i, all) => (i < all.length - 1 ? [`${part}.`, element('wbr')] : [part])));
  $('method-kind').textContent = KIND_LABELS[method.kind] || method.kind;
  $('method-kind').dataset.kind = method.kind;
  const open = Array.isArray(operation.security) && operation.security.length === 0;
  $('method-access').textContent = open ? 'public' : 'needs a token';
  $('method-service').textContent = `Service ${method.service}`;
  $('method-description').replaceChildren(renderMarkdown(operation.description || operation.summary || ''));
  const routes = method.routes.map((route) => routeItem(route, ''));
  if (method.canonical) routes.push(routeItem(method.canonical, 'canonical: the dashboard calls this one'));
  $('method-routes').replaceChildren(...routes);
  $('request-label').textContent = method.clientStreaming
    ? 'Request stream (NDJSON in the JSON view: one message per line)'
    : 'Request';
  // A prefill from the history is the request text as it was sent: shown in the JSON view.
  if (typeof prefill === 'string') {
    buildRequestForm({});
    fillEditor(prefill);
    applyMode('json');
  } else {
    buildRequestForm(prefill || {});
    fillEditor(method.clientStreaming ? '{}' : '{}\n');
    applyMode('form');
  }
  $('call').disabled = !method.canonical;
  clearResponse();
  show($('commands'), false);
  show($('placeholder'), false);
  show($('method'), true);
}

function buildRequestForm(initial) {
  state.form = buildForm(requestSchema(state.current), initial);
  $('request-form').replaceChildren(state.form.node);
}

function routeItem(route, note) {
  const item = element('li', {}, element('code', { text: `${route.verb} ${route.path}` }));
  if (note) item.append(' ', element('span', { class: 'muted', text: `(${note})` }));
  return item;
}

function fillEditor(text) {
  $('request').value = text;
  $('request').rows = Math.min(Math.max(text.split('\n').length + 1, 4), 24);
}

// Form and JSON show the same request: switching carries what was set across.
function setMode(mode) {
  if (mode === state.mode) return;
  if (mode === 'json') {
    try {
      const value = state.form.value();
      fillEditor(state.current.clientStreaming ? JSON.stringify(value) : JSON.stringify(value, null, 2));
    } catch (error) {
      // a JSON field of the form does not parse: the editor keeps its text
    }
  } else {
    try {
      buildRequestForm(JSON.parse($('request').value.trim().split('\n')[0] || '{}'));
    } catch (error) {
      setCallState('invalid', `The JSON does not parse, so the form keeps its values (${error.message}).`);
    }
  }
  applyMode(mode);
}

function applyMode(mode) {
  state.mode = mode;
  $('mode-form').setAttribute('aria-selected', String(mode === 'form'));
  $('mode-json').setAttribute('aria-selected', String(mode === 'json'));
  show($('request-form'), mode === 'form');
  show($('json-editor'), mode === 'json');
}

// The request body as sent, or an error naming the line or field that is wrong.
function requestBody() {
  const method = state.current;
  if (state.mode === 'form') {
    const value = state.form.value();
    return method.clientStreaming ? `${JSON.stringify(value)}\n` : JSON.stringify(value);
  }
  const text = $('request').value;
  if (!method.clientStreaming) {
    const trimmed = text.trim() || '{}';
    JSON.parse(trimmed);
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

// -- calling ------------------------------------------------------------------------------------

export function abortCall() {
  const controller = state.controller;
  state.controller = null;
  if (controller) controller.abort();
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

export function showError(status, box = $('error')) {
  const body = status && typeof status === 'object' ? status : { code: 2, message: String(status || '') };
  const code = Number(body.code || 0);
  box.querySelector('.error-code').textContent = `${codeName(code)} (${code})`;
  box.querySelector('.error-message').textContent = body.message || '';
  const items = [];
  for (const detail of body.details || []) {
    for (const violation of detail.field_violations || detail.fieldViolations || []) {
      items.push(element('li', { class: 'violation' },
        element('code', { class: 'field', text: violation.field || '(request)' }), ' ',
        element('span', { class: 'description', text: violation.description || '' })));
    }
  }
  box.querySelector('.violations').replaceChildren(...items);
  show(box, true);
}

async function callMethod() {
  const method = state.current;
  if (!method || !method.canonical) return;
  abortCall();
  clearResponse();
  let body;
  try {
    body = requestBody();
  } catch (error) {
    setCallState('invalid', `Not sent: the request is not valid JSON (${error.message}).`);
    return;
  }
  const controller = new AbortController();
  state.controller = controller;
  const started = performance.now();
  setCallState('waiting', method.serverStreaming ? 'Waiting for the first reply…' : 'Calling…');
  let results = 0;
  const plural = () => (results === 1 ? '' : 's');
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
    record(method.rpc, body, response.status, Math.round(performance.now() - started));
    const head = `${response.status} ${response.statusText || ''}`.trim();
    const contentType = response.headers.get('content-type') || '';
    if (response.ok && contentType.startsWith('application/x-ndjson')) {
      setCallState('open', `${head} · streaming · 0 results`);
      show($('stream'), true);
      let failed = false;
      try {
        await readResults(response, (value) => {
          results += 1;
          $('stream').append(element('li', {}, element('pre', { text: JSON.stringify(value, null, 2) })));
          setCallState('open', `${head} · streaming · ${results} result${plural()}`);
        });
      } catch (error) {
        if (!(error instanceof CallError)) throw error;
        failed = true;
        showError(error.status);
      }
      if (state.controller !== controller) return;
      if (failed) setCallState('failed', `${head} · stream failed after ${results} result${plural()}`);
      else setCallState('ended', `${head} · stream ended · ${results} result${plural()}`);
      return;
    }
    const reply = await readJson(response);
    if (state.controller !== controller) return;
    if (response.status === 401) {
      api.onUnauthenticated(reply);
      return;
    }
    setCallState(response.ok ? 'done' : 'error', `${head} · ${Math.round(performance.now() - started)} ms`);
    if (!response.ok) showError(reply);
    $('response-body').textContent = typeof reply === 'string' ? reply : JSON.stringify(reply, null, 2);
    show($('response-body'), true);
    $('response').scrollIntoView({ block: 'nearest' });
  } catch (error) {
    if (state.controller !== controller) return;
    if (error.name === 'AbortError') {
      setCallState('stopped', `Stopped after ${results} result${plural()}.`);
    } else {
      controller.abort();
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

async function showCommand(kind) {
  let body;
  try {
    body = requestBody().trimEnd();
  } catch (error) {
    setCallState('invalid', `No command: the request is not valid JSON (${error.message}).`);
    return;
  }
  const text = kind === 'curl' ? curlCommand(state.current, body) : grpcurlCommand(state.current, body);
  $('command-text').textContent = text;
  $('command-text').dataset.kind = kind;
  show($('commands'), true);
  const copied = await copyText(text);
  $('command-note').textContent = copied
    ? `Copied as ${kind}. Set PORTICO_TOKEN to your token first.`
    : `Select and copy the ${kind} command below. Set PORTICO_TOKEN to your token first.`;
}

export function setUpExplorer() {
  $('filter').addEventListener('input', applyFilter);
  $('call').addEventListener('click', callMethod);
  $('stop').addEventListener('click', () => state.controller && state.controller.abort());
  $('reset').addEventListener('click', () => state.current && openMethod(state.current.rpc));
  $('mode-form').addEventListener('click', () => setMode('form'));
  $('mode-json').addEventListener('click', () => setMode('json'));
  $('copy-curl').addEventListener('click', () => showCommand('curl'));
  $('copy-grpcurl').addEventListener('click', () => showCommand('grpcurl'));
  $('method').addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      if (!$('call').disabled) callMethod();
    }
  });
}
