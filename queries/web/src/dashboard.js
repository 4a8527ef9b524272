// The h3rum dashboard's script: it swaps in the complete report, which the
// server sends after the point estimates, draws the charts from the data
// the page carries (#dash-data, JSON), and runs the live feed.
import { live } from './live.js';
import { distribution } from './distribution.js';
import { trend } from './trend.js';
import { offline } from './static.js';
import { getState, setState } from './state.js';

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
  let data;
  try { data = JSON.parse(node.textContent); } catch (e) { return; }
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
  for (const v of [dist && distribution(dist, data, state, onChange), tr && trend(tr, data, state, onChange)]) {
    if (v) views.push(v);
  }
  window.addEventListener('hashchange', follow);
}

offline(); // a report written to a file answers its own requests
swap();
charts();
live();
