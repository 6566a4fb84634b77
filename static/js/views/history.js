// The calls made in this tab, newest first; one opens again in the explorer with its request.
import { element, link, table, timeCell } from '../dom.js';
import { clearHistory, history } from '../history.js';
import { heading } from '../ui.js';

export function renderHistory(root, go) {
  const draw = () => {
    const entries = history();
    const clear = element('button', { type: 'button', class: 'secondary', id: 'clear-history' }, 'Clear');
    clear.addEventListener('click', () => {
      clearHistory();
      draw();
    });
    root.replaceChildren(heading('Request history', clear),
      element('p', { class: 'muted', text: 'The calls you send from the explorer and the actions you take in the views (create, stop, delete…), kept in this tab until it closes; the views\' own reads are not kept. Open one to send it again or copy it as curl.' }),
      table([
        { label: 'When', value: (e) => timeCell(e.at) },
        { label: 'Method', value: (e) => link(`#/history/${entries.indexOf(e)}`, e.rpc) },
        { label: 'Status', value: (e) => String(e.status) },
        { label: 'Time', value: (e) => (e.ms === null || e.ms === undefined ? 'stream' : `${e.ms} ms`) },
        { label: 'Request', value: (e) => element('code', { class: 'clip', text: e.body.length > 80 ? `${e.body.slice(0, 79)}…` : e.body }) },
      ], entries, { key: (e) => e.at, onOpen: (e) => go(`#/history/${entries.indexOf(e)}`), label: 'History', empty: 'No calls yet: send one from the Explorer, or take an action in a view, and it shows here.' }));
  };
  draw();
}

export function historyEntry(index) {
  return history()[Number(index)] || null;
}
