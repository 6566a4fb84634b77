// KaaS clusters: the list with status, nodes and versions, a page per cluster with its machines,
// kubeconfig download and the scale / upgrade / delete actions. The Cluster API has no watch
// stream, so this view asks again every REFRESH_MS while it is open (every second while a
// cluster is changing: provisioning, reconciling, stopping).
import { call } from '../api.js';
import { element, facts, link, statusPill, table } from '../dom.js';
import { actionButton, confirmAction, failure, formDialog, heading, liveBadge, notify, poll, section } from '../ui.js';

const API = 'cnct.kaas.api.Cluster';
const REFRESH_MS = 3000;
const DETAIL_LIMIT = 50; // clusters whose machines the list asks for on each refresh
const SETTLED = new Set(['RUNNING', 'ERROR', 'DEGRADED']);
const changing = (status) => !SETTLED.has(status);
// A refresh revalidates: what has not changed since the last ask comes back as a 304 (api.js).
const POLLING = { revalidate: true };

async function clusterRows() {
  const reply = await call(`${API}.GetClusterList`, {}, POLLING);
  const clusters = reply.clusters || [];
  const nodes = await Promise.all(clusters.slice(0, DETAIL_LIMIT).map((c) =>
    call(`${API}.GetClusterNodesStatus`, { clusterName: c.name }, POLLING).catch(() => null)));
  return clusters.map((cluster, index) => ({ ...cluster, nodes: nodes[index] }));
}

function versionsOf(nodes) {
  const versions = new Set((nodes && nodes.machines ? nodes.machines : []).map((m) => m.k8sVersion).filter(Boolean));
  return [...versions].sort().join(', ') || '—';
}

function readyCount(nodes) {
  if (!nodes) return '—';
  const machines = nodes.machines || [];
  const ready = machines.filter((m) => m.k8sNodeStatus === 'Ready').length;
  return `${ready}/${machines.length}`;
}

export function renderClusters(root, go) {
  const badge = liveBadge();
  const create = actionButton(`${API}.CreateCluster`, 'Create cluster', () => createCluster(go));
  const body = element('div', { class: 'view-body' }, element('p', { class: 'muted', text: 'Loading clusters…' }));
  root.replaceChildren(heading('KaaS clusters', badge, create),
    element('p', { class: 'muted', text: 'The Cluster API has no watch stream: this list asks again every few seconds.' }),
    section('Clusters', body));
  let shown = '';
  poll(REFRESH_MS, async () => {
    try {
      const rows = await clusterRows();
      badge.set('polling', REFRESH_MS);
      const busy = rows.some((c) => changing(c.status));
      const text = JSON.stringify(rows);
      if (text === shown) return busy; // unchanged: keyboard focus stays where it is
      shown = text;
      body.replaceChildren(table([
        { label: 'Name', value: (c) => link(`#/kaas/${encodeURIComponent(c.name)}`, c.name) },
        { label: 'Status', value: (c) => statusPill(c.status) },
        { label: 'Nodes ready', value: (c) => readyCount(c.nodes) },
        { label: 'Kubernetes', value: (c) => versionsOf(c.nodes) },
        { label: 'Message', value: (c) => c.status_message || '' },
      ], rows, { key: (c) => c.name, onOpen: (c) => go(`#/kaas/${encodeURIComponent(c.name)}`), label: 'Clusters', empty: 'No clusters yet.' }));
      return busy;
    } catch (error) {
      badge.set('failed', error);
      shown = ''; // the failure replaced the table: the next reply draws it again
      body.replaceChildren(failure(error));
      return false;
    }
  });
}

function createCluster(go) {
  formDialog(`${API}.CreateCluster`, {
    title: 'Create a cluster',
    submitLabel: 'Create',
    initial: { control_plane_nodes: { count: 1, instanceType: 'standard' }, worker_node_pools: [{ instanceType: 'standard', count: 1 }] },
    submit: async (value) => {
      const reply = await call(`${API}.CreateCluster`, value, { remember: true });
      notify(`Cluster ${reply.cluster ? reply.cluster.name : value.name} is being created.`);
      go(`#/kaas/${encodeURIComponent(value.name || '')}`);
    },
  });
}

// Pool names are not in any reply; machines are named <cluster>-<pool>-<n>, which gives them.
function poolsOf(name, machines) {
  const pools = new Map();
  for (const machine of machines) {
    const match = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(.+)-\\d+$`).exec(machine.maasHostname || '');
    if (match) pools.set(match[1], (pools.get(match[1]) || 0) + 1);
  }
  return pools;
}

function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/yaml' }));
  const anchor = element('a', { href: url, download: `${name}.kubeconfig.yaml` });
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function renderCluster(root, go, name) {
  const badge = liveBadge();
  const summary = element('div', { class: 'view-body' }, element('p', { class: 'muted', text: 'Loading…' }));
  const actions = element('div', { class: 'actions' });
  const machines = element('div');
  const back = link('#/kaas', '← All clusters');
  root.replaceChildren(element('p', {}, back), heading(`Cluster ${name}`, badge), actions,
    section('Summary', summary), section('Nodes', machines));
  let latest = { cluster: null, machines: [] };
  let shown = '';
  let refresh = () => {};

  const kubeconfig = element('button', { type: 'button', disabled: true, id: 'kubeconfig' }, 'Download kubeconfig');
  kubeconfig.addEventListener('click', () => latest.cluster && download(name, latest.cluster.kubeconfig));
  actions.append(kubeconfig);
  const scale = actionButton(`${API}.ScaleNodePool`, 'Scale pool', () => {
    const pools = [...poolsOf(name, latest.machines)].filter(([pool]) => pool !== 'control-plane');
    formDialog(`${API}.ScaleNodePool`, {
      title: `Scale a node pool of ${name}`,
      submitLabel: 'Scale',
      intro: element('p', { class: 'muted', text: `Pools now: ${pools.map(([p, n]) => `${p} (${n})`).join(', ') || 'none seen'}` }),
      initial: { clusterName: name, node_pools: pools.slice(0, 1).map(([pool, count]) => ({ name: pool, count })) },
      submit: async (value) => {
        await call(`${API}.ScaleNodePool`, value, { remember: true });
        notify(`Scaling ${name}.`);
        refresh();
      },
    });
  });
  const upgrade = actionButton(`${API}.UpgradeCluster`, 'Upgrade', async () => {
    let versions = [];
    try {
      versions = (await call(`${API}.GetUpgradeClusterInformation`, { name })).versions || [];
    } catch (error) {
      notify(error.message, 'error');
      return;
    }
    if (!versions.length) {
      notify(`No newer version is available for ${name}.`);
      return;
    }
    const target = versions[0];
    if (await confirmAction(`Upgrade ${name}?`, `Upgrade ${name} to Kubernetes ${target}, one machine at a time.`, `Upgrade to ${target}`)) {
      try {
        await call(`${API}.UpgradeCluster`, { name, version: target }, { remember: true });
        notify(`Upgrading ${name} to ${target}.`);
        refresh();
      } catch (error) {
        notify(error.message, 'error');
      }
    }
  });
  const remove = actionButton(`${API}.DeleteCluster`, 'Delete', async () => {
    if (await confirmAction(`Delete ${name}?`, `The cluster ${name} and its machines will be released. This cannot be undone.`, 'Delete cluster')) {
      try {
        await call(`${API}.DeleteCluster`, { name }, { remember: true });
        notify(`Deleting ${name}.`);
        go('#/kaas');
      } catch (error) {
        notify(error.message, 'error');
      }
    }
  }, { class: 'danger' });
  actions.append(...[scale, upgrade, remove].filter(Boolean));

  refresh = poll(REFRESH_MS, async () => {
    try {
      const [detail, nodes] = await Promise.all([
        call(`${API}.GetCluster`, { name }, POLLING),
        call(`${API}.GetClusterNodesStatus`, { clusterName: name }, POLLING),
      ]);
      badge.set('polling', REFRESH_MS);
      const busy = changing(detail.cluster.status);
      const text = JSON.stringify([detail, nodes]);
      if (text === shown) return busy; // unchanged: keyboard focus stays where it is
      shown = text;
      latest = { cluster: detail.cluster, machines: nodes.machines || [] };
      kubeconfig.disabled = !detail.cluster.kubeconfig;
      kubeconfig.title = detail.cluster.kubeconfig ? '' : 'The kubeconfig exists once the cluster is RUNNING';
      summary.replaceChildren(facts([
        ['Status', statusPill(detail.cluster.status)],
        ['Message', detail.cluster.status_message || '—'],
        ['Machines', String(nodes.count ?? latest.machines.length)],
        ['Kubernetes', versionsOf(nodes)],
      ]));
      machines.replaceChildren(table([
        { label: 'Hostname', value: (m) => m.maasHostname },
        { label: 'Node', value: (m) => statusPill(m.k8sNodeStatus) },
        { label: 'Machine', value: (m) => statusPill(m.maasNodeStatus) },
        { label: 'Version', value: (m) => m.k8sVersion },
        { label: 'IP', value: (m) => m.maasIPAddr },
        { label: 'System id', value: (m) => element('code', { text: m.maasSystemId }) },
      ], latest.machines, { key: (m) => m.maasHostname, label: 'Machines', empty: 'No machines yet.' }));
      return busy;
    } catch (error) {
      badge.set('failed', error);
      shown = ''; // the failure replaced the summary: the next reply draws it again
      summary.replaceChildren(failure(error));
      return false;
    }
  });
}
