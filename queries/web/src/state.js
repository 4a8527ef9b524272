// The views' state lives in the address's fragment (#group=AS&p=95), so a
// view can be shared and reloaded: the query string is the report's
// options, which the server validates and refuses unknown keys of.

export function getState() {
  return new URLSearchParams(location.hash.slice(1));
}

// setState merges kv into the fragment without a new history entry.
export function setState(kv) {
  const s = getState();
  for (const [k, v] of Object.entries(kv)) {
    if (v === null || v === undefined || v === '') s.delete(k);
    else s.set(k, String(v));
  }
  const h = s.toString();
  history.replaceState(null, '', h ? '#' + h : location.pathname + location.search);
}
