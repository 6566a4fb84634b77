// The Portico dashboard: login, the views (one per API, the explorer, the history) and the hash
// router that picks one. Deep links are hashes (#/kaas/demo-running); the page follows every
// hash change, so links, Back and Forward all work without a reload.
import { api, loadDocument, readJson } from './api.js';
import { $, element, show } from './dom.js';
import { openMethod, renderMethodList, setUpExplorer, abortCall } from './explorer.js';
import { claimsOf, forget, isOpen, mayCall, remember, role, setOpen, tenant, token, username } from './session.js';
import { leaveView } from './ui.js';
import { renderCluster, renderClusters } from './views/kaas.js';
import { renderEdge, renderDeveloper } from './views/edge.js';
import { historyEntry, renderHistory } from './views/history.js';
import { renderPod, renderRuntime } from './views/runtime.js';
import { renderStorage } from './views/storage.js';

const LOGIN_PATH = '/v1/auth:login';
const CHECK_TOKEN_PATH = '/v1/auth:checkToken';
const LOGOUT_PATH = '/v1/auth:logout';
const LOGIN_RPC = 'services.auth.AuthService.Login';

// The views, each shown only to a role that may call what it reads.
const VIEWS = [
  { name: 'kaas', label: 'Clusters', needs: 'cnct.kaas.api.Cluster.GetClusterList' },
  { name: 'runtime', label: 'Runtime', needs: 'v1alpha.PublicAPI.ListPods' },
  { name: 'edge', label: 'Edge', needs: 'edgeproto.CloudletApi.ShowCloudlet' },
  { name: 'storage', label: 'Storage', needs: 'stats.StatsService.GetClusterStats' },
  { name: 'explorer', label: 'Explorer', needs: null },
  { name: 'history', label: 'History', needs: null },
];

const go = (hash) => {
  if (location.hash === hash) route();
  else location.hash = hash;
};

// A view needs its RPC in the document too: a proxy serves other APIs than Portico's.
function allowedViews() {
  return VIEWS.filter((view) => !view.needs || (api.methods.has(view.needs) && mayCall(view.needs)));
}

function renderNav(current) {
  $('nav').replaceChildren(...allowedViews().map((view) => element('a', {
    href: `#/${view.name}`,
    'aria-current': view.name === current ? 'page' : undefined,
    dataset: { view: view.name },
  }, view.label)));
}

function decode(part) {
  try {
    return decodeURIComponent(part);
  } catch (error) {
    return part; // a stray % in a hand-typed link
  }
}

function parse(hash) {
  const raw = hash.replace(/^#/, '');
  // Links from before the views (#package.Service.Method) still open that method.
  if (raw && !raw.startsWith('/')) return ['explorer', decode(raw)];
  return raw.split('/').slice(1).map(decode);
}

function route() {
  if ((!token() && !isOpen()) || !api.doc) return;
  const [name, ...rest] = parse(location.hash);
  const allowed = allowedViews();
  const view = allowed.find((v) => v.name === name) || allowed[0];
  const canonical = `#/${[view.name, ...(view.name === name ? rest : [])].map(encodeURIComponent).join('/')}`;
  if (location.hash !== canonical && (!name || view.name !== name || !location.hash.startsWith('#/'))) {
    history.replaceState(null, '', canonical);
  }
  leaveView();
  abortCall();
  renderNav(view.name);
  const explorer = view.name === 'explorer' || (view.name === 'history' && rest.length > 0);
  show($('explorer'), explorer);
  show($('view'), !explorer);
  const root = $('view');
  root.dataset.view = view.name;
  renderView(view.name, rest, root);
  document.title = `${view.label} · Portico`;
  focusHeading();
}

function renderView(name, rest, root) {
  if (name === 'kaas') {
    if (rest.length) renderCluster(root, go, rest[0]);
    else renderClusters(root, go);
  } else if (name === 'runtime') {
    if (rest[0] === 'pod') renderPod(root, go, rest[1]);
    else renderRuntime(root, go);
  } else if (name === 'edge') {
    if (rest[0] === 'developer') renderDeveloper(root, go, rest[1]);
    else renderEdge(root, go);
  } else if (name === 'storage') {
    renderStorage(root, go);
  } else if (name === 'history' && !rest.length) {
    renderHistory(root, go);
  } else if (name === 'history') {
    const entry = historyEntry(rest[0]);
    openMethod(entry ? entry.rpc : '', entry ? entry.body : null);
  } else {
    openMethod(rest.join('/'));
  }
}

// Focus moves to the shown view's heading, so keyboard and screen-reader users land on it.
function focusHeading() {
  let title = $('view').querySelector('h2');
  if (!$('explorer').hidden) title = $('method').hidden ? $('filter') : $('method-name');
  if (!title) return;
  if (title.tagName === 'H2') title.tabIndex = -1; // focusable by script, not a Tab stop
  title.focus({ preventScroll: true });
}

// -- the session --------------------------------------------------------------------------------

function showLogin(message = '') {
  leaveView();
  abortCall();
  show($('app'), false);
  show($('session'), false);
  show($('login'), true);
  $('login-message').textContent = message;
  show($('login-message'), Boolean(message));
  $('password').value = '';
  ($('username').value ? $('password') : $('username')).focus();
}

function showApp() {
  show($('login'), false);
  show($('login-error'), false);
  const bound = tenant();
  $('whoami').textContent = `${username()}`;
  $('role').textContent = bound.kind ? `${role()} · ${bound.kind} ${bound.name}` : role();
  show($('session'), !isOpen());
  show($('app'), true);
  if (api.doc) {
    renderMethodList();
    route();
  }
}

function loginBusy(busy) {
  $('login-submit').disabled = busy;
  $('login-form').setAttribute('aria-busy', String(busy));
  show($('login-progress'), busy);
}

async function logIn(event) {
  event.preventDefault();
  const name = $('username').value.trim();
  show($('login-error'), false);
  show($('login-message'), false);
  loginBusy(true);
  try {
    const response = await fetch(LOGIN_PATH, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ username: name, password: $('password').value }),
    });
    const body = await readJson(response);
    if (!response.ok || !body || !body.token) {
      const why = body && typeof body === 'object' && body.message ? body.message : `${response.status} ${response.statusText}`;
      $('login-error').textContent = `Login failed: ${why}`;
      show($('login-error'), true);
      return;
    }
    remember(body.token, name);
    showApp();
  } catch (error) {
    $('login-error').textContent = `Login failed: ${error.message}`;
    show($('login-error'), true);
  } finally {
    loginBusy(false);
  }
}

// A token pasted from the identity provider the server trusts: kept once the server accepts it.
async function useToken(event) {
  event.preventDefault();
  const pasted = $('pasted-token').value.trim().replace(/^Bearer\s+/i, '');
  show($('token-error'), false);
  try {
    const response = await fetch(CHECK_TOKEN_PATH, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ token: pasted }),
    });
    const body = await readJson(response);
    if (!response.ok || !body || body.success !== true) {
      $('token-error').textContent = 'The server does not accept this token: it is expired, of another issuer or audience, or not signed by the provider.';
      show($('token-error'), true);
      return;
    }
    $('pasted-token').value = '';
    remember(pasted, String(claimsOf(pasted).sub || '?'));
    showApp();
  } catch (error) {
    $('token-error').textContent = `The token cannot be checked: ${error.message}`;
    show($('token-error'), true);
  }
}

async function logOut() {
  leaveView();
  try {
    // Revokes the token on the server; whatever it answers, this tab forgets it.
    await fetch(LOGOUT_PATH, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token()}` }, body: '{}' });
  } catch (error) {
    // The server may be gone; forgetting the token is still right.
  }
  forget();
  showLogin('Logged out.');
}

// A 401 means the token expired, was revoked or never was: only a new login helps.
api.onUnauthenticated = (body) => {
  forget();
  const reason = body && body.message ? ` (${body.message})` : '';
  showLogin(`Your session has ended${reason}: log in again.`);
};

async function start() {
  $('login-form').addEventListener('submit', logIn);
  $('token-form').addEventListener('submit', useToken);
  $('logout').addEventListener('click', logOut);
  setUpExplorer();
  window.addEventListener('hashchange', route);
  // The hash is the router's, so the skip link moves focus itself instead of following a #id.
  $('skip').addEventListener('click', (event) => {
    event.preventDefault();
    focusHeading();
  });
  if (token()) showApp();
  else showLogin();
  try {
    const doc = await loadDocument();
    const info = doc.info || {};
    $('doc-info').textContent = `${info.title || ''} ${info.version || ''}`.trim();
    // Nothing here serves native gRPC (a proxy under uvicorn): no grpcurl command to give.
    show($('copy-grpcurl'), api.grpcPort !== null);
  } catch (error) {
    $('view').replaceChildren(element('p', { class: 'error-text', text: `Cannot load /openapi.json: ${error.message}` }));
    return;
  }
  // No login in the document: a server that checks no credentials (portico proxy --auth none).
  setOpen(!api.methods.has(LOGIN_RPC));
  if (token() || isOpen()) showApp();
  document.body.dataset.ready = 'true';
}

start();
