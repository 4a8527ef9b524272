// The h3rum dashboard's script: it swaps in the complete report, which the
// server sends after the point estimates, draws the charts from the data
// the page carries (#dash-data, JSON), and runs the live feed.
import { live } from './live.js';
import { distribution } from './distribution.js';
import { trend } from './trend.js';
import { offline } from './static.js';
import { worldMap } from './map.js';
import { compare } from './compare.js';
import { getState, setState, reportOptions } from './state.js';
import { el } from './dom.js';

function swap() {
  const complete = document.getElementById('complete');
  const estimate = document.getElementById('estimate');
  if (complete && estimate) {
    estimate.replaceWith(complete.content);
    complete.remove();
  } else if (document.getElementById('complete-failed')) {
    const computing = document.getElementById('computing');
    if (computing) computing.remove(); // the estimate stays, with the error below it
  }
}

function charts() {
  const node = document.getElementById('dash-data');
  if (!node) return;
  let data = null;
  try { data = JSON.parse(node.textContent); } catch (e) { /* said below */ }
  if (!data || typeof data !== 'object') {
    // The collector writes no figure JSON cannot carry; a block that still
    // does not read as the charts' data says so rather than draw nothing.
    node.before(el('p', { class: 'error', id: 'charts-data-failed' }, 'The charts’ data in this page is not readable: the charts are not drawn.'));
    return;
  }
  const state = getState();
  const views = [];
  // A control changes the address's fragment, and every view follows it.
  const follow = () => {
    const s = getState();
    for (const redraw of views) redraw(s);
  };
  const onChange = (kv) => { setState(kv); follow(); };
  const dist = document.getElementById('distribution');
  const tr = document.getElementById('trend');
  const mp = document.getElementById('map');
  const cmp = document.getElementById('compare');
  for (const v of [mp && worldMap(mp, data, state, onChange, mapOptions(data)), dist && distribution(dist, data, state, onChange),
    tr && trend(tr, data, state, onChange), cmp && !document.getElementById('h3rum-data') && compare(cmp, data, state, onChange)]) {
    if (v) views.push(v);
  }
  window.addEventListener('hashchange', follow);
  window.addEventListener('popstate', follow);
  const view = state.get('view');
  const section = view && document.getElementById(view);
  if (section && section.tagName === 'SECTION') section.scrollIntoView();
}

// mapOptions are what the map needs of the page: the report by country
// over the page's window (this page's data when it is that report, else
// /api/report's), the place it is filtered to, and a country's drill-down
// address (by subdivision, the view and percentile kept).
function mapOptions(data) {
  const q = reportOptions();
  const country = (q.get('country') || '').toUpperCase();
  const continent = (q.get('continent') || '').toUpperCase();
  return {
    country, continent,
    report() {
      if (q.get('by') === 'country' && !country) return Promise.resolve(data);
      const m = new URLSearchParams(q);
      m.set('by', 'country');
      m.set('headline', '1'); // the map needs the headline alone, which is much cheaper than the full report
      m.delete('country');
      return fetch('/api/report?' + m, { credentials: 'same-origin' }).then((r) => {
        if (!r.ok) return r.text().then((t) => { throw new Error(r.status + ' ' + t.trim()); });
        return r.json();
      });
    },
    drill(code) {
      // A report written to a file has no server to drill into.
      if (document.body.dataset.report === 'static') return '';
      const d = new URLSearchParams(q);
      d.set('country', code);
      d.set('by', 'subdivision');
      const h = getState();
      h.delete('group');
      h.set('view', 'map');
      return '/dashboard?' + d + '#' + h;
    },
  };
}

offline(); // a report written to a file answers its own requests
swap();
charts();
live();
