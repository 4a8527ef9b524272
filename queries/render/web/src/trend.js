// The over-time view: for one group, H3 − H2 at a chosen percentile per
// hour or day with its interval as a band, and HTTP/3 availability beside
// it. A window with too few runs for an interval is a gap, shaded grey.
import uPlot from 'uplot';
import { el, ms, signed, colH3, colInk, colGrid } from './dom.js';

const colGap = 'rgba(150,150,150,0.18)';

function sizeOf(box) {
  return { width: Math.max(260, Math.floor(box.clientWidth || 320)), height: 220 };
}

// shadeGaps shades the windows where values[i] is null.
function shadeGaps(values, step) {
  return {
    hooks: {
      drawClear: [(u) => {
        const c = u.ctx;
        c.save();
        c.fillStyle = colGap;
        const xs = u.data[0];
        for (let i = 0; i < xs.length; i++) {
          if (values[i] !== null) continue;
          const x0 = u.valToPos(xs[i] - step / 2, 'x', true);
          const x1 = u.valToPos(xs[i] + step / 2, 'x', true);
          c.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
        }
        c.restore();
      }],
    },
  };
}

function zeroLine(u) {
  const y = u.valToPos(0, 'y', true);
  if (y < u.bbox.top || y > u.bbox.top + u.bbox.height) return;
  const c = u.ctx;
  c.save();
  c.strokeStyle = colInk;
  c.lineWidth = devicePixelRatio;
  c.beginPath();
  c.moveTo(u.bbox.left, y);
  c.lineTo(u.bbox.left + u.bbox.width, y);
  c.stroke();
  c.restore();
}

function lineChart(box, xs, mid, lo, hi, step, o) {
  const opts = {
    ...sizeOf(box),
    legend: { show: false },
    cursor: { drag: { x: false, y: false } },
    scales: { x: { time: true }, y: o.y || {} },
    axes: [
      { stroke: colInk, grid: { stroke: colGrid }, ticks: { stroke: colGrid } },
      { stroke: colInk, grid: { stroke: colGrid }, ticks: { stroke: colGrid }, label: o.unit, size: 56, values: o.values },
    ],
    series: [
      {},
      { label: o.label, stroke: o.color, width: 2, points: { show: true, size: 4 } },
      { label: 'low', stroke: 'transparent', points: { show: false } },
      { label: 'high', stroke: 'transparent', points: { show: false } },
    ],
    bands: [{ series: [3, 2], fill: o.band }],
    plugins: [shadeGaps(mid, step), { hooks: { draw: o.zero ? [zeroLine] : [] } }],
  };
  return new uPlot(opts, [xs, mid, lo, hi], box);
}

function pctOf(v) { return v === null ? '—' : (100 * v).toFixed(1) + '%'; }

export function trend(root, data, state, onChange) {
  const t = data.trend;
  if (!t || !t.groups.length || !t.windows.length) return;
  root.hidden = false;
  const xs = t.windows.map((w) => Date.parse(w) / 1000);
  const step = t.step === 'day' ? 86400 : 3600;
  const pickP = el('select', { id: 'trend-p' }, ...data.percentiles.map((p) => el('option', { value: p }, 'p' + p)));
  const pickG = el('select', { id: 'trend-group' }, ...t.groups.map((g) => el('option', { value: g.group }, g.group)));
  const views = el('div', { class: 'dist', id: 'trend-views' });
  root.append(el('div', { class: 'controls' }, el('label', {}, 'group ', pickG), ' ', el('label', {}, 'H3 − H2 at ', pickP),
    ' ', el('span', { class: 'note' }, 'per ' + t.step + '; grey: too few runs for an interval')), views);
  let charts = [];
  const draw = (name, p) => {
    const g = t.groups.find((x) => x.group === name) || t.groups[0];
    p = data.percentiles.includes(+p) ? +p : data.verdict_p;
    pickG.value = g.group;
    pickP.value = String(p);
    for (const c of charts) c.destroy();
    charts = [];
    views.replaceChildren();
    const at = (pt) => pt.diff.find((d) => d.p === p);
    const mid = g.points.map((pt) => at(pt).ms);
    const lo = g.points.map((pt) => at(pt).ci_low_ms);
    const hi = g.points.map((pt) => at(pt).ci_high_ms);
    const share = g.points.map((pt) => pt.h3_availability ? pt.h3_availability.share : null);
    const slo = g.points.map((pt) => pt.h3_availability ? pt.h3_availability.ci_low : null);
    const shi = g.points.map((pt) => pt.h3_availability ? pt.h3_availability.ci_high : null);
    const rows = g.points.map((pt, i) => {
      const d = at(pt);
      return el('tr', { 'data-window': t.windows[i], 'data-ms': d.ms, 'data-state': d.insufficient ? 'insufficient' : 'ok', 'data-share': share[i] },
        el('th', { scope: 'row' }, t.windows[i].replace('T', ' ').replace(':00:00Z', ':00')),
        el('td', { class: 'n' }, String(pt.runs_h2)), el('td', { class: 'n' }, String(pt.runs_h3)),
        el('td', { class: 'n' }, d.insufficient ? 'too few runs' : signed(d.ms) + ' [' + signed(d.ci_low_ms) + ', ' + signed(d.ci_high_ms) + ']'),
        el('td', { class: 'n' }, pctOf(share[i])));
    });
    const table = el('table', { class: 'dist-table' },
      el('thead', {}, el('tr', {}, el('th', {}, t.step), el('th', {}, 'H2 runs'), el('th', {}, 'H3 runs'), el('th', {}, 'H3 − H2 ms at p' + p), el('th', {}, 'availability'))),
      el('tbody', {}, ...rows));
    const b1 = el('div', { class: 'plot' });
    const f1 = el('figure', { id: 'trend-diff', class: 'chart', 'data-group': g.group, 'data-p': p },
      el('figcaption', {}, g.group + ': H3 − H2 at p' + p + ' per ' + t.step + ', ms, with its approximate 95 % interval (negative: HTTP/3 faster)'),
      b1, el('details', {}, el('summary', {}, 'Numbers'), table, el('p', { class: 'note' }, 'Intervals: ' + t.method + '.')));
    const b2 = el('div', { class: 'plot' });
    const f2 = el('figure', { id: 'trend-availability', class: 'chart', 'data-group': g.group },
      el('figcaption', {}, g.group + ': HTTP/3 availability per ' + t.step + ' (runs whose H3 batch used h3 throughout), with its 95 % interval'), b2);
    views.append(f1, f2);
    charts.push(lineChart(b1, xs, mid, lo, hi, step, { label: 'H3 − H2', unit: 'ms', color: colInk, band: 'rgba(242,142,43,0.3)', zero: true }));
    charts.push(lineChart(b2, xs, share, slo, shi, step, {
      label: 'availability', unit: 'share', color: colH3, band: 'rgba(242,142,43,0.2)',
      y: { range: (u, a, b) => [Math.min(0.8, a === null ? 0.8 : a), 1] }, values: (u, v) => v.map((x) => (100 * x).toFixed(0) + '%'),
    }));
    for (const [b, what] of [[b1, 'H3 − H2 over time'], [b2, 'HTTP/3 availability over time']]) {
      const c = b.querySelector('canvas');
      c.setAttribute('role', 'img');
      c.setAttribute('aria-label', g.group + ': ' + what + '; the numbers are in the table below');
    }
  };
  pickG.addEventListener('change', () => onChange({ group: pickG.value }));
  pickP.addEventListener('change', () => onChange({ p: pickP.value }));
  draw(state.get('group'), state.get('p'));
  if (window.ResizeObserver) {
    let w = views.clientWidth;
    new ResizeObserver(() => {
      if (views.clientWidth === w) return;
      w = views.clientWidth;
      for (const c of charts) c.setSize(sizeOf(c.root.parentElement));
    }).observe(views);
  }
  return (s) => draw(s.get('group'), s.get('p'));
}
