import { el } from './dom.js';

// A report written to a file (h3rum report --format html) carries in
// #h3rum-data, keyed by grouping, the reports its views would ask the
// collector for (the map's, by country). There, a request for /api/report
// is answered from it and nothing is fetched: the file is opened offline,
// and its policy allows no connection.
export function offline() {
  const node = document.getElementById('h3rum-data');
  if (!node) return;
  let reports = null;
  try { reports = JSON.parse(node.textContent); } catch (e) { /* said below */ }
  if (!reports || typeof reports !== 'object') {
    node.before(el('p', { class: 'error', id: 'report-data-failed' }, 'The report’s data in this file is not readable: what needs it is not drawn.'));
    reports = {};
  }
  window.fetch = (input) => {
    const u = new URL(String(input), 'https://report.invalid/');
    const r = u.pathname === '/api/report' ? reports[u.searchParams.get('by')] : undefined;
    if (r) return Promise.resolve(new Response(JSON.stringify(r), { headers: { 'Content-Type': 'application/json' } }));
    return Promise.resolve(new Response('not in this file: ' + u.pathname + u.search, { status: 404 }));
  };
}
