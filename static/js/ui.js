// Pieces the views share: a view's lifetime (its timers and streams stop when the page moves
// on), confirmation and form dialogs, notices, and the badge saying whether a view is live.
import { api, CallError, codeName, forgetReplies, requestSchema, stopAllLive } from './api.js';
import { $, button, element, show } from './dom.js';
import { buildForm } from './forms.js';
import { mayCall } from './session.js';

// The polls of the view on screen; leaving the view stops them.
const polls = new Set();
const BUSY_MS = 1000;

// Runs fn now and again ms after each run ends, until the view is left (for data no stream
// carries); sooner (BUSY_MS) while fn says something is changing (it resolves true), so a
// cluster being provisioned is followed closely and a settled one cheaply. A run never overlaps
// the one before. Returns a function that asks at once (after an action, so it shows at once).
export function poll(ms, fn) {
  const handle = { timer: null, stopped: false };
  const run = async () => {
    clearTimeout(handle.timer);
    const busy = await fn();
    if (handle.stopped) return;
    clearTimeout(handle.timer); // an asking-at-once that overlapped this run
    handle.timer = setTimeout(run, busy ? BUSY_MS : ms);
  };
  polls.add(handle);
  run();
  return run;
}

export function every(ms, fn) {
  return poll(ms, async () => {
    await fn();
    return false;
  });
}

export function leaveView() {
  for (const handle of polls) {
    handle.stopped = true;
    clearTimeout(handle.timer);
  }
  polls.clear();
  stopAllLive();
  forgetReplies(); // what the view's polls remembered for revalidating
  const dialog = $('dialog');
  if (dialog.open) dialog.close('cancel');
}

export function notify(message, kind = 'info') {
  const note = element('div', { class: `toast ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, message);
  $('toasts').append(note);
  setTimeout(() => note.remove(), kind === 'error' ? 9000 : 5000);
}

export function errorText(error) {
  if (error instanceof CallError) {
    const fields = [];
    for (const detail of error.status.details || []) {
      for (const v of detail.field_violations || detail.fieldViolations || []) fields.push(`${v.field}: ${v.description}`);
    }
    return `${codeName(error.code)}: ${error.message}${fields.length ? ` (${fields.join('; ')})` : ''}`;
  }
  return error && error.message ? error.message : String(error);
}

// The live badge of a view: what its stream is doing, said in words and colour.
export function liveBadge() {
  const badge = element('span', { class: 'live-badge', role: 'status', dataset: { state: 'connecting' } }, 'connecting…');
  const words = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…', ended: 'ended', failed: 'stream failed', polling: 'refreshing' };
  // A view without a stream to follow says how often it asks again, and why.
  badge.set = (state, detail) => {
    badge.dataset.state = state;
    badge.textContent = words[state] || state;
    if (state === 'polling' && typeof detail === 'number') badge.textContent = `refreshing every ${detail / 1000} s`;
    badge.title = detail instanceof Error ? errorText(detail) : '';
  };
  return badge;
}

function openDialog(title, body, actions) {
  const dialog = $('dialog');
  dialog.replaceChildren(element('form', { method: 'dialog', class: 'dialog-body' },
    element('h2', { text: title }), body, element('div', { class: 'actions' }, ...actions)));
  dialog.showModal();
  return dialog;
}

// A yes/no question before a destructive action; resolves true only on the confirm button.
export function confirmAction(title, message, confirmLabel) {
  return new Promise((resolve) => {
    const dialog = openDialog(title, element('p', { text: message }), [
      element('button', { value: 'cancel', class: 'secondary', type: 'submit', formnovalidate: true }, 'Cancel'),
      element('button', { value: 'confirm', class: 'danger', type: 'submit', id: 'confirm' }, confirmLabel),
    ]);
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'confirm'), { once: true });
  });
}

// A dialog holding the request form of rpc; submit(value) runs the call. The dialog stays open
// with the server's error when it fails, so the user can correct the field it names.
export function formDialog(rpc, { title, initial = {}, submitLabel = 'Send', submit, intro = null }) {
  const method = api.methods.get(rpc);
  const form = buildForm(requestSchema(method), initial);
  const problem = element('p', { class: 'error-text', role: 'alert', hidden: true });
  const send = element('button', { type: 'submit', value: 'send', id: 'dialog-submit' }, submitLabel);
  const dialog = openDialog(title, element('div', {}, intro, form.node, problem), [
    element('button', { value: 'cancel', class: 'secondary', type: 'submit', formnovalidate: true }, 'Cancel'),
    send,
  ]);
  dialog.querySelector('form').addEventListener('submit', async (event) => {
    if (event.submitter && event.submitter.value === 'cancel') return;
    event.preventDefault();
    show(problem, false);
    send.disabled = true;
    try {
      await submit(form.value());
      dialog.close('sent');
    } catch (error) {
      problem.textContent = errorText(error);
      show(problem, true);
    } finally {
      send.disabled = false;
    }
  });
  const first = dialog.querySelector('input, select, textarea');
  if (first) first.focus();
}

// A button for a write action, made only when the role may call it: a viewer never sees one.
export function actionButton(rpc, label, onClick, props = {}) {
  if (!mayCall(rpc)) return null;
  return button(label, onClick, { ...props, dataset: { action: rpc, ...(props.dataset || {}) } });
}

export function heading(title, ...extra) {
  return element('div', { class: 'view-head' }, element('h2', { text: title }), ...extra);
}

export function section(title, ...children) {
  return element('section', { class: 'panel card' }, element('h3', { text: title }), ...children);
}

export function failure(error) {
  return element('p', { class: 'error-text', role: 'alert', text: errorText(error) });
}
