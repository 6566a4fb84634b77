// Storage: the Ceph cluster's health, capacity, daemons, nodes and operator resources, and its
// client I/O over time as a chart. The stats RPCs are unary (no stream exists), so the view asks
// again every REFRESH_MS and keeps the samples of this visit for the chart.
import { call } from '../api.js';
import { bytes, element, facts, statusPill, table, timeCell } from '../dom.js';
import { lineChart } from '../chart.js';
import { every, failure, heading, liveBadge, section } from '../ui.js';

const STATS = 'stats.StatsService';
const REFRESH_MS = 5000;
const SAMPLES = 120; // ten minutes at the refresh rate

const samples = []; // [{ at, readOps, writeOps, readMiB, writeMiB }], kept across visits to the view

// "8540 op/s", "133.4 MiB/s", "2 GiB/s" → a number in the unit named (ops or MiB).
export function rate(text) {
  const match = /^([\d.]+)\s*([KMGT]?i?B)?/.exec(String(text || '').trim());
  if (!match) return 0;
  const number = Number(match[1]);
  const scale = { B: 1 / 1048576, KiB: 1 / 1024, MiB: 1, GiB: 1024, TiB: 1048576 }[match[2]] ?? 1;
  return number * scale;
}

function capacityBar(usage) {
  const used = Number(usage.used || 0);
  const total = Number(usage.total || 0);
  const percent = total ? (used / total) * 100 : 0;
  return element('div', { class: 'capacity' },
    element('meter', { min: '0', max: '100', low: '70', high: '85', optimum: '20', value: percent.toFixed(1), 'aria-label': 'Capacity used' }),
    element('span', { text: `${bytes(used)} used of ${bytes(total)} (${percent.toFixed(1)} %), ${bytes(usage.available)} free` }));
}

export function renderStorage(root) {
  const badge = liveBadge();
  const health = element('div', {}, element('p', { class: 'muted', text: 'Loading…' }));
  const chart = element('div', { id: 'io-chart' });
  const nodes = element('div');
  const resources = element('div');
  const versions = element('div');
  const again = element('button', { type: 'button', class: 'secondary', id: 'refresh' }, 'Refresh now');
  root.replaceChildren(heading('Storage', badge, again),
    element('div', { class: 'grid-2' }, section('Health and capacity', health), section('Client I/O', chart)),
    section('Nodes', nodes), element('div', { class: 'grid-2' }, section('Operator resources', resources), section('Versions', versions)));
  const refresh = async () => {
    try {
      const [stats, radar, nodeList, res, koor] = await Promise.all([
        call(`${STATS}.GetClusterStats`, {}, { revalidate: true }),
        call(`${STATS}.GetClusterRadar`, {}, { revalidate: true }),
        call(`${STATS}.GetClusterNodes`, {}, { revalidate: true }),
        call(`${STATS}.GetClusterResources`, {}, { revalidate: true }),
        call(`${STATS}.GetKoorCluster`, {}, { revalidate: true }),
      ]);
      badge.set('polling', REFRESH_MS);
      const s = stats.stats || {};
      const osd = (s.services || {}).osd || {};
      const data = s.data || {};
      const r = radar.radar || {};
      health.replaceChildren(facts([
        ['Health', statusPill(s.status)],
        ['Capacity', capacityBar(data.usage || {})],
        ['OSDs', `${osd.osd_up ?? 0} up, ${osd.osd_in ?? 0} in, of ${osd.osd_count ?? 0}`],
        ['Objects', `${(data.objects || {}).object_count ?? 0} (${(data.objects || {}).size || '—'})`],
        ['Pools', `${(data.pools || {}).pools ?? 0}`],
        ['Crashes', String((s.crashes || []).length)],
        ['Scores (0–100)', ['cluster_health', 'nodes_health', 'capacity_available', 'stability', 'reliability']
          .map((name) => `${name.replace(/_/g, ' ')} ${Math.round(r[name] ?? 0)}`).join(' · ')],
      ]));
      const io = s.iops || {};
      samples.push({ at: new Date(), readOps: rate(io.client_read_ops), writeOps: rate(io.client_write_ops), readMiB: rate(io.client_read), writeMiB: rate(io.client_write) });
      if (samples.length > SAMPLES) samples.splice(0, samples.length - SAMPLES);
      chart.replaceChildren(
        lineChart([
          { name: 'read op/s', className: 'read', points: samples.map((p) => [p.at, p.readOps]) },
          { name: 'write op/s', className: 'write', points: samples.map((p) => [p.at, p.writeOps]) },
        ], { label: 'Client operations per second', width: chart.clientWidth }),
        element('p', { class: 'legend' }, element('span', { class: 'key read', text: `read ${io.client_read_ops || '—'} (${io.client_read || '—'})` }), ' ',
          element('span', { class: 'key write', text: `write ${io.client_write_ops || '—'} (${io.client_write || '—'})` })));
      nodes.replaceChildren(table([
        { label: 'Name', value: (n) => n.name },
        { label: 'Status', value: (n) => statusPill(n.status) },
        { label: 'Roles', value: (n) => (n.roles || []).join(', ') },
        { label: 'Internal IP', value: (n) => n.internal_ip },
        { label: 'External IP', value: (n) => n.external_ip },
        { label: 'Since', value: (n) => timeCell(n.age) },
      ], nodeList.nodes || [], { key: (n) => n.name, label: 'Storage nodes' }));
      resources.replaceChildren(table([
        { label: 'Kind', value: (x) => x.kind },
        { label: 'Name', value: (x) => `${x.namespace}/${x.name}` },
        { label: 'Status', value: (x) => statusPill(x.status) },
        { label: 'Replicas', value: (x) => String(x.replicas ?? 0) },
      ], [...(res.resources || []), ...(res.deployments || [])], { key: (x) => `${x.kind}/${x.namespace}/${x.name}`, label: 'Operator resources' }));
      const status = (koor.koor_cluster || {}).status || {};
      const current = status.current_versions || {};
      const latest = status.latest_versions || {};
      versions.replaceChildren(table([
        { label: 'Component', value: (v) => v[0] },
        { label: 'Running', value: (v) => v[1] || '—' },
        { label: 'Latest', value: (v) => v[2] || '—' },
      ], Object.keys(current).map((name) => [name, current[name], (latest[name] || {}).version]), { key: (v) => v[0], label: 'Versions' }));
    } catch (error) {
      badge.set('failed', error);
      health.replaceChildren(failure(error));
    }
  };
  again.addEventListener('click', refresh);
  every(REFRESH_MS, refresh);
}
