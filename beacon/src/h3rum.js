// h3rum: measures HTTP/3 against HTTP/2 from this browser and reports home.
// Embedding and protocol: ../PROTOCOL.md. Only global: window.h3rum. It
// stores nothing in the browser: no cookie, no localStorage, no sessionStorage.
//
// A site owner must never notice the script on the main thread, so its
// evaluation only reads its configuration and draws the sample: a visit
// that is not sampled ends there. Everything else waits for an idle
// callback after load, and nothing throws on the normal path.
'use strict';
import { VERSION, rate, config, runID, sample, client, report, alt } from './core.js';

// K is the configuration given in the script's URL (/h3rum.js?h3=…&site=…):
// the collector writes it here as an object, so the script never reads its
// element, whose first use is a noticeable cost on the main thread.
// As built, K is this string, and the element's data-* attributes count.
const K = '{config}';

// P, window.performance, is read only when the visit is sampled: its first
// use costs main-thread time an unsampled visit should not pay.
const W = window, D = document;
let P;
const api = { version: VERSION, run() {}, consent() {} };
let mt = 0; // main-thread ms used by this script's own callbacks
// x counts the exceptions caught in the run's callbacks by kind, the stage
// of the run (PROTOCOL.md, "x"), so that a browser where the script breaks
// shows up as a cause, not only as fewer runs.
const x = {}, fail = (k) => (x[k] = (x[k] | 0) + 1);

// m wraps every callback the browser calls into this script: it keeps
// exceptions out of the page, counts them under kind k (when given) and
// adds the callback's time to mt. Wrapped functions never call each other
// synchronously, so nothing counts twice.
const m = (f, k) => (a) => {
  const t = P.now();
  try {
    return f(a);
  } catch {
    k && fail(k);
  } finally {
    mt += P.now() - t;
  }
};

let cfg, started; // the run's configuration (core.js config)

// start runs the test, once, in an idle callback after load.
const start = m(() => {
  const N = navigator, L = location;
  // Browsers with AbortSignal.timeout (2022) have fetch, Resource Timing
  // and crypto.getRandomValues; the run id needs the last, or randomUUID
  // where the page has it (core.js runID).
  if (D.hidden || N.connection?.saveData || !AbortSignal.timeout || !W.crypto?.getRandomValues) return;
  cfg.id = runID(W.crypto);
  // Before the run's first request: what the page's own loads (the script's
  // among them) could have taught the browser of the H3 origin, whose name
  // is compared as entries spell it (lower case, no default port).
  cfg.alt = alt(P.getEntriesByType('navigation').concat(P.getEntriesByType('resource')), new URL(cfg.h3).origin);
  const t0 = P.now(), samples = [], seen = {}, waiting = {};
  let sent, po, q = 0;

  // send reports once per run: on completion, or partial when the page is
  // hidden or unloads first; with the script's errors, whatever it has.
  // mt is read before send's own time is added.
  const send = m((partial) => {
    if (sent) return;
    sent = 1; // a hidden page ends the run, with or without a report
    po?.disconnect();
    if (partial && !samples.length && !Object.keys(x).length) return;
    const r = report(cfg, L.origin, partial, mt, client(N), samples, x);
    // A string goes out as text/plain: CORS-safelisted, no preflight. The
    // endpoint is an http(s) origin, so sendBeacon does not throw; when it
    // refuses (the keepalive quota), a keepalive fetch would be refused too.
    N.sendBeacon(cfg.ep + '/beacon', JSON.stringify(r));
    D.dispatchEvent(new CustomEvent('h3rum:report', { detail: r }));
  }, 'send');
  D.addEventListener('visibilitychange', () => D.hidden && send(true));
  W.addEventListener('pagehide', () => send(true));

  // Resource Timing entries, matched by the response's URL, come through
  // an observer: it sees them even when the page's buffer is full. Chromium
  // has queued an entry by the time its body has arrived; taking it then
  // (takeRecords) leaves the observer's callback nothing to do.
  const found = (e) => ((seen[e.name] = e), waiting[e.name]?.(e));
  // Where the page broke the observer the run goes on, its samples without
  // entries ("noentry"), and the report says why (x.timing).
  try {
    (po = new PerformanceObserver(m((l) => l.getEntries().forEach(found), 'timing'))).observe({ type: 'resource' });
  } catch {
    fail('timing');
  }
  const entry = (url) => {
    po?.takeRecords().forEach(found);
    return (
      seen[url] ||
      new Promise((res) => {
        waiting[url] = res;
        setTimeout(res, 2e3);
      })
    );
  };

  // probe makes one request and adds its sample; its errors count as the
  // phase's (k) until the response is read, then as reading its timing.
  const probe = (ph, w, k = ph == 'w' ? 'warmup' : 'batch') =>
    m(() => {
      if (sent) return;
      const s = q++, at = P.now();
      let err = '', url;
      // A cross-origin fetch is a CORS request: mode 'cors' is the default.
      return fetch(cfg[w] + '/probe?bytes=' + cfg.b + '&r=' + cfg.id + '.' + s, {
        cache: 'no-store',
        credentials: 'omit',
        signal: AbortSignal.timeout(__H3RUM_REQUEST_TIMEOUT_MS__),
      })
        .then(m((r) => ((url = r.url), r.ok || (err = 'http_' + r.status), r.arrayBuffer()), k))
        .catch(m((e) => ((url = 0), (err = e.name == 'TimeoutError' ? 'timeout' : 'network')), k))
        // Failed fetches leave no entry: wait for one only after a response.
        .then(m(() => url && entry(url), 'timing'))
        .then(m((e) => sent || samples.push(sample(s, ph, w, e, t0, at, err, P.now())), 'timing'));
    }, k)();

  // Each request starts in a task of its own: a fetch() call costs a
  // throttled phone about 10 ms, so five in one task, or one after start's
  // own work, made a long task. A batch's tasks are queued at once and run
  // back to back, unless the page has input to handle first, so its
  // requests are in flight together as before.
  const task = (f) => new Promise((r) => setTimeout(r)).then(f);
  const batch = (w) => Promise.all([...Array(cfg.n)].map(() => task(() => probe('p', w))));
  // The run goes on once start has returned: every wrapped callback is
  // timed once.
  task(async () => {
    try {
      for (let i = cfg.w; i--; ) await probe('w', 'h3');
      await probe('w', 'h2');
      await batch(cfg.first);
      await batch(cfg.first == 'h2' ? 'h3' : 'h2');
    } catch {
      fail('idle'); // the run's own sequence broke: report what it has
    }
    send(false);
  });
}, 'idle');

// Consent: with data-consent="wait" (consent=wait in the URL) nothing
// after the evaluation happens until the page calls h3rum.consent(): no
// request, no timer, and the script stores nothing, ever. A run asked for
// while waiting (load, h3rum.run()) starts on consent.
let ok, asked;
const run = () =>
  !ok ? (asked = 1)
  : started || (started = W.requestIdleCallback ? requestIdleCallback(start, { timeout: 3e3 }) : setTimeout(start, 50));

// A second copy of the script on the page stays idle. currentScript is
// there only while the script is evaluated; a configured URL without an
// endpoint still needs the element's src, when the visit is sampled.
if (!W.h3rum) {
  W.h3rum = api;
  const c = K.h3 ? K : D.currentScript?.dataset;
  if (c && Math.random() < rate(c.sample) && (P = W.performance))
    m(() => {
      if ((cfg = config(c, c.endpoint || D.currentScript.src, location.hostname))) {
        ok = !cfg.wait;
        api.run = m(run);
        api.consent = m(() => ((ok = 1), asked && run()));
        cfg.trg == 'load' && (D.readyState == 'complete' ? run() : W.addEventListener('load', api.run));
      }
    })();
}
