// The views' state lives in the address's fragment (#group=AS&p=95&view=map),
// so a view can be shared and reloaded: the query string is the report's
// options (window, grouping, continent and country), which the server
// validates and refuses unknown keys of. A change of view is a history
// entry, so back and forward step through views.

export function getState() {
  return new URLSearchParams(location.hash.slice(1));
}

// setState merges kv into the fragment as a new history entry (none when
// nothing changes).
export function setState(kv) {
  const s = getState();
  for (const [k, v] of Object.entries(kv)) {
    if (v === null || v === undefined || v === '') s.delete(k);
    else s.set(k, String(v));
  }
  const h = s.toString();
  if (h === location.hash.slice(1)) return;
  history.pushState(null, '', h ? '#' + h : location.pathname + location.search);
}

// reportOptions are the page's report options, without the first-load
// credential.
export function reportOptions() {
  const q = new URLSearchParams(location.search);
  q.delete('token');
  return q;
}
