package beacon_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evanw/esbuild/pkg/api"
	"github.com/gorilla/websocket"
	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// The end-to-end tests run the built script (as the asset handler serves
// it) in real headless Chromium against three loopback origins: an H3
// origin (TCP+TLS and QUIC on one port, Alt-Svc), an H2-only origin and a
// TCP-only page origin that receives POST /beacon.

const (
	e2eWarmup   = 2
	e2eParallel = 5
	srvRTT      = 1.5 // the fixture's Server-Timing rtt, ms
)

type fixture struct {
	t        testing.TB
	cert     tls.Certificate
	spki     string
	h3, h2   string // origins
	page     string // page URL
	reports  chan result
	slowH2   bool          // H2 probes after the first one block until release
	slowHit  chan struct{} // a blocked H2 probe arrived
	release  chan struct{}
	connSeq  atomic.Int64
	requests atomic.Int64 // to the H3 and H2 origins and POST /beacon
	// peerJS: the peer scripts by name (bundlePeers); peerBeacons: their
	// reports received.
	peerJS      atomic.Pointer[map[string][]byte]
	peerBeacons [2]atomic.Int64 // by peers' order
	shutdown    []func()
}

type result struct {
	report *beacon.Report
	body   string
	err    error
}

type connInfo struct {
	id   string
	reqs atomic.Int64
}

type connKey struct{}

func newFixture(t testing.TB, slowH2 bool) *fixture {
	t.Helper()
	f := &fixture{t: t, reports: make(chan result, 4), slowH2: slowH2, slowHit: make(chan struct{}, 1),
		release: make(chan struct{})}
	c, err := chromium.NewCert() // localhost, 127.0.0.1 and ::1
	if err != nil {
		t.Fatal(err)
	}
	f.cert, f.spki = c.TLS, c.SPKI
	t.Cleanup(func() {
		close(f.release)
		for i := len(f.shutdown) - 1; i >= 0; i-- {
			f.shutdown[i]()
		}
	})

	// H3 origin: TCP (HTTP/1.1+2, with Alt-Svc) and UDP (HTTP/3) on one
	// port, each on 127.0.0.1 and ::1 (Chromium tries ::1 first).
	tcp, udp, port := listenBoth(t, true)
	h3srv := &http3.Server{
		Handler:   f.probe("h3"),
		TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{f.cert}}),
		Port:      port,
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, &connInfo{id: fmt.Sprintf("q%d", f.connSeq.Add(1))})
		},
	}
	for _, pc := range udp {
		go h3srv.Serve(pc)
	}
	f.shutdown = append(f.shutdown, func() { h3srv.Close() })
	f.serveTCP(tcp, f.probe("h3"))
	f.h3 = fmt.Sprintf("https://localhost:%d", port)

	// H2-only origin.
	tcp, _, port = listenBoth(t, false)
	f.serveTCP(tcp, f.probe("h2"))
	f.h2 = fmt.Sprintf("https://localhost:%d", port)

	// Page origin: the page, the script from the asset handler, /beacon.
	tcp, _, port = listenBoth(t, false)
	mux := http.NewServeMux()
	(&beacon.Handler{H3Origin: f.h3, H2Origin: f.h2, Site: "e2e"}).Register(mux)
	mux.HandleFunc("GET /{$}", f.servePage)
	mux.HandleFunc("POST /beacon", f.serveBeacon)
	mux.HandleFunc("GET /floor.js", f.serveFloor)
	f.servePeers(mux)
	mux.HandleFunc("GET /site.js", serveSiteScript)
	mux.HandleFunc("GET /broken.js", serveBrokenScript)
	// Set before serving: handlers read it (the race detector sees no
	// order through the browser).
	f.page = fmt.Sprintf("https://localhost:%d/", port)
	f.serveTCP(tcp, mux)
	return f
}

func (f *fixture) serveTCP(ls []net.Listener, h http.Handler) {
	srv := &http.Server{
		Handler:   h,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{f.cert}},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, &connInfo{id: fmt.Sprintf("t%d", f.connSeq.Add(1))})
		},
	}
	for _, l := range ls {
		go srv.ServeTLS(l, "", "")
	}
	f.shutdown = append(f.shutdown, func() { srv.Close() })
}

// probe answers /probe like the collector does, with a Server-Timing header
// naming the protocol the request arrived on and its connection.
func (f *fixture) probe(origin string) http.Handler {
	var h2reqs atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if r.URL.Path != "/probe" {
			http.NotFound(w, r)
			return
		}
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", "*")
		hd.Set("Timing-Allow-Origin", "*")
		hd.Set("Cache-Control", "no-store")
		if origin == "h2" {
			hd.Set("Alt-Svc", "clear")
			if f.slowH2 && h2reqs.Add(1) > 1 {
				select {
				case f.slowHit <- struct{}{}:
				default:
				}
				select {
				case <-f.release:
				case <-r.Context().Done():
				case <-time.After(30 * time.Second):
				}
			}
		} else if r.ProtoMajor < 3 {
			hd.Set("Alt-Svc", fmt.Sprintf(`h3=":%d"; ma=60`, r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr).Port))
		}
		proto := map[int]string{1: "h1", 2: "h2", 3: "h3"}[r.ProtoMajor]
		ci, _ := r.Context().Value(connKey{}).(*connInfo)
		cid, n := "none", int64(0)
		if ci != nil {
			cid, n = ci.id, ci.reqs.Add(1)
		}
		hd.Set("Server-Timing", fmt.Sprintf("proto;desc=%s, app;dur=0.012, rtt;dur=%g, minrtt;dur=1, rttvar;dur=0.25, "+
			"lost;desc=0, cid;desc=%s, creq;desc=%d, resumed;desc=0, early;desc=0", proto, srvRTT, cid, n))
		w.WriteHeader(http.StatusNoContent)
	})
}

func (f *fixture) servePage(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	// Cross-origin isolation gives performance.now() 5 µs resolution
	// instead of 100 µs, so the script's main-thread time is measurable.
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Embedder-Policy", "require-corp")
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self' "+f.h3+" "+f.h2)
	site := "" // ?site: the page has a script of its own, as sites do
	if r.URL.Query().Has("site") {
		site = `<script src="/site.js"></script>`
	}
	if r.URL.Query().Has("broken") { // a page that breaks what the script uses
		site += `<script src="/broken.js?` + html.EscapeString(r.URL.Query().Get("broken")) + `"></script>`
	}
	if r.URL.Query().Has("floor") { // the same page with only the requests
		src := "/floor.js"
		if r.URL.Query().Get("floor") == "idle" {
			src += "?idle"
		}
		fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>e2e</title>%s<script async src="%s"></script></head><body><p>page</p></body></html>`, site, src)
		return
	}
	if p := r.URL.Query().Get("peer"); p != "" { // the same page with a script a site would embed instead
		fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>e2e</title>%s<script async src="/peer/%s.js"></script></head><body><p>page</p></body></html>`, site, html.EscapeString(p))
		return
	}
	if r.URL.Query().Has("control") { // the same page without the script
		fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>e2e</title>%s</head><body><p>page</p></body></html>`, site)
		return
	}
	if r.URL.Query().Has("url") { // configured by the script's URL
		q := url.Values{"h3": {f.h3}, "h2": {f.h2}, "site": {"e2e"}, "sample": {"1"},
			"warmup": {fmt.Sprint(e2eWarmup)}, "parallel": {fmt.Sprint(e2eParallel)},
			"endpoint": {strings.TrimSuffix(f.page, "/")}}
		switch r.URL.Query().Get("url") {
		case "noendpoint":
			q.Del("endpoint")
		case "unsampled":
			q.Set("sample", "0")
		case "consent":
			q.Set("consent", "wait")
		}
		// The element's attributes, wrong on purpose, must not count.
		fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>e2e</title>%s
<script async src="/%s?%s" data-h3="ftp://nowhere" data-sample="0"></script>
</head><body><p>page</p></body></html>`, site, beacon.ScriptName(), html.EscapeString(q.Encode()))
		return
	}
	consent := "" // ?consent: the run waits for h3rum.consent()
	if r.URL.Query().Has("consent") {
		consent = ` data-consent="wait"`
	}
	fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8"><title>e2e</title>%s
<script async src="/%s" data-h3="%s" data-h2="%s" data-site="e2e" data-sample="1" data-warmup="%d" data-parallel="%d"%s></script>
</head><body><p>page</p></body></html>`, site, beacon.ScriptName(), f.h3, f.h2, e2eWarmup, e2eParallel, consent)
}

// serveSiteScript is a page's own script, the least any site runs: it
// reads the document, the navigator and the navigation's timing, and
// waits for load — the first use of each browser object, which a bare page
// leaves to whichever script comes first.
func serveSiteScript(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript")
	fmt.Fprint(w, `(() => {
  const t = performance.getEntriesByType('navigation')[0], nav = navigator;
  document.documentElement.dataset.site = [document.title, document.readyState, nav.language, nav.connection?.effectiveType, t?.type].join();
  addEventListener('load', () => document.hidden);
})();`)
}

// serveFloor is the least a script can do to run the protocol: the same
// fetches as the script's, made the same way (2 sequential warm-ups to H3,
// 1 to H2, then a batch of 5 in parallel to each origin, the first one
// drawn at random; the same options and timeout signal), bodies read,
// with no Resource Timing, no Server-Timing parsing and no report. Its
// main-thread cost is the browser's own cost of the requests.
// ?idle: the floor also waits, as the script does, for an idle callback
// after load (with the script's 3 s timeout): the design's own floor.
// Without it, the old floor: the fetches start at load.
func (f *fixture) serveFloor(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript")
	wait := "addEventListener('load', r)"
	if r.URL.Query().Has("idle") {
		wait = "addEventListener('load', () => requestIdleCallback(r, {timeout: 3e3}))"
	}
	fmt.Fprintf(w, `(async () => {
  let q = 0;
  const id = Math.random(), get = (o) => fetch(o + '/probe?bytes=0&r=' + id + '.' + q++, {cache: 'no-store', credentials: 'omit', signal: AbortSignal.timeout(1e4)}).then(r => r.arrayBuffer());
  const batch = (o) => Promise.all(Array.from({length: %d}, () => get(o)));
  await new Promise(r => %s);
  const [a, b] = Math.random() < 0.5 ? [%[3]q, %[4]q] : [%[4]q, %[3]q];
  for (let i = 0; i < %[5]d; i++) await get(%[3]q);
  await get(%[4]q);
  await batch(a);
  await batch(b);
})();`, e2eParallel, wait, f.h3, f.h2, e2eWarmup)
}

// peers are the scripts a site would embed instead of this one, from
// beacon/bench/peers (installed by make bench-deps), each bundled as a
// site would bundle it and served, like the script, from the page's
// origin: /peer/<name>.js. Their reports land on /vitals and /api/event,
// counted in peerBeacons.
var peers = []string{"web-vitals", "plausible"}

func (f *fixture) servePeers(mux *http.ServeMux) {
	mux.HandleFunc("GET /peer/{name}", func(w http.ResponseWriter, r *http.Request) {
		var js []byte
		ok := false
		if m := f.peerJS.Load(); m != nil {
			js, ok = (*m)[strings.TrimSuffix(r.PathValue("name"), ".js")]
		}
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(js)
	})
	for i, path := range []string{"POST /vitals", "POST /api/event"} { // peers' order
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 1<<16))
			f.peerBeacons[i].Add(1)
			w.WriteHeader(http.StatusAccepted)
		})
	}
}

// bundlePeers builds the peers' bundles (minified IIFEs, as a site ships
// them) before the fixture serves any page.
func (f *fixture) bundlePeers(tb testing.TB) {
	tb.Helper()
	dir := filepath.Join("bench", "peers")
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		tb.Fatalf("the peer scripts are not installed (run make bench-deps): %v", err)
	}
	m := map[string][]byte{}
	for _, p := range peers {
		res := api.Build(api.BuildOptions{EntryPoints: []string{filepath.Join(dir, p+".js")}, Bundle: true,
			Format: api.FormatIIFE, MinifyWhitespace: true, MinifyIdentifiers: true, MinifySyntax: true,
			Target: api.ES2020, Write: false, LogLevel: api.LogLevelSilent})
		if len(res.Errors) > 0 || len(res.OutputFiles) != 1 {
			tb.Fatalf("bundling the peer %s: %v", p, res.Errors)
		}
		m[p] = res.OutputFiles[0].Contents
	}
	f.peerJS.Store(&m)
}

func (f *fixture) serveBeacon(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, beacon.MaxReportBytes))
	if err != nil {
		f.reports <- result{err: fmt.Errorf("reading beacon: %w", err)}
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	rep, err := beacon.Decode(body)
	select {
	case f.reports <- result{report: rep, body: string(body), err: err}:
	default:
		f.t.Errorf("more reports than expected: %s", body)
	}
	w.WriteHeader(http.StatusNoContent)
}

// awaitReport waits, bounded, for the one report of the run.
func (f *fixture) awaitReport(b *chromium.Browser, d time.Duration) *beacon.Report {
	f.t.Helper()
	select {
	case res := <-f.reports:
		if res.err != nil {
			f.t.Fatalf("report rejected: %v\n%s", res.err, res.body)
		}
		if testing.Verbose() {
			f.t.Logf("report (%d bytes): %s", len(res.body), res.body)
		}
		return res.report
	case <-time.After(d):
		f.t.Fatalf("no report within %v; chromium output:\n%s", d, b.Output())
	}
	return nil
}

func startBrowser(t testing.TB, f *fixture, devtools bool) *chromium.Browser {
	t.Helper()
	return startBrowserAt(t, f, f.page, devtools)
}

// startBrowserAt starts Chromium on url, closed when the test ends.
func startBrowserAt(t testing.TB, f *fixture, url string, devtools bool) *chromium.Browser {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := chromium.Start(ctx, url, chromium.Options{SPKI: []string{f.spki}, DevTools: devtools})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

func TestE2EReport(t *testing.T) {
	f := newFixture(t, false)
	b := startBrowser(t, f, false)
	r := f.awaitReport(b, 30*time.Second)

	if r.Partial || r.Site != "e2e" || r.PageOrigin != strings.TrimSuffix(f.page, "/") {
		t.Errorf("report header: partial %v, site %q, origin %q", r.Partial, r.Site, r.PageOrigin)
	}
	if want := (beacon.Params{Parallel: e2eParallel, Warmup: e2eWarmup, Bytes: 0, Order: r.Params.Order, Trigger: "load"}); r.Params != want {
		t.Errorf("params %+v, want %+v", r.Params, want)
	}
	if len(r.Samples) != e2eWarmup+1+2*e2eParallel {
		t.Fatalf("%d samples", len(r.Samples))
	}
	if len(r.Client.Brands) == 0 {
		t.Errorf("no UA-CH brands from Chromium on a secure page: %+v", r.Client)
	}
	parallel := map[beacon.Proto]int{}
	for _, s := range r.Samples {
		if s.Error != "" {
			t.Errorf("seq %d failed: %s", s.Seq, s.Error)
		}
		if s.Duration <= 0 || !s.Server.Present || s.Server.RTT != srvRTT || s.Server.ConnID == "" || s.Server.ConnReqs < 1 {
			t.Errorf("seq %d: duration %v, server timing %+v", s.Seq, s.Duration, s.Server)
		}
		if s.Phase != beacon.PhaseParallel {
			continue // which warm-up request switched to h3 is racy
		}
		parallel[s.Want]++
		if s.Got != s.Want || s.Server.Proto != s.Want {
			t.Errorf("seq %d: wanted %s, browser says %s, server says %s", s.Seq, s.Want, s.Got, s.Server.Proto)
		}
	}
	if parallel[beacon.ProtoH2] != e2eParallel || parallel[beacon.ProtoH3] != e2eParallel {
		t.Errorf("parallel samples by origin: %v", parallel)
	}
	t.Logf("beacon main-thread time for the run: %.3f ms (budget 1 ms), order %s", r.MainThreadMS, r.Params.Order)
}

// TestE2EConfiguredURL embeds the script configured by its URL, with
// wrong data-* attributes on the element: the run must follow the URL,
// with the endpoint given or taken from the script's origin.
func TestE2EConfiguredURL(t *testing.T) {
	f := newFixture(t, false)
	for _, q := range []string{"?url", "?url=noendpoint"} {
		t.Run(q, func(t *testing.T) {
			b := startBrowserAt(t, f, f.page+q, false)
			r := f.awaitReport(b, 30*time.Second)
			if r.Site != "e2e" || r.Params.Warmup != e2eWarmup || r.Params.Parallel != e2eParallel ||
				len(r.Samples) != e2eWarmup+1+2*e2eParallel {
				t.Errorf("site %q, params %+v, %d samples", r.Site, r.Params, len(r.Samples))
			}
			for _, s := range r.Samples {
				if s.Error != "" || (s.Phase == beacon.PhaseParallel && s.Got != s.Want) {
					t.Errorf("seq %d: error %q, wanted %s, got %s", s.Seq, s.Error, s.Want, s.Got)
				}
			}
		})
	}
}

// TestE2EPartial leaves the page while the H2 batch hangs: the report of
// what was measured must still arrive, marked partial.
func TestE2EPartial(t *testing.T) {
	for _, tt := range []struct {
		name  string
		leave func(ctx context.Context, b *chromium.Browser, p chromium.Page) error
	}{
		{"close tab", func(ctx context.Context, b *chromium.Browser, p chromium.Page) error { return b.ClosePage(ctx, p) }},
		{"navigate away", func(ctx context.Context, b *chromium.Browser, p chromium.Page) error {
			return b.Navigate(ctx, p, "about:blank")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, true)
			b := startBrowser(t, f, true)
			select {
			case <-f.slowHit:
			case <-time.After(30 * time.Second):
				t.Fatalf("the H2 batch never started; chromium output:\n%s", b.Output())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			pages, err := b.Pages(ctx)
			if err != nil || len(pages) != 1 {
				t.Fatalf("pages %+v: %v", pages, err)
			}
			if err := tt.leave(ctx, b, pages[0]); err != nil {
				t.Fatal(err)
			}
			r := f.awaitReport(b, 20*time.Second)
			if !r.Partial {
				t.Error("report not marked partial")
			}
			seqs := map[int]bool{}
			for _, s := range r.Samples {
				seqs[s.Seq] = true
				if s.Phase == beacon.PhaseParallel && s.Want == beacon.ProtoH2 {
					t.Errorf("seq %d: a hung H2 request was reported: %+v", s.Seq, s)
				}
			}
			for q := range e2eWarmup + 1 {
				if !seqs[q] {
					t.Errorf("warm-up seq %d missing from the partial report", q)
				}
			}
			if n := len(r.Samples); n != e2eWarmup+1 && n != e2eWarmup+1+e2eParallel {
				t.Errorf("%d samples, want the warm-ups and, with order h3first, the H3 batch (order %s)", n, r.Params.Order)
			}
		})
	}
}

// TestE2EDemo opens the collector's /demo page (strict CSP, no inline
// script) and checks that it measured, reported and rendered the run.
func TestE2EDemo(t *testing.T) {
	f := newFixture(t, false)
	f.page += "demo"
	b := startBrowser(t, f, true)
	r := f.awaitReport(b, 30*time.Second)
	if r.Partial || r.Site != "e2e" || len(r.Samples) != 2+1+2*5 {
		t.Fatalf("demo report: partial %v, site %q, %d samples", r.Partial, r.Site, len(r.Samples))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pages, err := b.Pages(ctx)
	if err != nil || len(pages) != 1 {
		t.Fatalf("pages %+v: %v", pages, err)
	}
	const probe = `[document.getElementById("status").dataset.state, ` +
		`document.querySelectorAll("#samples tbody tr").length, document.querySelectorAll("#summary tbody tr").length].join()`
	var state string
	for ctx.Err() == nil {
		res, err := b.Call(ctx, pages[0].WSURL, "Runtime.evaluate", map[string]any{"expression": probe, "returnByValue": true})
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Result struct{ Value string } `json:"result"`
		}
		if err := json.Unmarshal(res, &v); err != nil {
			t.Fatal(err)
		}
		if state = v.Result.Value; state == "done,13,2" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("demo page state %q, want \"done,13,2\" (status, sample rows, summary rows)", state)
}

// listenBoth binds one port on 127.0.0.1 and ::1 for TCP (and UDP when
// udp is set), retrying when the second family has the port taken.
func listenBoth(t testing.TB, udp bool) ([]net.Listener, []net.PacketConn, int) {
	t.Helper()
	var lastErr error
	for range 20 {
		l4, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l4.Addr().(*net.TCPAddr).Port
		var closers []io.Closer
		closers = append(closers, l4)
		tcp := []net.Listener{l4}
		var pcs []net.PacketConn
		try := func() error {
			l6, err := net.Listen("tcp", fmt.Sprintf("[::1]:%d", port))
			if err != nil {
				return err
			}
			closers = append(closers, l6)
			tcp = append(tcp, l6)
			if !udp {
				return nil
			}
			for _, a := range []string{"127.0.0.1", "[::1]"} {
				pc, err := net.ListenPacket("udp", fmt.Sprintf("%s:%d", a, port))
				if err != nil {
					return err
				}
				closers = append(closers, pc)
				pcs = append(pcs, pc)
			}
			return nil
		}
		if lastErr = try(); lastErr == nil {
			t.Cleanup(func() {
				for _, c := range closers {
					c.Close()
				}
			})
			return tcp, pcs, port
		}
		for _, c := range closers {
			c.Close()
		}
	}
	t.Fatalf("no port free on both 127.0.0.1 and ::1: %v", lastErr)
	return nil, nil, 0
}

// BenchmarkE2EMainThread loads the page in a fresh Chromium (cold profile,
// cold connections) per iteration and reports the main-thread time the
// script measured for its run; the budget is 1 ms. It is wall-clock time
// inside the script's callbacks, so a loaded machine inflates it.
// Run: go test ./beacon -run '^$' -bench E2EMainThread -benchtime 5x
func BenchmarkE2EMainThread(b *testing.B) {
	f := newFixture(b, false)
	var runs []float64
	for b.Loop() {
		br := startBrowser(b, f, false)
		r := f.awaitReport(br, 30*time.Second)
		if err := br.Close(); err != nil {
			b.Fatal(err)
		}
		runs = append(runs, r.MainThreadMS)
	}
	slices.Sort(runs)
	b.ReportMetric(runs[len(runs)/2], "median-main-ms/run")
	b.ReportMetric(runs[0], "min-main-ms/run")
	b.Logf("main-thread ms per run, sorted: %v", runs)
}

// cdpSession is one DevTools session on a page: domains enabled in it stay
// enabled until it closes.
type cdpSession struct {
	conn *websocket.Conn
	id   int
}

func (c *cdpSession) call(method string, params any) (json.RawMessage, error) {
	c.id++
	c.conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	c.conn.SetWriteDeadline(time.Now().Add(15 * time.Second))
	if err := c.conn.WriteJSON(map[string]any{"id": c.id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := c.conn.ReadJSON(&msg); err != nil {
			return nil, fmt.Errorf("devtools %s: %w", method, err)
		}
		if msg.ID == c.id {
			if msg.Error != nil {
				return nil, fmt.Errorf("devtools %s: %s", method, msg.Error)
			}
			return msg.Result, nil
		}
	}
}

// blankSession starts Chromium on about:blank and opens a DevTools session
// to its page; closeAll closes the session, then the browser, so that a
// benchmark's loads never overlap.
func blankSession(b *testing.B, f *fixture) (br *chromium.Browser, s *cdpSession, closeAll func()) {
	br = startBrowserAt(b, f, "about:blank", true)
	closeBrowser := func() {
		if err := br.Close(); err != nil {
			b.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pages, err := br.Pages(ctx)
	if err != nil || len(pages) == 0 {
		closeBrowser()
		b.Fatalf("pages: %v %v", pages, err)
	}
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, pages[0].WSURL, nil)
	if err != nil {
		closeBrowser()
		b.Fatal(err)
	}
	return br, &cdpSession{conn: conn}, func() {
		conn.Close()
		closeBrowser()
	}
}

// mainThreadCPU loads url in a fresh Chromium with the DevTools
// Performance domain measuring thread CPU time (threadTicks, so time the
// thread spends preempted on a busy machine is not counted), waits for
// done, and returns the renderer main thread's script and task time, ms.
// The browser starts on about:blank, so that nothing but url runs (and
// warms connections) before or during the measurement, and it is closed
// before the next one starts. With earlier > 0, the measured load is a
// repeat visit: url was loaded (and done awaited) that many times before,
// unmeasured, so the script comes from the HTTP cache and, from the third
// load, with V8's compiled code.
func mainThreadCPU(b *testing.B, f *fixture, url string, earlier int, done func(*chromium.Browser)) (script, task float64) {
	br, s, closeAll := blankSession(b, f)
	defer closeAll()
	for range earlier {
		if _, err := s.call("Page.navigate", map[string]string{"url": url}); err != nil {
			b.Fatal(err)
		}
		done(br)
	}
	if earlier > 0 {
		if _, err := s.call("Page.navigate", map[string]string{"url": "about:blank"}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.call("Performance.enable", map[string]string{"timeDomain": "threadTicks"}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.call("Page.navigate", map[string]string{"url": url}); err != nil {
		b.Fatal(err)
	}
	done(br)
	res, err := s.call("Performance.getMetrics", nil)
	if err != nil {
		b.Fatal(err)
	}
	var m struct {
		Metrics []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(res, &m); err != nil {
		b.Fatal(err)
	}
	for _, x := range m.Metrics {
		switch x.Name {
		case "ScriptDuration":
			script = x.Value * 1000
		case "TaskDuration":
			task = x.Value * 1000
		}
	}
	return script, task
}

// BenchmarkE2EMainThreadCPU measures what the script costs the page's main
// thread as Chromium itself accounts it: thread CPU time of script and of
// all tasks for the page with the script (from navigation until its report
// arrives, plus 500 ms) minus the same page without it (held as long). The
// floor is a page whose script only waits for the same idle callback after
// load and makes the same fetches (serveFloor ?idle): what the design costs
// any implementation. The peers are the scripts a site would embed instead
// (web-vitals reporting its metrics, Plausible's tracker), loaded the same
// way on the same page and held as long. The targets, for the script
// configured by its URL (the recommended embedding), on the bare page and on
// the page with a script of its own: its script time at most half each
// peer's; its tasks beyond the idle floor's (the same fetches, from the
// same idle callback) no more than each peer's tasks in all; and, loaded
// with the CPU throttled 4× (Lighthouse's mobile preset) under a trace, no
// task that runs the script is a long task (over 50 ms). The benchmark
// fails naming each target missed. The ratio to the idle floor is
// reported, not held to a target: the floor uses none of the APIs the
// measurement needs (Resource Timing, the beacon), so what a site would
// embed instead is the comparison that decides.
//
// Also measured, on the bare page: the old floor, fetching right at load
// (requestIdleCallback alone costs a bare page about half a millisecond,
// so the script cannot come near it); the same script configured by data-*
// attributes (it reads its element, whose first use costs a bare page about
// 1 ms), a visit that is not sampled, and the third visit (the script from
// the HTTP cache with V8's code cache, sampled or not, against the floor's
// third visit); and the configured script on a page with a script of its
// own (serveSiteScript).
//
// Chromium's script time covers script evaluation and the callbacks it
// calls (events, timers, idle and observer callbacks), not promise
// reactions run at the end of a task: most of the fetches' cost, for the
// floor as for the script, shows only in the all-task figure.
// Run: go test ./beacon -run '^$' -bench E2EMainThreadCPU -benchtime 5x
func BenchmarkE2EMainThreadCPU(b *testing.B) {
	f := newFixture(b, false)
	f.bundlePeers(b)
	// Page loads by kind: raw thread CPU, ms. Each figure is a median less
	// the control's median: the controls' own spread (the site script's,
	// Chromium's) would otherwise enter every difference twice.
	type cpu struct{ script, task []float64 }
	type figures struct {
		beacon, control, floor, idleFloor, attributes, unsampled cpu
		peers                                                    [2]cpu // by peers' order
	}
	var bare, site, repeat figures    // repeat: the bare page's third visit
	var longest, shared [2]scriptTask // 4× throttled, bare and site: the script's longest task; the longest it ran in
	var most [2]float64               // the most JavaScript the script ran in one task, ms
	load := func(c *cpu, url string, done func(*chromium.Browser)) {
		s, t := mainThreadCPU(b, f, url, 0, done)
		c.script, c.task = append(c.script, s), append(c.task, t)
	}
	revisit := func(c *cpu, url string, done func(*chromium.Browser)) {
		s, t := mainThreadCPU(b, f, url, 2, done)
		c.script, c.task = append(c.script, s), append(c.task, t)
	}
	for b.Loop() {
		for _, v := range []struct {
			q   string
			fig *figures
		}{{"", &bare}, {"site", &site}} {
			page := func(k string) string {
				if v.q == "" {
					return f.page + "?" + k
				}
				return f.page + "?" + k + "&" + v.q
			}
			var held time.Duration
			report := func(br *chromium.Browser) {
				start := time.Now()
				f.awaitReport(br, 30*time.Second)
				time.Sleep(500 * time.Millisecond)
				held = time.Since(start)
			}
			hold := func(*chromium.Browser) { time.Sleep(held) }
			load(&v.fig.beacon, page("url"), report)
			k := 0
			if v.q != "" {
				k = 1
			}
			for _, t := range scriptTasks(b, traceLoad(b, f, page("url"), 4, report), "/h3rum.") {
				if t.owned() && t.dur > longest[k].dur {
					longest[k] = t
				}
				if t.dur > shared[k].dur {
					shared[k] = t
				}
				most[k] = max(most[k], t.own)
			}
			load(&v.fig.control, page("control"), hold)
			load(&v.fig.floor, page("floor"), hold)
			load(&v.fig.idleFloor, page("floor=idle"), hold)
			for i, p := range peers {
				load(&v.fig.peers[i], page("peer="+p), hold)
			}
			// A peer that did not run would look cheap: Plausible sends
			// its pageview within the hold. web-vitals sends its metrics
			// when the page is hidden, after the hold, so its sending is
			// not counted (which favours it): its reports are only logged.
			if n := f.peerBeacons[1].Swap(0); n == 0 {
				b.Fatalf("the peer %s sent no pageview within %v", peers[1], held)
			}
			b.Logf("page %q: web-vitals reports within the hold: %d", page(""), f.peerBeacons[0].Swap(0))
			if v.q == "" {
				load(&v.fig.attributes, page("attributes"), report)
				load(&v.fig.unsampled, page("url=unsampled"), hold)
				revisit(&repeat.beacon, page("url"), report)
				revisit(&repeat.control, page("control"), hold)
				revisit(&repeat.floor, page("floor"), hold)
				revisit(&repeat.unsampled, page("url=unsampled"), hold)
			}
		}
	}
	med := func(l []float64) float64 {
		l = slices.Sorted(slices.Values(l))
		return l[len(l)/2]
	}
	// extra is what a kind of page costs beyond the control: script, tasks.
	extra := func(fg *figures, c cpu) (float64, float64) {
		return med(c.script) - med(fg.control.script), med(c.task) - med(fg.control.task)
	}
	for _, v := range []struct {
		name, prefix string
		fig          *figures
	}{{"bare page", "", &bare}, {"page with a script of its own", "site-", &site}} {
		fg := v.fig
		script, task := extra(fg, fg.beacon)
		floor, floorTask := extra(fg, fg.floor)
		b.ReportMetric(script, v.prefix+"script-cpu-ms/run")
		b.ReportMetric(task, v.prefix+"task-cpu-ms/run")
		b.ReportMetric(floor, v.prefix+"floor-script-cpu-ms/run")
		b.ReportMetric(floorTask, v.prefix+"floor-task-cpu-ms/run")
		b.ReportMetric(script-floor, v.prefix+"added-script-cpu-ms/run")
		b.Logf("%s: thread CPU per load, ms: script %.2f, all tasks %.2f; control %.2f, %.2f; floor %.2f, %.2f",
			v.name, fg.beacon.script, fg.beacon.task, fg.control.script, fg.control.task, fg.floor.script, fg.floor.task)
		idle, idleTask := extra(fg, fg.idleFloor)
		b.ReportMetric(idle, v.prefix+"idle-floor-script-cpu-ms/run")
		b.ReportMetric(idleTask, v.prefix+"idle-floor-task-cpu-ms/run")
		b.Logf("%s: script CPU %.2f ms vs idle floor %.2f ms: %.2f×, %+.2f ms; all tasks %.2f vs %.2f ms; per load %.2f",
			v.name, script, idle, script/idle, script-idle, task, idleTask, fg.idleFloor.script)
		b.Logf("%s: old floor (fetches at load): script %.2f ms, all tasks %.2f ms; the script is %.1f× it, the idle floor %.1f× it",
			v.name, floor, floorTask, script/floor, idle/floor)
		for i, p := range peers {
			ps, pt := extra(fg, fg.peers[i])
			b.ReportMetric(ps, v.prefix+p+"-script-cpu-ms/run")
			b.ReportMetric(pt, v.prefix+p+"-task-cpu-ms/run")
			b.Logf("%s: peer %s: script %.2f ms, all tasks %.2f ms; the script is %.2f× its script time, %.2f× its tasks; per load %.2f",
				v.name, p, ps, pt, script/ps, task/pt, fg.peers[i].script)
		}
		if v.prefix != "" {
			// On the page with a script of its own the floor's script time
			// is within the noise of that script's own (medians near 0),
			// so a ratio to it says nothing there.
			continue
		}
		b.ReportMetric(script/floor, "script/floor")
		b.ReportMetric(task/floorTask, "task/floor")
		b.ReportMetric(script/idle, "script/idle-floor")
		b.ReportMetric(task/idleTask, "task/idle-floor")
		for i, p := range peers {
			ps, _ := extra(fg, fg.peers[i])
			b.ReportMetric(script/ps, "script/"+p)
		}
		attr, attrTask := extra(fg, fg.attributes)
		uns, unsTask := extra(fg, fg.unsampled)
		b.ReportMetric(attr, "attributes-script-cpu-ms/run")
		b.ReportMetric(attrTask, "attributes-task-cpu-ms/run")
		b.ReportMetric(uns, "unsampled-script-cpu-ms/visit")
		b.ReportMetric(unsTask, "unsampled-task-cpu-ms/visit")
		b.Logf("%s, configured by data-* attributes: script %.2f ms, all tasks %.2f ms; per load %.2f", v.name, attr, attrTask, fg.attributes.script)
		b.Logf("%s, a visit not sampled: script %.2f ms, all tasks %.2f ms; per load %.2f", v.name, uns, unsTask, fg.unsampled.script)
	}
	// A repeat visit: the script from the HTTP cache with V8's code cache,
	// as most of a site's visitors load it.
	rScript, rTask := extra(&repeat, repeat.beacon)
	rFloor, rFloorTask := extra(&repeat, repeat.floor)
	rUns, rUnsTask := extra(&repeat, repeat.unsampled)
	b.ReportMetric(rScript, "repeat-script-cpu-ms/run")
	b.ReportMetric(rTask, "repeat-task-cpu-ms/run")
	b.ReportMetric(rFloor, "repeat-floor-script-cpu-ms/run")
	b.ReportMetric(rUns, "repeat-unsampled-script-cpu-ms/visit")
	b.Logf("bare page, third visit: thread CPU per load, ms: script %.2f; control %.2f; floor %.2f; not sampled %.2f",
		repeat.beacon.script, repeat.control.script, repeat.floor.script, repeat.unsampled.script)
	b.Logf("bare page, third visit: script CPU %.2f ms vs floor %.2f ms: %+.2f ms; all tasks %.2f vs %.2f ms; not sampled: script %.2f ms, all tasks %.2f ms",
		rScript, rFloor, rScript-rFloor, rTask, rFloorTask, rUns, rUnsTask)
	var failed []string
	for k, v := range []struct {
		name string
		fig  *figures
	}{{"bare page", &bare}, {"page with a script of its own", &site}} {
		script, task := extra(v.fig, v.fig.beacon)
		_, idleTask := extra(v.fig, v.fig.idleFloor)
		for i, p := range peers {
			ps, pt := extra(v.fig, v.fig.peers[i])
			if script > 0.5*ps {
				failed = append(failed, fmt.Sprintf("%s: script time %.2f ms above half the peer %s's %.2f ms", v.name, script, p, ps))
			}
			if task-idleTask > pt {
				failed = append(failed, fmt.Sprintf("%s: tasks beyond the idle floor %.2f ms above the peer %s's tasks %.2f ms", v.name, task-idleTask, p, pt))
			}
		}
		prefix := []string{"", "site-"}[k]
		l, sh := longest[k], shared[k]
		b.ReportMetric(l.dur, prefix+"longest-script-task-4x-ms")
		b.Logf("%s, CPU throttled 4×: the script's longest task %.1f ms, its JavaScript %.1f ms (a long task is over %d ms); "+
			"the most it ran in one task %.1f ms; the longest task it ran in %.1f ms, its JavaScript %.1f ms there, other scripts' %.1f ms",
			v.name, l.dur, l.own, LongTaskMS, most[k], sh.dur, sh.own, sh.others)
		switch {
		case sh.dur == 0:
			failed = append(failed, fmt.Sprintf("%s: no task ran the script in the throttled trace", v.name))
		case l.dur > LongTaskMS:
			failed = append(failed, fmt.Sprintf("%s: a long task of %.1f ms was the script's with the CPU throttled 4×", v.name, l.dur))
		case most[k] > LongTaskMS:
			failed = append(failed, fmt.Sprintf("%s: the script ran %.1f ms in one task with the CPU throttled 4×", v.name, most[k]))
		}
	}
	if failed != nil {
		b.Fatalf("the script's main-thread targets missed: %s", strings.Join(failed, "; "))
	}
}
