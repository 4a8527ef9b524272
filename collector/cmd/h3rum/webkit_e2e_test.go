package main

import (
	"context"
	"fmt"
	"html"
	"maps"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/beacon/firefox"
	"github.com/h3rum/h3rum/beacon/webkit"
	"github.com/h3rum/h3rum/ingest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
)

// TestWebKitEndToEnd is TestBrowserEndToEnd with the third engine: the
// script in WebKitGTK (webkit2gtk-driver's MiniBrowser, the engine of
// Safari), which accepts the collector's development certificate pinned
// for localhost. Its network stack, libsoup, speaks HTTP/2 but not HTTP/3:
// the H3 origin's Alt-Svc is never taken up, so the H3 batch is the
// fallback outcome, "wanted h3, got h2", and the run is excluded from the
// headline as one, under the browser family "WebKit", not "Safari". Then
// one run each of Chromium and Firefox, where installed, and the report by
// browser must show the three engines side by side.
func TestWebKitEndToEnd(t *testing.T) {
	if _, _, err := webkit.Find(webkit.Options{}); err != nil {
		t.Skipf("WebKitGTK is not installed (make deps installs it): %v", err)
	}
	const site = "wk"
	ts := startServe(t, "--sites", site+",wk-chromium,wk-firefox")
	d, ok := ts.srv.DevCert()
	if !ok {
		t.Fatal("no development certificate")
	}
	page := enginePage(t, ts, site)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	b, err := webkit.Start(ctx, page, webkit.Options{Certificates: []webkit.Certificate{{Host: "localhost", File: d.CertFile}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	loaded := time.Since(start)

	conn := ts.conn(t)
	rows := storedSamples(t, ctx, conn, site)
	t.Logf("WebKit started and loaded the page in %v, its run stored %v later", loaded.Round(time.Millisecond), (time.Since(start) - loaded).Round(time.Millisecond))
	if len(rows) != 13 {
		t.Fatalf("got %d samples, want 13 (2+1 warm-up, 5+5 parallel): %+v\nwebkit: %s", len(rows), rows, b.Output())
	}
	parallel := map[string]int{}
	for i, r := range rows {
		// WebKit's clock has whole milliseconds: a warm request on loopback
		// may last 0 ms, so only a missing entry (-1) is wrong.
		if r.errCode != "" || r.browser != ingest.BrowserWebKit || r.bot != 1 || r.duration < 0 {
			t.Errorf("sample %d: error %q, browser %q (want WebKit), bot %d, duration %v", i, r.errCode, r.browser, r.bot, r.duration)
		}
		// WebKit shows Server-Timing (and transferSize) to same-origin
		// requests only, whatever Timing-Allow-Origin says (WebKit/WebKit
		// #4579, 2022): the probes are cross-origin, so no sample has it.
		if r.srvPresent != 0 || r.srvProto != "unknown" {
			t.Errorf("sample %d to %s: Server-Timing visible %d, server protocol %q: WebKit exposed cross-origin Server-Timing; update the WebKit notes",
				i, r.want, r.srvPresent, r.srvProto)
		}
		// libsoup has no HTTP/3: every request, to either origin, is h2.
		if r.got != "h2" {
			t.Errorf("sample %d to %s: WebKit reported %q, want h2", i, r.want, r.got)
		}
		if r.phase == "parallel" {
			parallel[r.want]++
		}
	}
	if parallel["h2"] != 5 || parallel["h3"] != 5 {
		t.Errorf("parallel samples by origin = %v, want 5 h2 and 5 h3", parallel)
	}

	// Classified as stored: the H3 origin's requests are the fallback.
	outcomes := map[string]int{}
	q2, err := conn.Query(ctx, "SELECT toString(want), toString(outcome), count() FROM samples WHERE site = ? GROUP BY want, outcome", site)
	if err != nil {
		t.Fatal(err)
	}
	for q2.Next() {
		var want, outcome string
		var n uint64
		if err := q2.Scan(&want, &outcome, &n); err != nil {
			t.Fatal(err)
		}
		outcomes[want+"→"+outcome] = int(n)
	}
	q2.Close()
	want := map[string]int{"h3→" + store.OutcomeWantedH3GotH2.String(): 7, "h2→" + store.OutcomeH2.String(): 6}
	if fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Errorf("stored outcomes %v, want %v", outcomes, want)
	}
	var excl uint8
	if err := conn.QueryRow(ctx, "SELECT any(exclusions) FROM samples WHERE site = ?", site).Scan(&excl); err != nil {
		t.Fatal(err)
	}
	if e := store.Exclusions(excl); e != store.ExcludeBot|store.ExcludeFallback {
		t.Errorf("the WebKit run has exclusions %08b, want fallback and bot alone (%08b)", e, store.ExcludeBot|store.ExcludeFallback)
	}

	// The report by browser shows the run under WebKit: the H2 batch as
	// h2, the H3 batch as the fallback, no HTTP/3 at all.
	// Its samples may be visible a moment before the report counts the run.
	var rep *model.Report
	waitFor(t, 30*time.Second, "the WebKit run in the report by browser", func() (bool, error) {
		var err error
		rep, err = queries.Run(ctx, conn, model.Options{Site: site, By: "browser", IncludeBots: true, IncludeExcluded: true, Source: model.SourceRaw})
		return err == nil && len(rep.Groups) > 0 && rep.Groups[0].Runs > 0, err
	})
	if len(rep.Groups) != 1 {
		t.Fatalf("report by browser has %d groups, want WebKit alone: %+v", len(rep.Groups), rep.Groups)
	}
	g := rep.Groups[0]
	if g.Group != ingest.BrowserWebKit || g.Runs != 1 || g.H3 != nil || g.H2 == nil || g.H2.Samples != 5 ||
		g.WantedH3GotH2 == nil || g.WantedH3GotH2.Samples != 5 {
		t.Errorf("report by browser: group %q, %d runs, h2 %+v, h3 %+v, wanted h3 got h2 %+v; want WebKit, 1 run, 5 h2, no h3, 5 fallback",
			g.Group, g.Runs, g.H2, g.H3, g.WantedH3GotH2)
	}
	if a := g.Availability; a == nil || a.GotH3 != 0 || a.WantedH3 == 0 || a.Share != 0 {
		t.Errorf("HTTP/3 availability in WebKit: %+v, want none of what wanted it", a)
	}
	b.Close()

	// The three engines side by side, as a site owner reads them: one run
	// each of Chromium and Firefox beside WebKit's, in one report by
	// browser. Their protocols are checked by their own tests; here, that
	// each is its own group and only WebKit's H3 batch fell back.
	if _, err := chromium.Find(""); err != nil {
		t.Logf("REPORT WITH THREE ENGINES NOT CHECKED: %v", err)
		return
	}
	if _, err := firefox.Find(""); err != nil {
		t.Logf("REPORT WITH THREE ENGINES NOT CHECKED: %v", err)
		return
	}
	for _, e := range []struct {
		site  string
		start func(page string) (interface{ Close() error }, error)
	}{
		{"wk-chromium", func(page string) (interface{ Close() error }, error) {
			return chromium.Start(ctx, page, chromium.Options{SPKI: []string{d.SPKI}})
		}},
		{"wk-firefox", func(page string) (interface{ Close() error }, error) {
			return firefox.Start(ctx, page, firefox.Options{CAFile: d.CAFile})
		}},
	} {
		b, err := e.start(enginePage(t, ts, e.site))
		if err != nil {
			t.Fatal(err)
		}
		rows := storedSamples(t, ctx, conn, e.site)
		b.Close()
		if len(rows) != 13 {
			t.Fatalf("%s: got %d samples, want 13", e.site, len(rows))
		}
	}
	groups := map[string]*model.Group{}
	waitFor(t, 30*time.Second, "three runs in the report by browser", func() (bool, error) {
		rep, err := queries.Run(ctx, conn, model.Options{By: "browser", IncludeBots: true, IncludeExcluded: true, Source: model.SourceRaw})
		if err != nil {
			return false, err
		}
		runs := 0
		clear(groups)
		for i := range rep.Groups {
			groups[rep.Groups[i].Group] = &rep.Groups[i]
			runs += rep.Groups[i].Runs
		}
		return runs >= 3, nil
	})
	for _, b := range []string{ingest.BrowserChromium, ingest.BrowserFirefox, ingest.BrowserWebKit} {
		g := groups[b]
		if g == nil || g.Runs != 1 {
			t.Errorf("report by browser: %s group %+v, want one run (groups: %v)", b, g, slices.Collect(maps.Keys(groups)))
			continue
		}
		gotH3 := g.H3 != nil && g.H3.Samples == 5
		if fellBack := g.WantedH3GotH2 != nil && g.WantedH3GotH2.Samples == 5; gotH3 == (b == ingest.BrowserWebKit) || fellBack != (b == ingest.BrowserWebKit) {
			t.Errorf("report by browser, %s: h3 %+v, wanted h3 got h2 %+v; want HTTP/3 in Chromium and Firefox, the fallback in WebKit alone", b, g.H3, g.WantedH3GotH2)
		}
	}
	if len(groups) != 3 {
		t.Errorf("report by browser has groups %v, want Chromium, Firefox and WebKit", slices.Collect(maps.Keys(groups)))
	}
}

// enginePage serves a page embedding the script for site, configured by
// its URL as the README recommends.
func enginePage(t *testing.T, ts *testServe, site string) string {
	t.Helper()
	q := url.Values{"h3": {ts.h3}, "h2": {ts.h2}, "site": {site}, "sample": {"1"}, "endpoint": {ts.h3}}
	return pageOrigin(t, fmt.Sprintf(`<!doctype html><title>shop</title><p>page
<script async src="%s/h3rum.js?%s"></script>`, ts.h3, html.EscapeString(q.Encode())))
}
