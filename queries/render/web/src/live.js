// The live feed: one row per accepted run, newest first.

const max = 50;

function cell(text) {
  const td = document.createElement('td');
  td.textContent = text;
  return td;
}

function num(v, digits) { return v === null || v === undefined ? '-' : v.toFixed(digits); }

export function live() {
  if (document.body.dataset.live !== '1' || !window.WebSocket) return;
  const status = document.getElementById('live-status');
  const tbody = document.querySelector('#live tbody');
  let count = 0;
  function connect(delay) {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(proto + '//' + location.host + '/api/live');
    ws.onopen = () => { status.textContent = 'live: connected, ' + count + ' runs'; delay = 1000; };
    ws.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch (e) { return; }
      count++;
      const tr = document.createElement('tr');
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
    ws.onclose = () => {
      status.textContent = 'live: disconnected, retrying';
      setTimeout(() => connect(Math.min(delay * 2, 30000)), delay);
    };
  }
  connect(1000);
}
