// The calls made in this tab (sessionStorage, like the token): newest first, bounded so a long
// session does not grow without end. Request bodies are kept; replies are not (they can be big).
const KEY = 'portico.history';
const LIMIT = 100;
const BODY_LIMIT = 20000; // characters of a request kept; longer ones are cut

export function history() {
  try {
    return JSON.parse(sessionStorage.getItem(KEY) || '[]');
  } catch (error) {
    return [];
  }
}

export function record(rpc, body, status, ms) {
  const entries = history();
  entries.unshift({ rpc, body: String(body).slice(0, BODY_LIMIT), status, ms, at: new Date().toISOString() });
  sessionStorage.setItem(KEY, JSON.stringify(entries.slice(0, LIMIT)));
}

export function clearHistory() {
  sessionStorage.removeItem(KEY);
}
