// A small SVG line chart (no library: a few lines of geometry). Every attribute is an SVG
// attribute, not a style, so the strict Content-Security-Policy has nothing to refuse.
const NS = 'http://www.w3.org/2000/svg';
const DEFAULT_W = 640; // the drawing's width when its box's is unknown
const MIN_W = 280;
const H = 200;
const PAD = { left: 56, right: 12, top: 12, bottom: 26 };

function svg(tag, attrs = {}, text = '') {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text) node.textContent = text;
  return node;
}

function niceMax(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((m) => m * power).find((m) => m >= value);
}

// series: [{ name, unit, className, points: [[Date, number], ...] }] sharing one axis. With
// width (the CSS pixels of its box) the drawing is made that wide, so its text is drawn at its
// own size: scaling a 640-unit drawing down to a phone's 300 px made the axes unreadable.
export function lineChart(series, { label, unit = '', width = 0 } = {}) {
  const W = width > 0 ? Math.max(MIN_W, Math.round(width)) : DEFAULT_W;
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': label });
  const all = series.flatMap((s) => s.points);
  const max = niceMax(Math.max(0, ...all.map(([, v]) => v)));
  const times = all.map(([t]) => t.getTime());
  const t0 = Math.min(...times);
  const t1 = Math.max(...times);
  const x = (t) => PAD.left + (t1 === t0 ? 0 : ((t - t0) / (t1 - t0)) * (W - PAD.left - PAD.right));
  const y = (v) => H - PAD.bottom - (v / max) * (H - PAD.top - PAD.bottom);
  for (const fraction of [0, 0.5, 1]) {
    const value = max * fraction;
    root.append(svg('line', { x1: PAD.left, x2: W - PAD.right, y1: y(value), y2: y(value), class: 'grid' }));
    root.append(svg('text', { x: PAD.left - 6, y: y(value) + 4, 'text-anchor': 'end', class: 'axis' }, `${Math.round(value)}${unit}`));
  }
  if (all.length) {
    const clock = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });
    root.append(svg('text', { x: PAD.left, y: H - 6, class: 'axis' }, clock.format(new Date(t0))));
    root.append(svg('text', { x: W - PAD.right, y: H - 6, 'text-anchor': 'end', class: 'axis' }, clock.format(new Date(t1))));
  }
  for (const s of series) {
    const points = s.points.map(([t, v]) => `${x(t.getTime()).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    const line = svg('polyline', { points, class: `series ${s.className}`, 'data-name': s.name, 'data-count': s.points.length });
    line.append(svg('title', {}, s.name));
    root.append(line);
    const last = s.points[s.points.length - 1];
    if (last) root.append(svg('circle', { cx: x(last[0].getTime()), cy: y(last[1]), r: 3, class: `dot ${s.className}` }));
  }
  return root;
}
