// The signed-in session: the token (sessionStorage: it lives as long as the tab, is not shared
// with other tabs and is not left on disk), who it belongs to, and what its role may call.

const TOKEN_KEY = 'portico.token';
const USER_KEY = 'portico.user';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function remember(newToken, username) {
  sessionStorage.setItem(TOKEN_KEY, newToken);
  sessionStorage.setItem(USER_KEY, username);
}

export function forget() {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(USER_KEY);
}

export function username() {
  return sessionStorage.getItem(USER_KEY) || '?';
}

// A token's claims, read without checking the signature: only to shape the page. The server
// checks every call, so a forged claim gains nothing but buttons that get PERMISSION_DENIED.
export function claims() {
  return claimsOf(token());
}

export function claimsOf(bearer) {
  if (!bearer) return {};
  try {
    const part = bearer.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const json = new TextDecoder().decode(Uint8Array.from(atob(part), (c) => c.charCodeAt(0)));
    return JSON.parse(json) || {};
  } catch (error) {
    return {};
  }
}

// A token pasted from the identity provider names its roles in its own claim, which the server
// maps (PORTICO_OIDC_ROLES_CLAIM, PORTICO_OIDC_ROLE_MAP): only the server knows what it grants,
// so the page offers every action and shows the server's refusals.
export function fromProvider() {
  return Boolean(token()) && !claims().role;
}

export function role() {
  if (fromProvider()) return 'as the identity provider grants';
  return claims().role || 'viewer';
}

// The edge organisation an account is bound to ({} for none), as its token names it
// (app/services/edge/tenancy.py decides on the server, from the account itself).
export function tenant() {
  const { developer, operator } = claims();
  if (developer) return { kind: 'developer', name: String(developer) };
  if (operator) return { kind: 'operator', name: String(operator) };
  return {};
}

// Whether this account may change an edge instance (ClusterInst, AppInst) of ``developer``:
// a developer account only its own; an operator account none (it reads those on its cloudlets).
export function mayChangeInstanceOf(developer) {
  const bound = tenant();
  if (bound.kind === 'operator') return false;
  return !bound.kind || bound.name === developer;
}

// The server's role policy, read from method names the way it is (app/auth/policy.py; a test
// checks that both agree for every RPC and role). It only decides which actions the page offers.
const PUBLIC = new Set(['services.auth.AuthService.Login', 'services.auth.AuthService.CheckToken']);
const SIGNED_IN = new Set(['services.auth.AuthService.Logout']);
const ADMIN_ONLY_SERVICES = new Set(['edgeproto.CloudletRefsApi', 'edgeproto.ClusterRefsApi', 'edgeproto.NotifyApi']);
const ADMIN_ONLY = new Set(['edgeproto.CloudletInfoApi.InjectCloudletInfo', 'edgeproto.CloudletInfoApi.EvictCloudletInfo']);
const READ_ONLY_SERVICES = new Set(['stats.StatsService']);
const NODE_SERVICES = new Set(['scheduler.NodeService', 'v1alpha.PublicAPI']);
const READ_ONLY_PREFIXES = ['Get', 'List', 'Show', 'Inspect'];

export function isReadOnly(rpc) {
  const dot = rpc.lastIndexOf('.');
  const service = rpc.slice(0, dot);
  const method = rpc.slice(dot + 1);
  return READ_ONLY_SERVICES.has(service) || READ_ONLY_PREFIXES.some((prefix) => method.startsWith(prefix));
}

export function allows(roleName, rpc) {
  if (PUBLIC.has(rpc) || SIGNED_IN.has(rpc)) return true;
  const service = rpc.slice(0, rpc.lastIndexOf('.'));
  if (roleName === 'admin') return true;
  if (roleName === 'node') return NODE_SERVICES.has(service);
  if (ADMIN_ONLY_SERVICES.has(service) || ADMIN_ONLY.has(rpc)) return false;
  if (roleName === 'operator') return true;
  if (roleName === 'viewer') return isReadOnly(rpc);
  return false;
}

// A server with no login (portico proxy without --auth jwt) checks no role: everything is offered.
let open = false;

export function setOpen(value) {
  open = value;
}

export function isOpen() {
  return open;
}

export function mayCall(rpc) {
  return open || fromProvider() || allows(role(), rpc);
}
