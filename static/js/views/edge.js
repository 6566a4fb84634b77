// Edge: cloudlets (with the state their resource manager reports), cluster instances and app
// instances, and per developer the graph of their objects. Create and delete of instances are
// server streams of progress messages, shown live while the object changes. The Show RPCs end
// after answering (edgeproto offers no watch stream to operators or viewers; StreamNotice is the
// admin-only sync protocol of the resource managers, and joining it would register this page as
// a peer), so the tables are asked again every REFRESH_MS and after each progress message.
import { collect, stream } from '../api.js';
import { element, link, statusPill, table, timeCell } from '../dom.js';
import { actionButton, confirmAction, every, failure, formDialog, heading, liveBadge, notify, section } from '../ui.js';
import { objectGraph } from '../graph.js';
import { mayCall, mayChangeInstanceOf, tenant } from '../session.js';

const E = 'edgeproto';
const REFRESH_MS = 5000;
// A refresh revalidates: a Show whose objects have not changed comes back as a 304 (api.js).
const POLLING = { revalidate: true };

const cloudletName = (key) => (key ? `${key.name} (${(key.operator_key || {}).name || '?'})` : '');
const clusterInstName = (key) => (key ? `${(key.cluster_key || {}).name} @ ${cloudletName(key.cloudlet_key)}` : '');
const appName = (key) => (key ? `${key.name} ${key.version || ''}`.trim() : '');

// What a cloudlet's instances use is in its CloudletRefs, an internal API only admins read.
const REFS = `${E}.CloudletRefsApi.ShowCloudletRefs`;

async function world() {
  const [cloudlets, infos, refs, clusterInsts, appInsts, developers, apps] = await Promise.all([
    collect(`${E}.CloudletApi.ShowCloudlet`, {}, POLLING),
    collect(`${E}.CloudletInfoApi.ShowCloudletInfo`, {}, POLLING),
    mayCall(REFS) ? collect(REFS, {}, POLLING) : Promise.resolve(null),
    collect(`${E}.ClusterInstApi.ShowClusterInst`, {}, POLLING),
    collect(`${E}.AppInstApi.ShowAppInst`, {}, POLLING),
    collect(`${E}.DeveloperApi.ShowDeveloper`, {}, POLLING),
    collect(`${E}.AppApi.ShowApp`, {}, POLLING),
  ]);
  const state = new Map(infos.map((info) => [JSON.stringify(info.key), info]));
  const used = new Map((refs || []).map((r) => [JSON.stringify(r.key), r]));
  return {
    cloudlets: cloudlets.map((c) => ({ ...c, info: state.get(JSON.stringify(c.key)), refs: refs && (used.get(JSON.stringify(c.key)) || {}) })),
    clusterInsts, appInsts, developers, apps,
  };
}

// "8 of 32 vCPU · 14,336 of 65,536 MB · 100 of 1,000 GB": what is used (when this role may read
// it) of what the resource manager reported. A maximum it did not report (0) is "?", never a
// capacity of nothing.
function capacity(c) {
  const number = (value) => Number(value || 0).toLocaleString('en');
  const part = (used, max, unit) => {
    const of = `${Number(max || 0) > 0 ? number(max) : '?'} ${unit}`;
    return c.refs ? `${number(used)} of ${of}` : of;
  };
  const info = c.info || {};
  const refs = c.refs || {};
  const text = [part(refs.used_vcores, info.os_max_vcores, 'vCPU'), part(refs.used_ram, info.os_max_ram, 'MB'),
    part(refs.used_disk, info.os_max_vol_gb, 'GB')].join(' · ');
  return element('span', { text, title: '? = not reported by the cloudlet\'s resource manager' });
}

// Runs a progress stream (Create/Delete/Update of cloudlets and instances), each message shown
// in the progress panel as it arrives.
async function withProgress(panel, title, rpc, body, after) {
  const list = element('ol', { class: 'progress-list' });
  const state = element('span', {}, statusPill('IN_PROGRESS'));
  const entry = element('div', { class: 'progress-entry', dataset: { rpc } }, element('h4', {}, `${title} `, state), list);
  panel.prepend(entry);
  panel.hidden = false;
  try {
    await stream(rpc, body, (result) => {
      list.append(element('li', {}, timeCell(new Date().toISOString()), ' ', result.message || JSON.stringify(result)));
      after();
    }, { remember: true });
    state.replaceChildren(statusPill('DONE'));
    entry.dataset.state = 'done';
  } catch (error) {
    state.replaceChildren(statusPill('FAILED'));
    entry.dataset.state = 'failed';
    list.append(element('li', { class: 'error-text', text: error.message }));
  }
  after();
}

export function renderEdge(root, go) {
  const badge = liveBadge();
  const progress = element('div', { class: 'panel card', id: 'progress', hidden: true, 'aria-live': 'polite' }, element('h3', { text: 'Progress' }));
  const cloudlets = element('div', {}, element('p', { class: 'muted', text: 'Loading…' }));
  const clusterInsts = element('div');
  const appInsts = element('div');
  const developers = element('div');
  let latest = null;
  let shown = '';
  const refresh = async () => {
    try {
      latest = await world();
      badge.set('polling', REFRESH_MS);
      const text = JSON.stringify(latest);
      if (text === shown) return;
      shown = text;
      draw(latest);
    } catch (error) {
      badge.set('failed', error);
      shown = ''; // the failure replaced the cloudlets: the next reply draws them again
      cloudlets.replaceChildren(failure(error));
    }
  };
  // An account bound to an operator reads the instances on its cloudlets but makes none.
  const createAppInst = tenant().kind === 'operator' ? null : actionButton(`${E}.AppInstApi.CreateAppInst`, 'Create app instance', () => {
    formDialog(`${E}.AppInstApi.CreateAppInst`, {
      title: 'Create an app instance',
      submitLabel: 'Create',
      // Offered: the first app on the first cluster instance (both keys are needed).
      initial: latest && latest.apps[0] && latest.clusterInsts[0]
        ? { key: { app_key: latest.apps[0].key, cluster_inst_key: latest.clusterInsts[0].key } }
        : {},
      submit: async (value) => {
        withProgress(progress, `Create ${appName(((value.key || {}).app_key))}`, `${E}.AppInstApi.CreateAppInst`, value, refresh);
      },
    });
  });
  root.replaceChildren(heading('Edge', badge, createAppInst), progress,
    section('Cloudlets', cloudlets), section('Cluster instances', clusterInsts), section('App instances', appInsts),
    section('Developers', developers));

  function deleteButton(rpc, what, key, developer) {
    if (!mayChangeInstanceOf(developer)) return null;
    return actionButton(rpc, 'Delete', async () => {
      if (await confirmAction(`Delete ${what}?`, `${what} will be deleted; its progress shows above.`, 'Delete')) {
        withProgress(progress, `Delete ${what}`, rpc, { key }, refresh);
      }
    }, { class: 'small danger', 'aria-label': `Delete ${what}` }); // which one, to a screen reader
  }

  function draw({ cloudlets: cl, clusterInsts: ci, appInsts: ai, developers: dev }) {
    cloudlets.replaceChildren(table([
      { label: 'Cloudlet', value: (c) => c.key.name },
      { label: 'Operator', value: (c) => (c.key.operator_key || {}).name },
      { label: 'State', value: (c) => statusPill(c.info ? c.info.state : 'UNKNOWN') },
      { label: 'Location', value: (c) => (c.location ? `${c.location.latitude}, ${c.location.longitude}` : '') },
      { label: mayCall(REFS) ? 'Used of capacity' : 'Capacity', value: (c) => (c.info || c.refs ? capacity(c) : '') },
    ], cl, { key: (c) => JSON.stringify(c.key), label: 'Cloudlets', empty: 'No cloudlets.' }));
    clusterInsts.replaceChildren(table([
      { label: 'Cluster', value: (c) => (c.key.cluster_key || {}).name },
      { label: 'Cloudlet', value: (c) => cloudletName(c.key.cloudlet_key) },
      { label: 'Developer', value: (c) => link(`#/edge/developer/${encodeURIComponent(c.key.developer)}`, c.key.developer) },
      { label: 'State', value: (c) => statusPill(c.state) },
      { label: 'Nodes', value: (c) => `${c.num_masters} + ${c.num_nodes}` },
      { label: 'Flavor', value: (c) => (c.flavor || {}).name },
      { label: 'Actions', value: (c) => deleteButton(`${E}.ClusterInstApi.DeleteClusterInst`, `cluster instance ${clusterInstName(c.key)}`, c.key, c.key.developer) || '' },
    ], ci, { key: (c) => JSON.stringify(c.key), label: 'Cluster instances', empty: 'No cluster instances.' }));
    appInsts.replaceChildren(table([
      { label: 'App', value: (a) => appName(a.key.app_key) },
      { label: 'Developer', value: (a) => link(`#/edge/developer/${encodeURIComponent(((a.key.app_key || {}).developer_key || {}).name)}`, ((a.key.app_key || {}).developer_key || {}).name) },
      { label: 'Cluster instance', value: (a) => clusterInstName(a.key.cluster_inst_key) },
      { label: 'State', value: (a) => statusPill(a.state) },
      { label: 'URI', value: (a) => a.uri },
      { label: 'Created', value: (a) => timeCell(a.created_at) },
      { label: 'Actions', value: (a) => deleteButton(`${E}.AppInstApi.DeleteAppInst`, `app instance ${appName(a.key.app_key)} on ${clusterInstName(a.key.cluster_inst_key)}`, a.key, ((a.key.app_key || {}).developer_key || {}).name) || '' },
    ], ai, { key: (a) => JSON.stringify(a.key), label: 'App instances', empty: 'No app instances.' }));
    developers.replaceChildren(table([
      { label: 'Developer', value: (d) => link(`#/edge/developer/${encodeURIComponent(d.key.name)}`, d.key.name) },
      { label: 'Email', value: (d) => d.email || '' },
    ], dev, { key: (d) => d.key.name, onOpen: (d) => go(`#/edge/developer/${encodeURIComponent(d.key.name)}`), label: 'Developers', empty: 'No developers.' }));
  }
  every(REFRESH_MS, refresh);
}

// A developer's objects and how they hang together: apps, their instances, the cluster
// instances those run on and the cloudlets (and operators) under them.
export function renderDeveloper(root, go, name) {
  const badge = liveBadge();
  const body = element('div', {}, element('p', { class: 'muted', text: 'Loading…' }));
  root.replaceChildren(element('p', {}, link('#/edge', '← Edge')), heading(`Developer ${name}`, badge), section('Object graph', body));
  let shown = '';
  every(REFRESH_MS, async () => {
    try {
      const [apps, appInsts, clusterInsts] = await Promise.all([
        collect(`${E}.AppApi.ShowApp`, { key: { developer_key: { name } } }, POLLING),
        collect(`${E}.AppInstApi.ShowAppInst`, { key: { app_key: { developer_key: { name } } } }, POLLING),
        collect(`${E}.ClusterInstApi.ShowClusterInst`, { key: { developer: name } }, POLLING),
      ]);
      badge.set('polling', REFRESH_MS);
      const text = JSON.stringify([apps, appInsts, clusterInsts]);
      if (text === shown) return; // unchanged: the graph stays as it is
      shown = text;
      body.replaceChildren(objectGraph(name, { apps, appInsts, clusterInsts }));
    } catch (error) {
      badge.set('failed', error);
      shown = ''; // the failure replaced the graph: the next reply draws it again
      body.replaceChildren(failure(error));
    }
  });
}
