// Pure parts of the h3rum beacon: configuration, protocol normalisation,
// sample and report building. No DOM access here, so Node can test it.
// The wire format is specified in ../PROTOCOL.md.

export const VERSION = '1.1.0';

// r rounds to 1 µs: it removes float noise, keeps Server-Timing's 3 decimals.
const r = (x) => +x.toFixed(3);

// num reads an attribute as an integer in [lo, hi], else the default.
// The limits are the Go decoder's (beacon/report.go).
const num = (v, d, hi) => ((v = v ? Math.floor(v) : d) >= 0 && v <= hi ? v : d);

const origin = (u) => {
  try {
    return new URL(u).origin;
  } catch {}
};

// config turns the data-* attributes of the script element into the run's
// parameters, or a falsy value when the embedding is unusable (an origin
// missing or invalid).
export function config(ds, src, host) {
  const h3 = origin(ds.h3), h2 = origin(ds.h2), ep = origin(ds.endpoint || src), s = ds.sample;
  return (
    h3 &&
    h2 &&
    ep && {
      h3,
      h2,
      site: ds.site || host,
      sample: s >= 0 && s <= 1 ? +s : 1,
      n: num(ds.parallel, 5, 20) || 5,
      w: num(ds.warmup, 2, 10),
      b: num(ds.bytes, 0, 1 << 24),
      trg: ds.trigger == 'manual' ? 'manual' : 'load',
      ep, // reports go to <ep>/beacon
      h2first: ds.order == 'h2first',
    }
  );
}

// proto normalises nextHopProtocol (and Server-Timing's proto description).
export const proto = (p) =>
  /^h3|^hq|quic/i.test(p) ? 'h3' : /^h2|^http\/2/i.test(p) ? 'h2' : /^http\/1/i.test(p) ? 'h1' : 'unknown';

// serverTiming maps the collector's Server-Timing metrics (see PROTOCOL.md)
// to the report's "sv" object; undefined when the header was not visible.
export function serverTiming(list) {
  let sv;
  for (const { name: n, duration: d, description: s } of list || []) {
    const v =
      n == 'proto' ? proto(s)
      : n == 'cid' ? s
      : /^(app|rtt|minrtt|rttvar|age)$/.test(n) ? r(d)
      : /^(lost|creq|resumed|early)$/.test(n) && /^\d{1,9}$/.test(s) ? +s
      : '';
    if (v !== '') (sv = sv || {})[n] = v;
  }
  return sv;
}

// sample builds one "s" element from a PerformanceResourceTiming entry e
// (null when none arrived in time). t0 is the run's start and at the time
// the request was made, both performance.now() values.
export function sample(q, ph, w, e, t0, at, err) {
  const has = e && e.requestStart > 0; // false without Timing-Allow-Origin
  const d = (a, b) => (!has ? -1 : e[a] > 0 ? r(Math.max(0, e[b] - e[a])) : 0);
  const s = {
    q,
    ph,
    w,
    g: proto(e?.nextHopProtocol),
    st: r((e ? e.startTime : at) - t0),
    d: e ? r(e.duration) : -1,
    dns: d('domainLookupStart', 'domainLookupEnd'),
    con: d('connectStart', 'connectEnd'),
    tls: d('secureConnectionStart', 'connectEnd'),
    tf: d('requestStart', 'responseStart'),
    dl: d('responseStart', 'responseEnd'),
    r: !!has && e.connectStart == e.connectEnd,
    ts: e?.transferSize | 0,
    sv: serverTiming(e?.serverTiming),
  };
  // A request that succeeded but left no entry within the wait is a
  // measurement failure too: "noentry".
  if (err || !e) s.e = err || 'noentry';
  return s;
}

// client reads what the browser says about itself, where it says it;
// JSON.stringify drops what is undefined.
export function client(nav) {
  const ua = nav.userAgentData || {}, cn = nav.connection || {};
  return {
    br: ua.brands?.map((b) => [b.brand, b.version]),
    pf: ua.platform,
    mb: ua.mobile,
    et: cn.effectiveType,
    rtt: cn.rtt,
    dl: cn.downlink,
    wd: !!nav.webdriver,
  };
}

export const hex = (a) => Array.from(a, (b) => (b | 256).toString(16).slice(1)).join('');

// report assembles the payload.
export const report = (id, cfg, o, h2first, partial, mt, c, samples) => ({
  v: 1,
  id,
  site: cfg.site,
  o,
  bv: VERSION,
  p: partial,
  mt: r(mt),
  par: { n: cfg.n, w: cfg.w, b: cfg.b, ord: h2first ? 'h2first' : 'h3first', trg: cfg.trg },
  c,
  s: samples,
});
