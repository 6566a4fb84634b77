// Scheduler and runtime: the nodes (as the runtime's pods and events name them: the five APIs
// have no call that lists the scheduler's nodes), the pods with their state, the runtime's
// events live, and a page per pod with its logs followed live. Events come from ListenEvents,
// which stays open; each event also refreshes the pod table, so the table changes when the
// cluster does. What makes no event (an instance waiting for a node) shows within POLL_MS: the
// table also asks again that often (revalidated, as the other views' polls are).
import { call, live, stream } from '../api.js';
import { element, facts, link, statusPill, table, timeCell, toDate } from '../dom.js';
import { actionButton, confirmAction, every, failure, formDialog, heading, liveBadge, notify, section } from '../ui.js';

const RUNTIME = 'v1alpha.PublicAPI';
const INSTANCES = 'scheduler.InstanceService';
const EVENTS_SHOWN = 200; // newest events kept on the page
const BACKLOG_SECONDS = 3600; // events replayed when the page opens
const POLL_MS = 5000;
const UNPLACED = 'none'; // the scheduler/node of a pod no node holds: no node of its own
const GONE_STATE = 'POD_STATE_GARBAGE'; // destroyed: on no node any more

function annotation(pod, key) {
  const found = (pod.annotations || []).find((a) => (a.Key ?? a.key) === key);
  return found ? found.value : '';
}

// Ids longer than a UUID's first group are cut there, visibly (the whole id is the title).
const ID_CHARS = 12;
const shortId = (id) => {
  const text = String(id || '');
  return text.length <= ID_CHARS ? text : `${text.slice(0, 8)}…`;
};
const idCell = (id) => element('span', { text: shortId(id), title: String(id || '') });

function eventKey(event) {
  return `${event.type}|${event.id}|${event.time}|${event.from}`;
}

function eventData(event) {
  return Object.fromEntries((event.data || []).map((d) => [d.Key ?? d.key, d.value]));
}

function eventItem(event) {
  const data = (event.data || []).map((d) => `${d.Key ?? d.key}=${d.value}`).join(' ');
  return element('li', { dataset: { id: event.id, type: event.type } },
    timeCell(event.time), ' ', statusPill(String(event.type || '').replace(/^EVENT_TYPE_/, '')), ' ',
    element('span', { class: 'event-from', text: event.from || '' }), ' ',
    element('code', { class: 'muted', text: shortId(event.id) }), data ? ` ${data}` : '');
}

// ListenEvents kept open; on a reconnect it asks again from the last event's second and drops
// the events it already has, so nothing is lost or shown twice.
function followEvents(filter, onEvents, badge) {
  const seen = new Set();
  let since = Math.floor(Date.now() / 1000) - BACKLOG_SECONDS;
  return live(`${RUNTIME}.ListenEvents`, () => ({ filter: { ...filter, since_time: String(since) } }), (result) => {
    const fresh = (result.events || []).filter((event) => !seen.has(eventKey(event)));
    for (const event of fresh) {
      seen.add(eventKey(event));
      since = Math.max(since, Number(event.time) || 0);
    }
    if (fresh.length) onEvents(fresh);
  }, { onState: (state, error) => badge.set(state, error) });
}

export function renderRuntime(root, go) {
  const badge = liveBadge();
  const create = actionButton(`${INSTANCES}.Create`, 'Create instance', () => createInstance());
  const nodes = element('div');
  const pods = element('div', {}, element('p', { class: 'muted', text: 'Loading pods…' }));
  const events = element('ol', { class: 'events', id: 'events', 'aria-live': 'polite' },
    element('li', { class: 'muted', id: 'no-events', text: 'No runtime events in the last hour. Pods starting, stopping and exiting show here as they happen.' }));
  const seenNodes = new Set(); // named by the events of this visit: a node may hold no pod now
  root.replaceChildren(heading('Scheduler and runtime', badge, create),
    element('div', { class: 'grid-2' }, section('Nodes', nodes), section('Events', events)),
    section('Pods', pods));

  let shown = '';
  let pending = null;
  const refresh = async () => {
    try {
      const reply = await call(`${RUNTIME}.ListPods`, { detail: true }, { revalidate: true });
      const list = reply.pods || [];
      const text = JSON.stringify(list);
      const known = [...seenNodes].sort().join(' ');
      if (`${text}${known}` === shown) return; // unchanged: keep focus and selection where they are
      shown = `${text}${known}`;
      pods.replaceChildren(podTable(list, go, refresh));
      nodes.replaceChildren(...nodeTable(list, seenNodes));
    } catch (error) {
      pods.replaceChildren(failure(error));
    }
  };
  const soon = () => {
    clearTimeout(pending);
    pending = setTimeout(refresh, 150); // a burst of events causes one refresh
  };
  every(POLL_MS, refresh);
  followEvents({}, (fresh) => {
    events.querySelector('#no-events')?.remove();
    for (const event of fresh) {
      events.prepend(eventItem(event));
      const node = eventData(event).node;
      if (node && node !== UNPLACED) seenNodes.add(node);
    }
    while (events.childElementCount > EVENTS_SHOWN) events.lastElementChild.remove();
    soon();
  }, badge);

  function createInstance() {
    formDialog(`${INSTANCES}.Create`, {
      title: 'Create an instance',
      submitLabel: 'Create',
      initial: { resource: { limit: { cpu: 1, memory: 128, disk: 1 } } },
      submit: async (value) => {
        // The reply streams the instance's states; the first one says it was accepted, and
        // the events stream shows the rest (the instance lives on when this call ends).
        const controller = new AbortController();
        await new Promise((resolve, reject) => {
          stream(`${INSTANCES}.Create`, value, (status) => {
            notify(`Instance ${value.name || status.id}: ${status.status}`);
            controller.abort();
            resolve();
          }, { signal: controller.signal, remember: true }).then(resolve, (error) => (error.name === 'AbortError' ? resolve() : reject(error)));
        });
      },
    });
  }
}

// The nodes that hold pods now, with the state the scheduler gives them, and those the events
// named that hold none now (a real node agent's node whose instance was destroyed, say). A pod
// no node holds ("none") is no node: the instances waiting for one are counted below the table.
function nodeTable(pods, named) {
  const byNode = new Map();
  const entry = (node) => byNode.get(node) || { node, state: '', pods: 0, running: 0 };
  let waiting = 0;
  for (const pod of pods) {
    if (pod.state === GONE_STATE) continue;
    const node = annotation(pod, 'scheduler/node') || UNPLACED;
    if (node === UNPLACED) {
      waiting += 1;
      continue;
    }
    const row = entry(node);
    row.state = annotation(pod, 'scheduler/node-state') || row.state;
    row.pods += 1;
    row.running += pod.state === 'POD_STATE_RUNNING' ? 1 : 0;
    byNode.set(node, row);
  }
  for (const node of named) if (!byNode.has(node)) byNode.set(node, entry(node));
  const shown = [table([
    { label: 'Node', value: (n) => n.node },
    { label: 'State', value: (n) => (n.state ? statusPill(n.state) : element('span', { class: 'muted', text: 'no pod now', title: 'Named by a recent event; the runtime API shows a node\'s state only through its pods.' })) },
    { label: 'Pods', value: (n) => String(n.pods) },
    { label: 'Running', value: (n) => String(n.running) },
  ], [...byNode.values()].sort((a, b) => a.node.localeCompare(b.node)), { key: (n) => n.node, label: 'Nodes', empty: 'No node holds a pod, and no event of the last hour names one.' })];
  if (waiting) {
    const instances = waiting === 1 ? '1 instance waits' : `${waiting} instances wait`;
    shown.push(element('p', { class: 'muted', id: 'waiting-pods', text: `${instances} for a node that can hold it (its pod is preparing, on node "none").` }));
  }
  return shown;
}

function instanceAction(rpc, label, pod, after, confirmText) {
  return actionButton(rpc, label, async () => {
    if (confirmText && !(await confirmAction(`${label} ${annotation(pod, 'scheduler/instance-name') || pod.id}?`, confirmText, label))) return;
    try {
      await call(rpc, { id: pod.id }, { remember: true });
      notify(`${label}: ${annotation(pod, 'scheduler/instance-name') || pod.id}`);
      after();
    } catch (error) {
      notify(error.message, 'error');
    }
  }, { class: 'small secondary' });
}

// What the scheduler accepts in each state: Stop a running pod, Start an exited one, Destroy
// any that is not already going or gone (a destroyed pod offers nothing).
const GONE = new Set(['POD_STATE_DELETING', 'POD_STATE_GARBAGE']);

function podActions(p, after) {
  if (GONE.has(p.state)) return [];
  return [
    p.state === 'POD_STATE_RUNNING' && instanceAction(`${INSTANCES}.Stop`, 'Stop', p, after),
    p.state === 'POD_STATE_EXITED' && instanceAction(`${INSTANCES}.Start`, 'Start', p, after),
    instanceAction(`${INSTANCES}.Destroy`, 'Destroy', p, after, 'The instance is stopped and removed for good.'),
  ].filter(Boolean);
}

function podTable(pods, go, after) {
  return table([
    { label: 'Pod', value: (p) => link(`#/runtime/pod/${encodeURIComponent(p.id)}`, idCell(p.id)) },
    { label: 'Instance', value: (p) => annotation(p, 'scheduler/instance-name') },
    { label: 'Node', value: (p) => annotation(p, 'scheduler/node') },
    { label: 'State', value: (p) => statusPill(p.state) },
    { label: 'IP', value: (p) => (p.networks || []).map((n) => n.ipv4).filter(Boolean).join(', ') },
    { label: 'Created', value: (p) => timeCell(p.created_at) },
    { label: 'Actions', value: (p) => element('span', { class: 'row-actions' }, ...podActions(p, after)) },
  ], pods, { key: (p) => p.id, onOpen: (p) => go(`#/runtime/pod/${encodeURIComponent(p.id)}`), label: 'Pods', empty: 'No pods.' });
}

export function renderPod(root, go, id) {
  const badge = liveBadge();
  const summary = element('div', {}, element('p', { class: 'muted', text: 'Loading…' }));
  const logs = element('pre', { class: 'logs', id: 'logs', tabindex: '0', 'aria-live': 'polite' });
  const events = element('ol', { class: 'events' });
  root.replaceChildren(element('p', {}, link('#/runtime', '← All pods')), heading(`Pod ${shortId(id)}`),
    section('Summary', summary), section('Logs', element('p', {}, badge), logs), section('Events', events));
  call(`${RUNTIME}.InspectPod`, { id }).then((reply) => {
    const pod = reply.pod;
    summary.replaceChildren(facts([
      ['Id', element('code', { text: pod.id })],
      ['Instance', annotation(pod, 'scheduler/instance-name')],
      ['Node', annotation(pod, 'scheduler/node')],
      ['State', statusPill(pod.state)],
      ['IP', (pod.networks || []).map((n) => n.ipv4).join(', ')],
      ['Created', timeCell(pod.created_at)],
      ['Started', timeCell(pod.started_at)],
    ]));
  }, (error) => summary.replaceChildren(failure(error)));
  // Logs follow: the stream stays open and sends new lines. A reconnect asks from the second
  // of the last line shown (each line starts with its time) and drops the lines it already has.
  const seen = new Set();
  let since = 0;
  live(`${RUNTIME}.GetLogs`, () => (since ? { pod_id: id, follow: true, since_time: String(since) } : { pod_id: id, follow: true, lines: 200 }), (result) => {
    const lines = (result.lines || []).filter((line) => !seen.has(line));
    if (!lines.length) return;
    const stick = logs.scrollTop + logs.clientHeight >= logs.scrollHeight - 4;
    logs.append(`${lines.join('\n')}\n`);
    for (const line of lines) seen.add(line);
    const at = toDate(lines[lines.length - 1].split(' ')[0]);
    if (at) since = Math.floor(at.getTime() / 1000);
    if (stick) logs.scrollTop = logs.scrollHeight;
  }, { onState: (state, error) => badge.set(state, error), reconnectOnEnd: false });
  followEvents({ ids: [id] }, (fresh) => {
    for (const event of fresh) events.prepend(eventItem(event));
  }, liveBadge());
}
