// Talking to Portico: the OpenAPI document, unary calls and server streams, all through the
// canonical route `POST /{package}.{Service}/{Method}` (its body is always the whole request
// message, so one code path serves every method whatever its HTTP binding). With `?protocol=connect`
// in the page's address, unary calls speak Connect under /api instead (streams stay REST).
import { token } from './session.js';
import { record } from './history.js';

export const CODES = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND',
  'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED',
  'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED',
];

// grpcPort: the port of this host that serves native gRPC, as the server says (null: none does).
export const api = { doc: null, methods: new Map(), grpcPort: null, onUnauthenticated: () => {} };

export function canonicalPath(rpc) {
  const dot = rpc.lastIndexOf('.');
  return `/${rpc.slice(0, dot)}/${rpc.slice(dot + 1)}`;
}

// 'connect' or 'rest', for this page load.
export const PROTOCOL = new URLSearchParams(location.search).get('protocol') === 'connect' ? 'connect' : 'rest';
const CONNECT_PREFIX = '/api';

export function authHeaders(headers) {
  const bearer = token();
  return bearer ? { ...headers, Authorization: `Bearer ${bearer}` } : headers;
}

// One entry per RPC with every route the document gives it; the canonical one kept apart.
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

export async function loadDocument() {
  const response = await fetch('/openapi.json', { headers: { Accept: 'application/json' } });
  if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  api.doc = await response.json();
  api.methods = indexMethods(api.doc);
  const port = Number(response.headers.get('Portico-Grpc-Port'));
  api.grpcPort = Number.isInteger(port) && port > 0 ? port : null;
  return api.doc;
}

export function mainOperation(method) {
  return (method.canonical || method.routes[0]).operation;
}

export function requestSchema(method) {
  const content = (mainOperation(method).requestBody || {}).content || {};
  const media = content['application/json'] || content['application/x-ndjson'] || {};
  return media.schema || {};
}

// Follows local $refs (#/components/schemas/...), bounded in case of a cycle, merges allOf, and
// reads a request's value-or-null as the value: one schema with every keyword.
export function resolve(schema) {
  for (let hops = 0; schema && schema.$ref && hops < 32; hops += 1) {
    let node = api.doc;
    for (const key of schema.$ref.replace(/^#\//, '').split('/')) {
      node = node ? node[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    }
    schema = node;
  }
  if (schema && Array.isArray(schema.allOf)) {
    const { allOf, ...own } = schema;
    return allOf.map(resolve).reduce(merged, own);
  }
  if (isNullable(schema)) {
    // A request's field that may be null (the unset field): a form edits the value, and a
    // field left untouched is not sent at all.
    const { anyOf, ...own } = schema;
    return { ...resolve(anyOf[0]), ...own };
  }
  return schema || {};
}

function isNullable(schema) {
  const choices = schema && schema.anyOf;
  return Array.isArray(choices) && choices.length === 2 && (choices[1] || {}).type === 'null';
}

// Both schemas' keywords; a property both describe is the allOf of the two, resolved when used.
function merged(a, b) {
  const out = { ...b, ...a };
  if (a.properties || b.properties) {
    out.properties = { ...(b.properties || {}) };
    for (const [name, property] of Object.entries(a.properties || {})) {
      const other = out.properties[name];
      out.properties[name] = other ? { allOf: [property, other] } : property;
    }
  }
  if (a.required || b.required) out.required = [...new Set([...(a.required || []), ...(b.required || [])])];
  if (a.items && b.items) out.items = { allOf: [a.items, b.items] };
  return out;
}

function parsed(text) {
  try {
    return JSON.parse(text);
  } catch (error) {
    return text; // not JSON (a proxy's error page, say): shown as it is
  }
}

export async function readJson(response) {
  return parsed(await response.text());
}

// An error as a google.rpc.Status-like object, whatever failed.
export class CallError extends Error {
  constructor(status, httpStatus) {
    const body = status && typeof status === 'object' ? status : { code: 2, message: String(status || '') };
    super(body.message || `HTTP ${httpStatus}`);
    this.status = body;
    this.httpStatus = httpStatus;
    this.code = Number(body.code || 0);
  }
}

export function codeName(code) {
  return CODES[Number(code) || 0] || `code ${code}`;
}

// A Connect error ({"code": "not_found", ...}) as the Status the rest of the page knows.
function connectStatus(error) {
  if (!error || typeof error !== 'object' || typeof error.code !== 'string') return error;
  const code = CODES.indexOf(error.code === 'canceled' ? 'CANCELLED' : error.code.toUpperCase());
  return { code: code < 0 ? 2 : code, message: error.message || '', details: error.details || [] };
}

// Connect names fields as protojson does (lowerCamelCase); the views read the names of the
// OpenAPI document (the server's REST names), so a reply is renamed by its schema.
const jsonName = (name) => name.replace(/_(.)/g, (_, next) => next.toUpperCase());

function renamed(value, schema, depth = 0) {
  schema = resolve(schema);
  if (value === null || typeof value !== 'object' || depth > 64) return value;
  if (Array.isArray(value)) return value.map((item) => renamed(item, schema.items, depth + 1));
  const properties = schema.properties || {};
  const names = new Map(Object.keys(properties).map((name) => [jsonName(name), name]));
  const values = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : {};
  const out = {};
  for (const [key, item] of Object.entries(value)) {
    const name = names.get(key) || key;
    out[name] = renamed(item, properties[name] || values, depth + 1);
  }
  return out;
}

function replySchema(rpc) {
  const method = api.methods.get(rpc);
  const ok = method && (mainOperation(method).responses || {})['200'];
  return (((ok && ok.content) || {})['application/json'] || {}).schema || {};
}

// What a polling view was last answered, per request: a reply with an ETag (the revisions of
// the stored objects it holds) is remembered, the next ask for the same request sends it back
// in If-None-Match, and a 304 (nothing changed, no body) gives the remembered reply again, so
// the view finds its text unchanged and leaves the page as it is. One entry per request (the
// route, the caller's token, the body), at most REVALIDATED_MAX of them (the least recently
// used goes first), all dropped when the view is left. Connect's unary POST has no conditional
// form, so only REST calls revalidate.
const REVALIDATED_MAX = 64;
const revalidated = new Map(); // key -> { etag, text }

function revalidation(path, text) {
  const key = `${path}\n${token() || ''}\n${text}`;
  const entry = revalidated.get(key);
  if (entry) {
    revalidated.delete(key); // to the end: the most recently used
    revalidated.set(key, entry);
  }
  return { key, entry };
}

function rememberReply(key, response, text) {
  const etag = response.headers.get('etag');
  if (response.status !== 200 || !etag) {
    revalidated.delete(key);
    return;
  }
  revalidated.delete(key);
  revalidated.set(key, { etag, text });
  while (revalidated.size > REVALIDATED_MAX) revalidated.delete(revalidated.keys().next().value);
}

export function forgetReplies() {
  revalidated.clear();
}

// A unary call; resolves to the reply, rejects with a CallError. Calls a user made (remember)
// join the history; a view's own refreshes do not, and revalidate (see above) when they poll.
export async function call(rpc, body = {}, { signal, remember = false, revalidate = false } = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const started = performance.now();
  const connect = PROTOCOL === 'connect';
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
  if (connect) headers['Connect-Protocol-Version'] = '1';
  const path = (connect ? CONNECT_PREFIX : '') + canonicalPath(rpc);
  const known = revalidate && !connect ? revalidation(path, text) : null;
  if (known && known.entry) headers['If-None-Match'] = known.entry.etag;
  const response = await fetch(path, {
    method: 'POST',
    headers: authHeaders(headers),
    body: text,
    signal,
  });
  if (known && known.entry && response.status === 304) return parsed(known.entry.text);
  const replyText = await response.text();
  if (known) rememberReply(known.key, response, replyText);
  let reply = parsed(replyText);
  if (connect) reply = response.ok ? renamed(reply, replySchema(rpc)) : connectStatus(reply);
  if (remember) record(rpc, text, response.status, Math.round(performance.now() - started));
  if (response.status === 401) api.onUnauthenticated(reply);
  if (!response.ok) throw new CallError(reply, response.status);
  return reply;
}

// A server stream read as NDJSON; onResult gets each result as it arrives. Resolves when the
// stream ends; rejects with a CallError for an error reply or an {"error": Status} line. With
// revalidate, a stream that ends by itself (a Show) is remembered as a unary reply is, and a
// 304 replays the remembered results.
export async function stream(rpc, body, onResult, { signal, contentType = 'application/json', onOpen, remember = false, revalidate = false } = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const path = canonicalPath(rpc);
  const headers = { 'Content-Type': contentType, Accept: 'application/x-ndjson' };
  const known = revalidate ? revalidation(path, text) : null;
  if (known && known.entry) headers['If-None-Match'] = known.entry.etag;
  const response = await fetch(path, {
    method: 'POST',
    headers: authHeaders(headers),
    body: text,
    signal,
  });
  if (remember) record(rpc, text, response.status, null);
  if (known && known.entry && response.status === 304) {
    for (const result of JSON.parse(known.entry.text)) onResult(result);
    return;
  }
  const type = response.headers.get('content-type') || '';
  if (!response.ok || !type.startsWith('application/x-ndjson')) {
    if (known) revalidated.delete(known.key);
    const reply = await readJson(response);
    if (response.status === 401) api.onUnauthenticated(reply);
    throw new CallError(reply, response.status);
  }
  if (onOpen) onOpen(response);
  if (!known) {
    await readResults(response, onResult);
    return;
  }
  const results = [];
  try {
    await readResults(response, (result) => {
      results.push(result);
      onResult(result);
    });
  } catch (error) {
    revalidated.delete(known.key); // a stream cut short is not the reply its ETag names
    throw error;
  }
  rememberReply(known.key, response, JSON.stringify(results));
}

// Reads an NDJSON reply line by line as it arrives: onResult gets each result; an
// {"error": Status} line rejects with a CallError.
export async function readResults(response, onResult) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const take = (line) => {
    if (!line.trim()) return;
    const frame = JSON.parse(line);
    if ('error' in frame) throw new CallError(frame.error, response.status);
    onResult('result' in frame ? frame.result : frame);
  };
  try {
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
  } finally {
    reader.releaseLock();
  }
}

// All results of a stream that ends by itself (edgeproto Show*), as a list.
export async function collect(rpc, body = {}, options = {}) {
  const results = [];
  await stream(rpc, body, (result) => results.push(result), options);
  return results;
}

// Codes a retry cannot fix: the stream stays down and says why.
const FINAL = new Set([3, 5, 7, 9, 12, 16]);
const RETRY_MS = [500, 1000, 2000, 4000, 8000, 15000];
const liveStreams = new Set();

// A stream kept open: when it drops (network, server restart, 'offline') it reconnects with
// growing pauses, asking makeBody() for a fresh request each time so the caller can resume
// where it left off. onState gets 'connecting' | 'live' | 'reconnecting' | 'ended' | 'failed'.
export function live(rpc, makeBody, onResult, { onState = () => {}, reconnectOnEnd = true } = {}) {
  const handle = { controller: null, stopped: false, attempt: 0, timer: null };
  const connect = async () => {
    if (handle.stopped) return;
    handle.controller = new AbortController();
    onState(handle.attempt ? 'reconnecting' : 'connecting');
    try {
      await stream(rpc, makeBody(), onResult, {
        signal: handle.controller.signal,
        onOpen: () => {
          handle.attempt = 0;
          onState('live');
        },
      });
      if (handle.stopped) return;
      if (!reconnectOnEnd) {
        onState('ended');
        return;
      }
    } catch (error) {
      if (handle.stopped) return;
      if (error instanceof CallError && FINAL.has(error.code)) {
        onState('failed', error);
        return;
      }
    }
    const pause = RETRY_MS[Math.min(handle.attempt, RETRY_MS.length - 1)];
    handle.attempt += 1;
    onState('reconnecting');
    handle.timer = setTimeout(connect, pause);
  };
  handle.stop = () => {
    handle.stopped = true;
    clearTimeout(handle.timer);
    if (handle.controller) handle.controller.abort();
    liveStreams.delete(handle);
  };
  // Drops the connection as a network failure would; the retry loop brings it back.
  handle.drop = () => {
    if (handle.controller) handle.controller.abort();
  };
  liveStreams.add(handle);
  connect();
  return handle;
}

export function stopAllLive() {
  for (const handle of [...liveStreams]) handle.stop();
}

// The browser going offline kills every connection; the streams reconnect and resume on their
// own (and at once when the browser says it is back online).
window.addEventListener('offline', () => {
  for (const handle of liveStreams) handle.drop();
});
window.addEventListener('online', () => {
  for (const handle of liveStreams) handle.attempt = 0;
});
