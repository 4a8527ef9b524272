// The distribution view: for one group, both protocols' quantile curves on
// a log time axis with the headline percentiles and their intervals, and
// beside them the within-run differences' distribution.
import uPlot from 'uplot';
import { el, ms, signed, colH2, colH3, colInk, colGrid } from './dom.js';

// nines maps a level in percent to the x axis: −log10(1 − p/100), so p90,
// p99 and p99.9 are equally spaced and the tail, where the protocols
// differ, gets the room.
const nines = (p) => -Math.log10(1 - p / 100);
const tickLevels = [10, 50, 75, 90, 95, 99, 99.9];

function sizeOf(box, height) {
  return { width: Math.max(260, Math.floor(box.clientWidth || 320)), height };
}

// whiskers draws each protocol's headline percentiles as a dot with its
// interval as a vertical bar (an estimate without an interval: a hollow
// dot).
function whiskers(marks) {
  return {
    hooks: {
      draw: [(u) => {
        const c = u.ctx;
        c.save();
        c.lineWidth = 2 * devicePixelRatio;
        for (const m of marks) {
          const x = u.valToPos(nines(m.p), 'x', true);
          const y = u.valToPos(m.ms, 'y', true);
          c.strokeStyle = c.fillStyle = m.color;
          if (m.lo !== null && m.hi !== null) {
            c.beginPath();
            c.moveTo(x, u.valToPos(m.lo, 'y', true));
            c.lineTo(x, u.valToPos(m.hi, 'y', true));
            c.stroke();
          }
          c.beginPath();
          c.arc(x, y, 3.5 * devicePixelRatio, 0, 2 * Math.PI);
          if (m.lo !== null) c.fill(); else c.stroke();
        }
        c.restore();
      }],
    },
  };
}

function marksOf(stats, color, dx) {
  if (!stats) return [];
  return stats.percentiles.filter((p) => p.ms > 0).map((p) => ({
    p: p.p, ms: p.ms, color, dx,
    lo: p.insufficient ? null : p.ci_low_ms, hi: p.insufficient ? null : p.ci_high_ms,
  }));
}

function curveChart(box, g) {
  const c = g.curves;
  const xs = c.levels.map(nines);
  const data = [xs, c.h2_ms || c.levels.map(() => null), c.h3_ms || c.levels.map(() => null)];
  const opts = {
    ...sizeOf(box, 300),
    title: '',
    legend: { show: true, live: false },
    cursor: { drag: { x: false, y: false }, points: { size: 6 } },
    scales: { x: { time: false, range: [0, 3] }, y: { distr: 3, log: 10 } },
    axes: [
      {
        stroke: colInk, grid: { stroke: colGrid }, ticks: { stroke: colGrid },
        splits: () => tickLevels.filter((p) => box.clientWidth > 420 || p !== 75 && p !== 10).map(nines),
        values: (u, splits) => splits.map((s) => 'p' + +(100 * (1 - Math.pow(10, -s))).toFixed(1)),
        label: 'percentile (tail to the right)',
      },
      { stroke: colInk, grid: { stroke: colGrid }, ticks: { stroke: colGrid }, label: 'ms (log)', size: 56 },
    ],
    series: [
      { label: 'percentile', value: (u, v) => v === null ? '' : 'p' + +(100 * (1 - Math.pow(10, -v))).toFixed(1) },
      { label: 'HTTP/2', stroke: colH2, width: 2, dash: [6, 3], value: (u, v) => ms(v) + ' ms', points: { show: false } },
      { label: 'HTTP/3', stroke: colH3, width: 2, value: (u, v) => ms(v) + ' ms', points: { show: false } },
    ],
    plugins: [whiskers([...marksOf(g.h2, colH2), ...marksOf(g.h3, colH3)])],
  };
  return new uPlot(opts, data, box);
}

function pairedChart(box, h) {
  // A step per bin: x the bins' edges, y its count (the last repeated to
  // close the step).
  const xs = h.edges_ms.slice();
  const ys = h.counts.concat([h.counts[h.counts.length - 1]]);
  const opts = {
    ...sizeOf(box, 300),
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: false }, y: { range: (u, lo, hi) => [0, hi * 1.05 || 1] } },
    axes: [
      { stroke: colInk, grid: { stroke: colGrid }, ticks: { stroke: colGrid }, label: '← H3 faster · ms · H3 slower →' },
      { stroke: colInk, grid: { stroke: colGrid }, ticks: { stroke: colGrid }, label: 'runs', size: 50 },
    ],
    series: [{}, { label: 'runs', stroke: colInk, fill: 'rgba(242,142,43,0.35)', width: 1, paths: uPlot.paths.stepped({ align: 1 }), points: { show: false } }],
    plugins: [{
      hooks: {
        draw: [(u) => {
          const x = u.valToPos(0, 'x', true);
          if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
          const c = u.ctx;
          c.save();
          c.strokeStyle = colInk;
          c.lineWidth = devicePixelRatio;
          c.beginPath();
          c.moveTo(x, u.bbox.top);
          c.lineTo(x, u.bbox.top + u.bbox.height);
          c.stroke();
          c.restore();
        }],
      },
    }],
  };
  return new uPlot(opts, [xs, ys], box);
}

// curveTable is the curves' text alternative: every level's H2, H3 and
// H3 − H2.
function curveTable(g) {
  const c = g.curves;
  const rows = c.levels.map((p, i) => {
    const h2 = c.h2_ms ? c.h2_ms[i] : null;
    const h3 = c.h3_ms ? c.h3_ms[i] : null;
    const d = h2 !== null && h3 !== null ? h3 - h2 : null;
    return el('tr', { 'data-level': p, 'data-h2': h2, 'data-h3': h3 },
      el('th', { scope: 'row' }, 'p' + p), el('td', { class: 'n' }, ms(h2)), el('td', { class: 'n' }, ms(h3)),
      el('td', { class: 'n' }, signed(d)));
  });
  return el('table', { class: 'dist-table' },
    el('thead', {}, el('tr', {}, el('th', {}, 'level'), el('th', {}, 'HTTP/2 ms'), el('th', {}, 'HTTP/3 ms'), el('th', {}, 'H3 − H2 ms'))),
    el('tbody', {}, ...rows));
}

function pairedTable(h) {
  const rows = h.counts.map((n, i) => el('tr', { 'data-from': h.edges_ms[i], 'data-to': h.edges_ms[i + 1], 'data-runs': n },
    el('th', { scope: 'row' }, '[' + h.edges_ms[i] + ', ' + h.edges_ms[i + 1] + ')'), el('td', { class: 'n' }, String(n))));
  return el('table', { class: 'dist-table' },
    el('thead', {}, el('tr', {}, el('th', {}, 'H3 − H2, ms'), el('th', {}, 'runs'))), el('tbody', {}, ...rows));
}

// summary says in words where the curves part: the percentile where
// H3 − H2 is largest in size, from the headline's differences.
function summary(g, p) {
  const d = (g.diff || []).find((x) => x.p === p);
  if (!d) return 'Only one protocol has samples in this group.';
  const ci = d.insufficient || d.ci_low_ms === null ? 'too few runs for an interval' : '95 % CI ' + signed(d.ci_low_ms) + ' to ' + signed(d.ci_high_ms) + ' ms';
  return 'At p' + p + ', H3 − H2 is ' + signed(d.ms) + ' ms (' + ci + ').';
}

// distribution renders the view for the group named in state, or the
// largest; it returns a function that redraws it for another group.
export function distribution(root, data, state, onChange) {
  const groups = data.groups.filter((g) => g.curves);
  if (!groups.length) return;
  root.hidden = false;
  const pick = el('select', { id: 'dist-group', 'aria-controls': 'dist-views' },
    ...groups.map((g) => el('option', { value: g.group }, g.group + ' (' + g.runs + ' runs)')));
  const label = el('label', {}, 'group ', pick);
  const say = el('p', { class: 'note', id: 'dist-summary', 'aria-live': 'polite' });
  const views = el('div', { class: 'dist', id: 'dist-views' });
  root.append(el('div', { class: 'controls' }, label), say, views);
  let charts = [];
  const draw = (name) => {
    const g = groups.find((x) => x.group === name) || groups[0];
    pick.value = g.group;
    for (const c of charts) c.destroy();
    charts = [];
    views.replaceChildren();
    say.textContent = summary(g, data.verdict_p);
    const curveBox = el('div', { class: 'plot' });
    const f1 = el('figure', { id: 'dist-curves', class: 'chart', 'data-group': g.group },
      el('figcaption', {}, g.group + ': request duration by percentile, HTTP/2 (blue, dashed) and HTTP/3 (orange); dots and bars: the headline percentiles and their 95 % intervals'),
      curveBox,
      el('details', {}, el('summary', {}, 'Numbers'), curveTable(g), el('p', { class: 'note' }, el('a', { href: '#report' }, 'The report table'))));
    views.append(f1);
    charts.push(curveChart(curveBox, g));
    curveBox.querySelector('canvas').setAttribute('aria-label', 'quantile curves of ' + g.group + '; the numbers are in the table below');
    curveBox.querySelector('canvas').setAttribute('role', 'img');
    if (g.paired && g.paired.histogram && g.paired.histogram.counts.length) {
      const box = el('div', { class: 'plot' });
      const f2 = el('figure', { id: 'dist-paired', class: 'chart', 'data-group': g.group },
        el('figcaption', {}, g.group + ': median(H3 batch) − median(H2 batch) per run, ' + g.paired.runs + ' runs; median ' + signed(g.paired.median_ms) + ' ms'),
        box, el('details', {}, el('summary', {}, 'Numbers'), pairedTable(g.paired.histogram)));
      views.append(f2);
      charts.push(pairedChart(box, g.paired.histogram));
      box.querySelector('canvas').setAttribute('aria-label', 'histogram of the per-run differences of ' + g.group + '; the numbers are in the table below');
      box.querySelector('canvas').setAttribute('role', 'img');
    }
    // Each chart was sized when its figure was the row's only one: fit
    // them to the row they share now.
    for (const c of charts) c.setSize(sizeOf(c.root.parentElement, 300));
  };
  pick.addEventListener('change', () => onChange({ group: pick.value }));
  draw(state.get('group'));
  if (window.ResizeObserver) {
    let w = views.clientWidth;
    new ResizeObserver(() => {
      if (views.clientWidth === w) return;
      w = views.clientWidth;
      for (const c of charts) c.setSize(sizeOf(c.root.parentElement, 300));
    }).observe(views);
  }
  return (s) => draw(s.get('group'));
}
