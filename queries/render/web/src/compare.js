// The before/after view: /api/compare for the page's report options (the
// "after" window) against a baseline window kept in the fragment
// (baseline_since, baseline_until; default the same length just before),
// drawn per group as the change of H3 − H2 with its interval on a zero
// line, the comparison's text lines beside it and a table one click away.
import { el, signed, colH3, colInk, colGrid } from './dom.js';
import { reportOptions } from './state.js';

const svgNS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children) e.append(typeof c === 'string' ? document.createTextNode(c) : c);
  return e;
}

// pageWindow is the after window: the page's since/until as its form shows
// them (the server fills in the defaults it used).
function pageWindow() {
  const f = (n) => {
    const i = document.querySelector('header form input[name="' + n + '"]');
    return i && i.value ? new Date(i.value) : null;
  };
  return { since: f('since'), until: f('until') };
}

function iso(d) { return d && !isNaN(d) ? d.toISOString().replace('.000Z', 'Z') : ''; }

function chart(c) {
  const gs = c.groups;
  const vals = [0];
  for (const g of gs) for (const v of [g.ci_low_ms, g.ci_high_ms, g.change_ms]) if (v !== null && v !== undefined) vals.push(v);
  let lo = Math.min(...vals), hi = Math.max(...vals);
  const pad = Math.max(10, (hi - lo) * 0.1);
  lo -= pad; hi += pad;
  const W = 560, left = 70, right = 20, row = 28, top = 10, H = top + row * gs.length + 30;
  const x = (v) => left + (v - lo) / (hi - lo) * (W - left - right);
  const s = svg('svg', { id: 'compare-svg', viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'data-p': c.p,
    'aria-label': 'Change of H3 − H2 at p' + c.p + ' per group, ms, with its 95 % interval; the numbers are in the table below' });
  s.append(svg('line', { x1: x(0), x2: x(0), y1: top, y2: H - 24, stroke: colInk, 'stroke-width': 1 }));
  for (const t of [lo, hi]) {
    s.append(svg('text', { x: x(t), y: H - 8, 'text-anchor': t === lo ? 'start' : 'end', 'font-size': 11, fill: colInk }, signed(t) + ' ms'));
  }
  // The zero's label, unless it would run into an end's.
  if (x(0) - x(lo) > 40 && x(hi) - x(0) > 40) s.append(svg('text', { x: x(0), y: H - 8, 'text-anchor': 'middle', 'font-size': 11, fill: colInk }, '0'));
  gs.forEach((g, i) => {
    const y = top + row * i + row / 2;
    const gEl = svg('g', { class: 'compare-group', 'data-group': g.group, 'data-change': g.change });
    gEl.append(svg('line', { x1: left, x2: W - right, y1: y, y2: y, stroke: colGrid, 'stroke-width': 1 }));
    gEl.append(svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', 'font-size': 12, fill: colInk }, g.group));
    if (g.change_ms !== null && g.change_ms !== undefined && g.ci_low_ms !== null && g.ci_low_ms !== undefined) {
      const col = g.change === 'h3_gained' ? colH3 : g.change === 'h3_lost' ? '#8073ac' : '#777';
      gEl.append(svg('line', { class: 'whisker', x1: x(g.ci_low_ms), x2: x(g.ci_high_ms), y1: y, y2: y, stroke: col, 'stroke-width': 3 }));
      gEl.append(svg('circle', { class: 'dot', cx: x(g.change_ms), cy: y, r: 5, fill: col }));
    } else {
      gEl.append(svg('text', { x: x(0) + 6, y: y + 4, 'font-size': 11, fill: '#777' }, 'not enough runs'));
    }
    gEl.append(svg('title', {}, g.text));
    s.append(gEl);
  });
  return s;
}

function table(c) {
  const rows = c.groups.map((g) => el('tr', { 'data-group': g.group, 'data-change': g.change },
    el('th', { scope: 'row' }, g.group),
    el('td', {}, g.before ? g.before.verdict : '—'), el('td', {}, g.after ? g.after.verdict : '—'),
    el('td', { class: 'n' }, signed(g.change_ms)),
    el('td', { class: 'n' }, g.ci_low_ms === null || g.ci_low_ms === undefined ? '—' : '[' + signed(g.ci_low_ms) + ', ' + signed(g.ci_high_ms) + ']'),
    el('td', { class: 'n' }, g.mde_ms === null || g.mde_ms === undefined ? '—' : '±' + signed(g.mde_ms).replace(/^[+−]/, '')),
    el('td', {}, g.change)));
  return el('table', { id: 'compare-table', class: 'dist-table' },
    el('thead', {}, el('tr', {}, el('th', {}, 'group'), el('th', {}, 'before'), el('th', {}, 'after'),
      el('th', {}, 'change, ms'), el('th', {}, '95 % CI'), el('th', {}, 'smallest detectable'), el('th', {}, 'change'))),
    el('tbody', {}, ...rows));
}

export function compare(section, data, state, onChange) {
  section.hidden = false;
  const w = pageWindow();
  const defaults = () => {
    if (!w.since || !w.until) return { since: '', until: '' };
    const len = w.until - w.since;
    return { since: iso(new Date(w.since - len)), until: iso(w.since) };
  };
  const inS = el('input', { id: 'compare-since', size: 22, 'aria-label': 'baseline since' });
  const inU = el('input', { id: 'compare-until', size: 22, 'aria-label': 'baseline until' });
  const go = el('button', { type: 'button', id: 'compare-go' }, 'Compare');
  const status = el('p', { id: 'compare-status', class: 'note', 'aria-live': 'polite' });
  const out = el('div', { id: 'compare-out' });
  section.append(el('p', { class: 'note' }, 'The change of H3 − H2 from a baseline window to this page\'s window (' + iso(w.since) + ' – ' + iso(w.until) + '), per group. Negative: HTTP/3 gained.'),
    el('div', { class: 'controls' }, el('label', {}, 'baseline since ', inS), ' ', el('label', {}, 'until ', inU), ' ', go), status, out);
  let shown = null;
  const draw = (s) => {
    const d = defaults();
    const bs = s.get('baseline_since') || d.since;
    const bu = s.get('baseline_until') || d.until;
    inS.value = bs; inU.value = bu;
    const q = reportOptions();
    if (s.get('baseline_since')) q.set('baseline_since', bs);
    if (s.get('baseline_until')) q.set('baseline_until', bu);
    const key = q.toString();
    if (key === shown) return;
    shown = key;
    status.textContent = 'comparing…';
    fetch('/api/compare?' + q, { credentials: 'same-origin' }).then((r) => {
      if (!r.ok) return r.text().then((t) => { throw new Error(t.trim() || String(r.status)); });
      return r.json();
    }).then((c) => {
      if (shown !== key) return;
      out.replaceChildren(
        el('figure', { class: 'chart', id: 'compare-chart' },
          el('figcaption', {}, 'Change of H3 − H2 at p' + c.p + ' (ms): ' + c.before.since + ' – ' + c.before.until + ' (' + c.before.runs + ' runs) → ' +
            c.after.since + ' – ' + c.after.until + ' (' + c.after.runs + ' runs), with its 95 % interval'),
          chart(c)),
        el('ul', { id: 'compare-text' }, ...c.groups.map((g) => el('li', { 'data-group': g.group, 'data-change': g.change }, g.text))),
        el('details', {}, el('summary', {}, 'Numbers'), table(c)));
      status.textContent = 'baseline ' + c.before.since + ' – ' + c.before.until + ', ' + c.groups.length + ' groups';
      section.dataset.state = 'ready';
    }).catch((e) => {
      if (shown !== key) return;
      out.replaceChildren();
      status.textContent = 'The comparison failed: ' + e.message;
      section.dataset.state = 'failed';
    });
  };
  go.addEventListener('click', () => {
    const d = defaults();
    onChange({ view: 'compare', baseline_since: inS.value === d.since ? null : inS.value, baseline_until: inU.value === d.until ? null : inU.value });
  });
  draw(state);
  return draw;
}
