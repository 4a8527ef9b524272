// The h3rum dashboard's script: it swaps in the complete report, which the
// server sends after the point estimates, and runs the live feed: one row
// per accepted run, newest first.
(function () {
  'use strict';
  var complete = document.getElementById('complete');
  var estimate = document.getElementById('estimate');
  if (complete && estimate) {
    estimate.replaceWith(complete.content);
    complete.remove();
  } else if (document.getElementById('complete-failed')) {
    var computing = document.getElementById('computing');
    if (computing) computing.remove(); // the estimate stays, with the error below it
  }
  if (document.body.dataset.live !== '1' || !window.WebSocket) return;
  var status = document.getElementById('live-status');
  var tbody = document.querySelector('#live tbody');
  var count = 0;
  var max = 50;
  function cell(text) {
    var td = document.createElement('td');
    td.textContent = text;
    return td;
  }
  function num(v, digits) { return v === null || v === undefined ? '-' : v.toFixed(digits); }
  function connect(delay) {
    var proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    var ws = new WebSocket(proto + '//' + location.host + '/api/live');
    ws.onopen = function () { status.textContent = 'live: connected, ' + count + ' runs'; delay = 1000; };
    ws.onmessage = function (ev) {
      var m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      count++;
      var tr = document.createElement('tr');
      tr.appendChild(cell(new Date(m.time).toISOString().slice(11, 19)));
      tr.appendChild(cell(m.site));
      tr.appendChild(cell(m.continent));
      tr.appendChild(cell(m.country));
      tr.appendChild(cell(num(m.h2_median_ms, 1)));
      tr.appendChild(cell(num(m.h3_median_ms, 1)));
      tr.appendChild(cell(m.h3_availability === null ? '-' : Math.round(m.h3_availability * 100) + '%'));
      tbody.insertBefore(tr, tbody.firstChild);
      while (tbody.rows.length > max) tbody.deleteRow(tbody.rows.length - 1);
      status.textContent = 'live: connected, ' + count + ' runs';
    };
    ws.onclose = function () {
      status.textContent = 'live: disconnected, retrying';
      setTimeout(function () { connect(Math.min(delay * 2, 30000)); }, delay);
    };
  }
  connect(1000);
})();
