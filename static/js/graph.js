// A developer's object graph as an SVG of columns (developer → apps → app instances → cluster
// instances → cloudlets → operators) with a line for each reference, plus the same as a list for
// screen readers and narrow screens.
import { element, tone } from './dom.js';

const NS = 'http://www.w3.org/2000/svg';
const COLUMN = 190;
const ROW = 58;
const BOX = { w: 160, h: 40 };
const COLUMNS = ['Developer', 'Apps', 'App instances', 'Cluster instances', 'Cloudlets', 'Operators'];

function svg(tag, attrs = {}, text = '') {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text) node.textContent = text;
  return node;
}

const id = (kind, key) => `${kind}:${JSON.stringify(key)}`;
const clip = (text, n = 22) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

export function objectGraph(developer, { apps, appInsts, clusterInsts }) {
  const columns = COLUMNS.map(() => new Map()); // id -> { label, state, column }
  const edges = new Set();
  const add = (column, nodeId, label, state = '') => {
    if (!columns[column].has(nodeId)) columns[column].set(nodeId, { label, state });
    return nodeId;
  };
  const link = (a, b) => edges.add(`${a}\n${b}`);
  const root = add(0, `developer:${developer}`, developer);
  const clusterNode = (key, state) => {
    const c = add(3, id('ci', key), (key.cluster_key || {}).name || '?', state);
    const cloudlet = key.cloudlet_key || {};
    const cl = add(4, id('cl', cloudlet), cloudlet.name || '?');
    const op = add(5, id('op', cloudlet.operator_key || {}), (cloudlet.operator_key || {}).name || '?');
    link(c, cl);
    link(cl, op);
    return c;
  };
  const clusterStates = new Map(clusterInsts.map((c) => [id('ci', c.key), c.state]));
  for (const app of apps) link(root, add(1, id('app', app.key), `${app.key.name} ${app.key.version || ''}`.trim()));
  for (const inst of appInsts) {
    const appId = add(1, id('app', inst.key.app_key), `${inst.key.app_key.name} ${inst.key.app_key.version || ''}`.trim());
    link(root, appId);
    const instId = add(2, id('ai', inst.key), `${inst.key.app_key.name} on ${(inst.key.cluster_inst_key.cluster_key || {}).name}`, inst.state);
    link(appId, instId);
    link(instId, clusterNode(inst.key.cluster_inst_key, clusterStates.get(id('ci', inst.key.cluster_inst_key)) || ''));
  }
  for (const c of clusterInsts) link(root, clusterNode(c.key, c.state));

  const height = Math.max(...columns.map((c) => c.size), 1) * ROW + 40;
  const picture = svg('svg', { viewBox: `0 0 ${COLUMN * COLUMNS.length} ${height}`, class: 'graph', role: 'img', 'aria-label': `Objects of developer ${developer}` });
  const where = new Map();
  columns.forEach((nodes, column) => {
    picture.append(svg('text', { x: column * COLUMN + 10, y: 16, class: 'axis' }, COLUMNS[column]));
    [...nodes.keys()].forEach((nodeId, row) => where.set(nodeId, { x: column * COLUMN + 10, y: 30 + row * ROW }));
  });
  for (const edge of edges) {
    const [a, b] = edge.split('\n');
    const from = where.get(a);
    const to = where.get(b);
    const x1 = from.x + BOX.w;
    const y1 = from.y + BOX.h / 2;
    const x2 = to.x;
    const y2 = to.y + BOX.h / 2;
    picture.append(svg('path', { d: `M${x1},${y1} C${x1 + 20},${y1} ${x2 - 20},${y2} ${x2},${y2}`, class: 'edge' }));
  }
  columns.forEach((nodes) => {
    for (const [nodeId, node] of nodes) {
      const at = where.get(nodeId);
      const group = svg('g', { class: `node ${node.state ? `state-${tone(node.state)}` : ''}`, 'data-id': nodeId });
      group.append(svg('title', {}, `${node.label}${node.state ? ` (${node.state})` : ''}`));
      group.append(svg('rect', { x: at.x, y: at.y, width: BOX.w, height: BOX.h, rx: 6 }));
      group.append(svg('text', { x: at.x + 8, y: at.y + (node.state ? 17 : 25) }, clip(node.label)));
      if (node.state) group.append(svg('text', { x: at.x + 8, y: at.y + 33, class: 'small' }, node.state));
      picture.append(group);
    }
  });
  const list = element('ul', { class: 'graph-list' }, ...columns.flatMap((nodes, column) => (nodes.size
    ? [element('li', {}, `${COLUMNS[column]}: `, [...nodes.values()].map((n) => n.label + (n.state ? ` (${n.state})` : '')).join(', '))]
    : [])));
  return element('div', {}, element('div', { class: 'graph-wrap' }, picture), element('details', {}, element('summary', { text: 'As a list' }), list));
}
