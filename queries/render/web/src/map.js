// The map view: countries shaded by H3 − H2 at the chosen percentile on a
// diverging, colour-blind-safe scale (ColorBrewer's PuOr: orange where
// HTTP/3 is faster, purple where it is slower), hatched grey where a
// country has too few runs for an interval. Every country is focusable;
// hovering or focusing one shows its figures, Enter or a click drills into
// it. The countries come from Natural Earth's 110 m TopoJSON (world-atlas),
// whose ISO numeric ids are mapped to the report's alpha-2 codes.
import { geoEqualEarth, geoPath } from 'd3-geo';
import { feature } from 'topojson-client';
import { schemePuOr } from 'd3-scale-chromatic';
import world from 'world-atlas/countries-110m.json';
import codes from 'i18n-iso-countries/codes.json';
import { el, ms, signed } from './dom.js';

const svgNS = 'http://www.w3.org/2000/svg';
const W = 960, H = 470;
const colNoData = '#f2f2f2';
const colThin = '#9a9a9a';
// Eight classes, no neutral middle: every shaded country says its sign.
// d3 lists PuOr from purple to orange; the map's order is H3 − H2's, from
// faster (orange, HTTP/3's colour on the page) to slower.
const classes = schemePuOr[8].slice().reverse();

// Natural Earth leaves a few features without an ISO number; GeoIP
// databases give Kosovo XK.
const byName = { Kosovo: 'XK' };
const alpha2 = new Map(codes.map((c) => [c[2], c[0]]));

function svg(tag, attrs) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, String(v));
  return e;
}

// niceStep rounds a scale's end up to 1, 2 or 5 × 10^k ms.
function niceStep(v) {
  if (!(v > 0)) return 10;
  const k = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (m * k >= v) return m * k;
  return 10 * k;
}

function isCode(s) { return /^[A-Z]{2}$/.test(s); }

function pctOf(v) { return v === null || v === undefined ? '—' : (100 * v).toFixed(1) + ' %'; }

// figures is what the map shows of one report group at percentile p.
function figures(g, p, verdicts) {
  const d = (g.diff || []).find((x) => x.p === p);
  const a = g.h3_availability;
  const v = verdicts.find((x) => x.group === g.group && x.p === p);
  const f = { runs: g.runs, share: a ? a.share : null, verdict: v ? v.text : '' };
  if (!d) return { ...f, state: 'thin' };
  f.ms = d.ms;
  if (g.too_small || d.insufficient || d.ci_low_ms === null) return { ...f, state: 'thin' };
  f.lo = d.ci_low_ms;
  f.hi = d.ci_high_ms;
  f.state = f.hi < 0 ? 'faster' : f.lo > 0 ? 'slower' : 'same';
  return f;
}

function describe(name, code, f, p) {
  if (!f) return name + ' (' + code + '): no runs in this window';
  const parts = [name + ' (' + code + ')'];
  if (f.state === 'thin') {
    parts.push('too few runs for an interval at p' + p + (f.ms !== undefined ? ' (estimate ' + signed(f.ms) + ' ms)' : ''));
  } else {
    parts.push('H3 − H2 at p' + p + ': ' + signed(f.ms) + ' ms, 95 % CI ' + signed(f.lo) + ' to ' + signed(f.hi) + ' ms');
    parts.push(f.state === 'faster' ? 'HTTP/3 faster' : f.state === 'slower' ? 'HTTP/3 slower' : 'no difference detectable');
  }
  parts.push(f.runs + ' runs');
  parts.push('HTTP/3 availability ' + pctOf(f.share));
  return parts.join('; ');
}

// largest is the projected bounds of a feature's largest polygon (France
// without Guiana, Russia without Chukotka across the antimeridian).
function largest(path, f) {
  if (f.geometry.type !== 'MultiPolygon') return path.bounds(f);
  let best = null, area = -1;
  for (const c of f.geometry.coordinates) {
    const g = { type: 'Polygon', coordinates: c };
    const a = path.area(g);
    if (a > area) { area = a; best = g; }
  }
  return path.bounds(best);
}

// worldMap draws the map into root. o.report() gives the by-country report
// (a promise); o.country and o.continent name the place the page is
// filtered to, which the map zooms to; o.drill(code) is the address of a
// country's drill-down, or '' where there is none (a report in a file).
export function worldMap(root, data, state, onChange, o) {
  root.hidden = false;
  const countries = feature(world, world.objects.countries).features;
  for (const f of countries) f.code = alpha2.get(f.id) || byName[f.properties.name] || '';
  const projection = geoEqualEarth().fitExtent([[4, 4], [W - 4, H - 4]], { type: 'Sphere' });
  const path = geoPath(projection);

  const pickP = el('select', { id: 'map-p' }, ...data.percentiles.map((p) => el('option', { value: p }, 'p' + p)));
  const status = el('p', { class: 'note', id: 'map-status', role: 'status' }, 'Loading the report by country…');
  const map = svg('svg', { id: 'map-svg', viewBox: '0 0 ' + W + ' ' + H, role: 'group', 'aria-label': 'World map of H3 − H2 by country; Tab or the arrow keys move between countries, Enter drills into one' });
  const defs = svg('defs');
  const hatch = svg('pattern', { id: 'map-hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' });
  hatch.append(svg('rect', { width: 6, height: 6, fill: '#d0d0d0' }), svg('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: colThin, 'stroke-width': 3 }));
  defs.append(hatch);
  map.append(defs, svg('path', { d: path({ type: 'Sphere' }), fill: '#fbfdff', stroke: '#ccc', 'vector-effect': 'non-scaling-stroke' }));
  const tip = el('div', { class: 'map-tip', id: 'map-tip', role: 'tooltip', hidden: true });
  const legend = el('div', { class: 'map-legend', id: 'map-legend' });
  const numbers = el('tbody');
  const table = el('details', {}, el('summary', {}, 'Numbers'), el('table', { class: 'dist-table', id: 'map-table' },
    el('thead', {}, el('tr', {}, el('th', {}, 'country'), el('th', {}, 'H3 − H2 ms'), el('th', {}, '95 % CI'), el('th', {}, 'runs'), el('th', {}, 'HTTP/3 availability'))),
    numbers));
  const box = el('div', { class: 'map-box' }, map, tip);
  root.append(el('div', { class: 'controls' }, el('label', {}, 'H3 − H2 at ', pickP), ' ',
    el('span', { class: 'note' }, 'orange: HTTP/3 faster, purple: slower; hatched: too few runs; Enter or a click drills into a country')),
  status, box, legend, table);

  const paths = countries.map((f) => {
    const e = svg('path', { d: path(f), class: 'country', 'data-country': f.code || null, 'data-name': f.properties.name,
      fill: colNoData, stroke: '#fff', 'stroke-width': 0.5, 'vector-effect': 'non-scaling-stroke', tabindex: -1 });
    e.centre = path.centroid(f);
    map.append(e);
    return e;
  });
  if (o.country) {
    const i = countries.findIndex((f) => f.code === o.country);
    if (i >= 0) {
      paths[i].classList.add('selected');
      map.append(paths[i]); // drawn last: its outline on top
    }
  }

  const showTip = (e) => {
    tip.textContent = e.getAttribute('aria-label');
    tip.hidden = false;
    const r = box.getBoundingClientRect(), b = e.getBoundingClientRect();
    const x = Math.min(Math.max(b.left + b.width / 2 - r.left, 0), r.width);
    tip.style.left = Math.max(0, Math.min(x - 120, r.width - 240)) + 'px';
    tip.style.top = (b.bottom - r.top + 6) + 'px';
  };
  const hideTip = () => { tip.hidden = true; };
  const go = (e) => { const c = e.dataset.country; if (c && o.drill(c)) location.assign(o.drill(c)); };
  for (const e of paths) {
    e.addEventListener('mouseenter', () => showTip(e));
    e.addEventListener('mouseleave', hideTip);
    e.addEventListener('focus', () => showTip(e));
    e.addEventListener('blur', hideTip);
    e.addEventListener('click', () => go(e));
    e.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); go(e); return; }
      const dir = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[ev.key];
      if (!dir) return;
      ev.preventDefault();
      // The nearest country whose centre lies that way (within 60°).
      let best = null, bestD = Infinity;
      for (const q of paths) {
        if (q === e || !isFinite(q.centre[0])) continue;
        const dx = q.centre[0] - e.centre[0], dy = q.centre[1] - e.centre[1];
        const along = dx * dir[0] + dy * dir[1];
        const d = Math.hypot(dx, dy);
        if (along <= 0 || along < d * 0.5) continue;
        const score = d * (2 - along / d);
        if (score < bestD) { bestD = score; best = q; }
      }
      if (best) best.focus();
    });
  }

  let rep = null;
  const draw = (pRaw) => {
    const p = data.percentiles.includes(+pRaw) ? +pRaw : data.verdict_p;
    pickP.value = String(p);
    if (!rep) return;
    const groups = new Map(rep.groups.map((g) => [g.group, g]));
    const figs = new Map();
    let top = 0;
    for (const [code, g] of groups) {
      const f = figures(g, p, rep.verdicts || []);
      figs.set(code, f);
      if (f.state !== 'thin') top = Math.max(top, Math.abs(f.ms));
    }
    const end = niceStep(top);
    const step = end / 4;
    const colour = (v) => classes[Math.max(0, Math.min(7, 4 + Math.floor(v / step)))];
    let shown = 0;
    const withData = [];
    paths.forEach((e, i) => {
      const f = countries[i];
      const fig = f.code ? figs.get(f.code) : undefined;
      e.setAttribute('aria-label', describe(f.properties.name, f.code || 'no code', fig, p));
      e.setAttribute('tabindex', fig ? 0 : -1);
      e.setAttribute('data-state', fig ? fig.state : 'none');
      if (fig && fig.ms !== undefined) e.setAttribute('data-ms', fig.ms); else e.removeAttribute('data-ms');
      e.setAttribute('fill', !fig ? colNoData : fig.state === 'thin' ? 'url(#map-hatch)' : colour(fig.ms));
      if (fig) { shown++; withData.push(i); }
    });
    map.dataset.p = p;
    // The same figures as a table, each country a link to its drill-down.
    numbers.replaceChildren(...rep.groups.filter((g) => figs.has(g.group)).map((g) => {
      const f = figs.get(g.group);
      const thin = f.state === 'thin';
      return el('tr', { 'data-country': g.group, 'data-state': f.state },
        el('th', { scope: 'row' }, isCode(g.group) && o.drill(g.group) ? el('a', { href: o.drill(g.group) }, g.group) : g.group),
        el('td', { class: 'n' }, f.ms === undefined ? '—' : signed(f.ms)),
        el('td', { class: 'n' }, thin ? 'too few runs' : signed(f.lo) + ' to ' + signed(f.hi)),
        el('td', { class: 'n' }, String(f.runs)), el('td', { class: 'n' }, pctOf(f.share)));
    }));
    // Zoom (the viewBox) to the country or the continent the page is
    // filtered to, else the world.
    let zoom = null;
    const sel = o.country ? countries.findIndex((f) => f.code === o.country) : -1;
    const around = sel >= 0 ? [sel] : o.continent ? withData : [];
    for (const i of around) {
      const b = largest(path, countries[i]);
      zoom = zoom ? [[Math.min(zoom[0][0], b[0][0]), Math.min(zoom[0][1], b[0][1])], [Math.max(zoom[1][0], b[1][0]), Math.max(zoom[1][1], b[1][1])]] : b;
    }
    if (zoom) {
      const pad = sel >= 0 ? 3 : 1.25;
      const cx = (zoom[0][0] + zoom[1][0]) / 2, cy = (zoom[0][1] + zoom[1][1]) / 2;
      let w = Math.max((zoom[1][0] - zoom[0][0]) * pad, 120), h = Math.max((zoom[1][1] - zoom[0][1]) * pad, 60);
      if (w / h > W / H) h = w * H / W; else w = h * W / H;
      map.setAttribute('viewBox', [cx - w / 2, cy - h / 2, w, h].map((v) => v.toFixed(1)).join(' '));
    }
    const unmapped = rep.groups.filter((g) => g.group !== 'unknown' && !countries.some((f) => f.code === g.group)).map((g) => g.group);
    status.textContent = shown + ' countries with runs at p' + p + (unmapped.length ? '; too small for this map: ' + unmapped.join(', ') : '') + '.';
    legend.replaceChildren(el('span', { class: 'note' }, 'H3 − H2 at p' + p + ', ms: '),
      ...classes.map((c, i) => {
        const lo = (i - 4) * step, hi = lo + step;
        return el('span', { class: 'map-key', 'data-class': i }, el('i', { 'data-fill': c }), (i === 0 ? '< ' + signed(hi) : i === 7 ? '≥ ' + signed(lo) : signed(lo) + ' to ' + signed(hi)));
      }),
      el('span', { class: 'map-key' }, el('i', { 'data-fill': 'thin' }), 'too few runs'),
      el('span', { class: 'map-key' }, el('i', { 'data-fill': 'none' }), 'no runs'));
    for (const i of legend.querySelectorAll('i[data-fill]')) {
      const c = i.dataset.fill;
      if (c === 'thin') i.classList.add('thin'); else if (c === 'none') i.classList.add('none'); else i.style.background = c;
    }
  };
  let getP = () => state.get('p');
  pickP.addEventListener('change', () => onChange({ p: pickP.value, view: 'map' }));
  o.report().then((r) => { rep = r; draw(getP()); }, (err) => {
    status.textContent = 'The report by country failed: ' + err.message;
  });
  draw(getP());
  return (s) => { getP = () => s.get('p'); draw(getP()); };
}
