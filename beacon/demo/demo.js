// Renders the report h3rum.js dispatches as the "h3rum:report" event.
// A separate file so the demo page runs under script-src 'self'.
'use strict';
(() => {
  const $ = (s) => document.querySelector(s);
  const row = (tbody, cells) => {
    const tr = document.createElement('tr');
    for (const c of cells) {
      const td = document.createElement('td');
      td.textContent = c === undefined || c === -1 ? '' : String(c);
      tr.appendChild(td);
    }
    tbody.appendChild(tr);
  };
  const median = (xs) => {
    const s = xs.filter((x) => x >= 0).sort((a, b) => a - b);
    return s.length ? s[(s.length - 1) >> 1] : -1;
  };

  document.addEventListener('h3rum:report', (e) => {
    const r = e.detail, status = $('#status');
    status.textContent = `Run ${r.id}: ${r.p ? 'partial' : 'complete'}, ${r.s.length} requests, ` +
      `parallel batches ${r.par.ord === 'h2first' ? 'HTTP/2 first' : 'HTTP/3 first'}, ` +
      `beacon main-thread time ${r.mt} ms. The report was sent to the collector.`;
    status.dataset.state = r.p ? 'partial' : 'done';
    const sum = $('#summary tbody');
    for (const w of ['h3', 'h2']) {
      const ps = r.s.filter((s) => s.ph === 'p' && s.w === w);
      const d = ps.map((s) => s.d);
      row(sum, [w === 'h3' ? 'HTTP/3 (Alt-Svc)' : 'HTTP/2', ps.length, ps.filter((s) => s.g === 'h3').length,
        ps.filter((s) => s.g === 'h2').length, median(d), d.length ? Math.max(...d) : -1]);
    }
    const all = $('#samples tbody');
    for (const s of [...r.s].sort((a, b) => a.q - b.q)) {
      const sv = s.sv || {};
      row(all, [s.q, s.ph === 'w' ? 'warm-up' : 'parallel', s.w, s.g, s.d, s.con, s.tf, s.r ? 'yes' : 'no',
        sv.rtt, sv.cid, sv.creq, s.e]);
    }
    $('#report').textContent = JSON.stringify(r, null, 1);
  });

  // The script measures after load, in an idle period: say so if nothing came.
  addEventListener('load', () => setTimeout(() => {
    const status = $('#status');
    if (status && status.dataset.state === 'running') {
      status.textContent = 'No report after 30 s: this browser lacks fetch/Resource Timing, saves data, or the page was hidden.';
      status.dataset.state = 'timeout';
    }
  }, 30000));
})();
