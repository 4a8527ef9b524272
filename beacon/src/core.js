// Pure parts of the h3rum beacon: configuration, protocol normalisation,
// sample and report building. No DOM access here, so Node can test it.
// The wire format is specified in ../PROTOCOL.md; its limits, defaults and
// names are package beacon's constants, written in by the build as the
// __H3RUM_*__ identifiers (beacon.ScriptDefine).

export const VERSION = '1.4.1';

// r rounds to 1 µs: it removes float noise, keeps Server-Timing's 3 decimals.
const r = (x) => +x.toFixed(3);

// within puts x in [0, hi] (a NaN at 0): what the wire accepts of a time
// that has no unknown value.
const within = (x, hi) => (x > hi ? hi : x > 0 ? x : 0);

// num reads an attribute as an integer in [0, hi], else the default.
const num = (v, d, hi) => ((v = v ? Math.floor(v) : d) >= 0 && v <= hi ? v : d);

// origin reads "scheme://host[:port]" off an http(s) URL, as written:
// fetch canonicalises it, and entries are matched by the response's URL.
// No regular expressions anywhere: a page's first one costs about half a
// millisecond of main thread.
const origin = (u) => {
  const s = ('' + u).split('/', 3);
  return (s[0] == 'https:' || s[0] == 'http:') && !s[1] && s[2] && s.join('/');
};

// rate is data-sample: the fraction of visits that run the test.
export const rate = (s) => (s >= 0 && s <= 1 ? +s : 1);

// runID is 32 hex digits from the CSPRNG (c is window.crypto), never
// Math.random: it is the collector's exactly-once key, and a collision would
// drop a real run as a replay. randomUUID (secure contexts) is preferred as
// its first call is cheaper than getRandomValues' (BenchmarkE2ERunID); a
// UUID's 30 random digits and 2 of a second make the 32.
export const runID = (c) => {
  if (c.randomUUID) {
    // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx
    const [t, m, v, r, n] = c.randomUUID().split('-');
    return t + m + v.slice(1) + r.slice(1) + n + c.randomUUID().slice(-2);
  }
  let s = '';
  for (const x of c.getRandomValues(new Uint8Array(16))) s += (x + 256).toString(16).slice(1);
  return s;
};

// config turns the data-* attributes of the script element into the run's
// parameters, with the origin of its first batch (random unless data-order
// says h2first), or a falsy value when the embedding is unusable (an
// origin missing or invalid). The run's id is drawn when it starts.
export function config(ds, src, host) {
  const h3 = origin(ds.h3), h2 = origin(ds.h2), ep = origin(ds.endpoint || src);
  return (
    h3 &&
    h2 &&
    ep && {
      h3,
      h2,
      site: ds.site || host,
      // parallel starts at 1: 0 is the default too
      n: num(ds.parallel, __H3RUM_PARALLEL_DEFAULT__, __H3RUM_PARALLEL_MAX__) || __H3RUM_PARALLEL_DEFAULT__,
      w: num(ds.warmup, __H3RUM_WARMUP_DEFAULT__, __H3RUM_WARMUP_MAX__),
      b: num(ds.bytes, __H3RUM_BYTES_DEFAULT__, 1 << __H3RUM_BYTES_MAX_BITS__),
      trg: ds.trigger == 'manual' ? 'manual' : 'load',
      wait: ds.consent == 'wait', // hold the run until h3rum.consent()
      ep, // reports go to <ep>/beacon
      first: ds.order == 'h2first' || Math.random() < 0.5 ? 'h2' : 'h3',
    }
  );
}

// proto normalises nextHopProtocol (and Server-Timing's proto description):
// h3-29, h3-Q050, hq and http/2+quic/43 are h3.
export const proto = (p) => {
  p = ('' + p).toLowerCase();
  const b = (x) => p.startsWith(x);
  return b('h3') || b('hq') || p.includes('quic') ? 'h3' : b('h2') || b('http/2') ? 'h2' : b('http/1') ? 'h1' : 'unknown';
};

// serverTiming maps the collector's Server-Timing metrics (see PROTOCOL.md)
// to the report's "sv" object; undefined when the header was not visible.
// Besides proto and cid, __H3RUM_SV__ tells durations (1) from counts (2).
export function serverTiming(list) {
  let sv;
  for (const { name: n, duration: d, description: s } of list || []) {
    const v =
      n == __H3RUM_SV_PROTO__ ? proto(s)
      : n == __H3RUM_SV_CID__ ? s
      : __H3RUM_SV__[n] == 1 && d >= 0 && d <= __H3RUM_MAX_DURATION_MS__ ? r(d) // else unknown: the collector refuses it
      : __H3RUM_SV__[n] == 2 && s.length < __H3RUM_SV_COUNT_DIGITS__ + 1 && s == '' + (s >>> 0) ? +s // up to MaxCountDigits digits
      : '';
    if (v !== '') (sv = sv || {})[n] = v;
  }
  return sv;
}

// sample builds one "s" element from a PerformanceResourceTiming entry e
// (null when none arrived in time). t0 is the run's start, at the time the
// request was made and now the time its entry is read, all performance.now()
// values.
export function sample(q, ph, w, e, t0, at, err, now) {
  // An entry whose times cannot be true measures nothing: a duration below
  // zero (headless Chromium with a virtual time budget gives them),
  // one beyond the request's timeout, or one that starts before the fetch
  // or ends after it is read by the script's own clock (a clock that
  // jumped; 1 ms spare for coarsened clocks). Its timings go as unknown and
  // its error says why, so the run is kept and the cause counted.
  const bad =
    e &&
    (!(e.duration >= 0) ? 'timing_negative'
    : e.duration > __H3RUM_REQUEST_TIMEOUT_MS__ ? 'timing_overlong'
    : e.startTime < at - 1 || e.startTime + e.duration > now + 1 ? 'timing_jump'
    : '');
  const t = !bad && e, has = t && t.requestStart > 0; // false without Timing-Allow-Origin
  // A phase that starts at 0 was skipped (a reused connection's DNS and
  // connect): 0. One that ends before it starts, or lasts longer than the
  // whole request, is unknown, -1: Safari has reported responseStart 0
  // beside a requestStart, which is no response.
  const d = (a, b, v) => (!has ? -1 : t[a] > 0 ? ((v = t[b] - t[a]) >= 0 && v <= t.duration ? r(v) : -1) : 0);
  const s = {
    q,
    ph,
    w,
    g: proto(e?.nextHopProtocol),
    st: r(within((t ? t.startTime : at) - t0, __H3RUM_MAX_DURATION_MS__)),
    d: t ? r(t.duration) : -1,
    dns: d('domainLookupStart', 'domainLookupEnd'),
    con: d('connectStart', 'connectEnd'),
    tls: d('secureConnectionStart', 'connectEnd'),
    tf: d('requestStart', 'responseStart'),
    dl: t?.responseStart > 0 ? d('responseStart', 'responseEnd') : -1,
    r: !!has && t.connectStart == t.connectEnd,
    ts: e?.transferSize | 0,
    sv: serverTiming(e?.serverTiming),
  };
  // A request that succeeded but left no entry within the wait, or one
  // that cannot be true, is a measurement failure too.
  if (err || !t) s.e = err || bad || 'noentry';
  return s;
}

// alt says whether this page's own loads could have taught the browser the
// H3 origin's Alt-Svc before the run's first request to it (PROTOCOL.md,
// "alt"). list holds the page's navigation and resource entries in start
// order, h3 is in URL.origin's form; the earliest from h3 that went over the
// network decides (none: 1).
// A cached one (no bytes transferred, a body) taught nothing; one without
// Timing-Allow-Origin hides its protocol (5).
export function alt(list, h3) {
  for (const e of list) {
    const p = proto(e.nextHopProtocol), u = '' + e.name;
    if (origin(u) == h3 && (e.transferSize || !e.encodedBodySize))
      return p == 'h3' ? 4 : p == 'unknown' ? 5 : u.startsWith(h3 + '/h3rum.') ? 2 : 3;
  }
  return 1;
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

// report assembles the payload; x, the script's own errors by kind, only
// when there are any.
export const report = (cfg, o, partial, mt, c, samples, x = {}) => ({
  v: __H3RUM_WIRE_VERSION__,
  id: cfg.id,
  site: cfg.site,
  o,
  bv: VERSION,
  p: partial,
  mt: r(within(mt, __H3RUM_MAX_MAIN_THREAD_MS__)), // a clock that jumped, not the script's work
  alt: cfg.alt,
  par: { n: cfg.n, w: cfg.w, b: cfg.b, ord: cfg.first + 'first', trg: cfg.trg },
  c,
  x: Object.keys(x).length ? x : undefined,
  s: samples,
});
