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

// Secrets typed into a request (a Login's password, a CheckToken's token) are not kept.
const SECRET = /pass(word)?|secret|token/i;

function redact(value) {
  if (Array.isArray(value)) return value.map(redact);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, SECRET.test(key) && typeof item === 'string' ? '(not kept)' : redact(item)]));
}

function redacted(body) {
  const text = String(body);
  try {
    return JSON.stringify(redact(JSON.parse(text))); // one message
  } catch (error) {
    // NDJSON (a client stream): each line on its own.
    return text.split('\n').map((line) => {
      try {
        return line.trim() ? JSON.stringify(redact(JSON.parse(line))) : line;
      } catch (notJson) {
        return line; // not JSON: the server refused it anyway
      }
    }).join('\n');
  }
}

export function record(rpc, body, status, ms) {
  const entries = history();
  entries.unshift({ rpc, body: redacted(body).slice(0, BODY_LIMIT), status, ms, at: new Date().toISOString() });
  sessionStorage.setItem(KEY, JSON.stringify(entries.slice(0, LIMIT)));
}

export function clearHistory() {
  sessionStorage.removeItem(KEY);
}
