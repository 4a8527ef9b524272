// h3rum: measures HTTP/3 against HTTP/2 from this browser and reports home.
// Embedding and protocol: ../PROTOCOL.md. Only global: window.h3rum.
'use strict';
import { VERSION, config, sample, client, hex, report } from './core.js';

const W = window, D = document, N = navigator, P = W.performance, L = location;
const api = { version: VERSION, run() {} };
let mt = 0; // main-thread ms used by this script's own callbacks

// m wraps every callback the browser calls into this script: it keeps
// exceptions out of the page and adds the callback's time to mt. Wrapped
// functions never call each other synchronously, so nothing counts twice.
const m = (f) => (a) => {
  const t = P.now();
  try {
    return f(a);
  } catch {
  } finally {
    mt += P.now() - t;
  }
};

// A second copy of the script on the page stays idle.
if (!W.h3rum) {
  W.h3rum = api;
  m(() => {
    const S = D.currentScript, cfg = config(S.dataset, S.src, L.hostname), PO = PerformanceObserver;
    // Throws (caught) where PerformanceObserver or AbortSignal is missing;
    // browsers with AbortSignal.timeout (2022) have fetch and Resource Timing.
    if (!cfg || !AbortSignal.timeout) return;

    let started;
    const start = m(() => {
      if (D.hidden || N.connection?.saveData || Math.random() >= cfg.sample) return;
      const id = hex(crypto.getRandomValues(new Uint8Array(16)));
      const h2first = cfg.h2first || Math.random() < 0.5;
      const t0 = P.now(), samples = [], waiting = {};
      let sent, q = 0;

      // send reports once per run: on completion, or partial when the
      // page is hidden or unloads first. Called only from wrapped code.
      const send = (partial) => {
        if (sent) return;
        sent = 1; // a hidden page ends the run, with or without a report
        po.disconnect();
        if (partial && !samples.length) return;
        const r = report(id, cfg, L.origin, h2first, partial, mt, client(N), samples);
        const body = JSON.stringify(r), url = cfg.ep + '/beacon';
        let queued;
        try {
          queued = N.sendBeacon(url, new Blob([body], { type: 'text/plain' }));
        } catch {}
        queued || fetch(url, { method: 'POST', body, keepalive: true, mode: 'no-cors', credentials: 'omit' }).catch(() => {});
        D.dispatchEvent(new CustomEvent('h3rum:report', { detail: r }));
      };
      D.addEventListener('visibilitychange', m(() => D.hidden && send(true)));
      W.addEventListener('pagehide', m(() => send(true)));

      // Resource Timing entries, matched by exact URL; the wait is bounded.
      const found = (e) => waiting[e.name]?.(e);
      const po = new PO(m((l) => l.getEntries().forEach(found)));
      po.observe({ type: 'resource' });

      const probe = (ph, w) => {
        if (sent) return;
        const s = q++, at = P.now();
        // Origins are canonical (URL.origin): this is the entry's name as is.
        const url = cfg[w] + '/probe?bytes=' + cfg.b + '&r=' + id + '.' + s;
        let err = '';
        return fetch(url, { cache: 'no-store', credentials: 'omit', mode: 'cors', signal: AbortSignal.timeout(1e4) })
          .then(m((r) => (r.ok || (err = 'http_' + r.status), r.arrayBuffer())))
          .catch(m((e) => (err = e.name == 'TimeoutError' ? 'timeout' : 'network')))
          .then(
            m(() => {
              // Failed fetches leave no entry: don't wait for one.
              return !err || err[0] == 'h'
                ? new Promise((res) => {
                    waiting[url] = res;
                    setTimeout(res, 2e3);
                    P.getEntriesByName(url).forEach(found);
                  })
                : 0;
            }),
          )
          .then(m((e) => sent || samples.push(sample(s, ph, w, e, t0, at, err))));
      };

      const steps = [];
      for (let i = 0; i < cfg.w; i++) steps.push(() => probe('w', 'h3'));
      const batch = (w) => () => Promise.all(Array.from({ length: cfg.n }, () => probe('p', w)));
      steps.push(() => probe('w', 'h2'), batch(h2first ? 'h2' : 'h3'), batch(h2first ? 'h3' : 'h2'), () => send(false));
      steps.reduce((p, f) => p.then(m(f)), Promise.resolve());
    });

    const run = () =>
      started || (started = W.requestIdleCallback ? requestIdleCallback(start, { timeout: 3e3 }) : setTimeout(start, 50));
    api.run = m(run);
    cfg.trg == 'load' && (D.readyState == 'complete' ? run() : W.addEventListener('load', api.run));
  })();
}
