package main

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/beacon/firefox"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
)

// pageOrigin serves html on a third, TCP-only origin (plain HTTP on
// localhost, a secure context), the way a site embeds the script.
func pageOrigin(t *testing.T, html string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, html)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return fmt.Sprintf("http://localhost:%d/", ln.Addr().(*net.TCPAddr).Port)
}

// TestBrowserEndToEnd runs the embedded script in real headless Chromium
// against a collector started in-process: the page comes from a third
// origin, the probes go over real HTTP/2 and HTTP/3, and the report ends up
// as rows in the real ClickHouse with the protocols each request used.
func TestBrowserEndToEnd(t *testing.T) {
	ts := startServe(t, "--sites", "e2e,e2e-again")
	// A real browser's run passes every like-for-like check — both batches
	// complete on the connections the warm-ups opened, as the server's
	// connection ids show — but for being headless: exclusions is the bot
	// bit alone. On a loaded machine Chromium may still be finishing its
	// QUIC handshake in the background when the second warm-up goes out
	// (it then takes TCP), and the batch lands on a connection no warm-up
	// saw: the run is rightly excluded as cold. That is the measurement
	// working, not failing, so a cold first run gets one more try.
	for i, site := range []string{"e2e", "e2e-again"} {
		excl, warmups := browserRun(t, ts, site)
		if excl == store.ExcludeBot {
			return
		}
		if excl != store.ExcludeBot|store.ExcludeCold || i == 1 {
			t.Fatalf("the real browser's run has exclusions %08b, want the bot bit alone (warm-ups: %v)", excl, warmups)
		}
		t.Logf("run %d was cold (warm-ups: %v); once more", i+1, warmups)
	}
}

// browserRun loads a page embedding the script for site in a fresh
// headless Chromium, checks every stored sample and that the report with
// bots shows the run the moment it is stored, and returns the run's
// exclusions and its warm-ups' protocols (origin:browser/server).
func browserRun(t *testing.T, ts *testServe, site string) (store.Exclusions, []string) {
	t.Helper()
	d, ok := ts.srv.DevCert()
	if !ok {
		t.Fatal("no development certificate")
	}
	// Configured by its URL, as the README recommends.
	q := url.Values{"h3": {ts.h3}, "h2": {ts.h2}, "site": {site}, "sample": {"1"}, "endpoint": {ts.h3}}
	page := pageOrigin(t, fmt.Sprintf(`<!doctype html><title>shop</title><p>page
<script async src="%s/h3rum.js?%s"></script>`, ts.h3, html.EscapeString(q.Encode())))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := chromium.Start(ctx, page, chromium.Options{SPKI: []string{d.SPKI}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	conn := ts.conn(t)
	rows := storedSamples(t, ctx, conn, site)
	if len(rows) != 13 {
		t.Fatalf("got %d samples, want 13 (2+1 warm-up, 5+5 parallel): %+v\nchromium: %s", len(rows), rows, b.Output())
	}
	var warmups []string
	for i, r := range rows {
		if r.errCode != "" {
			t.Errorf("sample %d failed: %s", i, r.errCode)
		}
		if r.srvPresent != 1 {
			t.Errorf("sample %d: Server-Timing not visible to the page", i)
		}
		if r.bot != 1 {
			t.Errorf("sample %d: headless Chromium not flagged as a bot", i)
		}
		if r.duration <= 0 {
			t.Errorf("sample %d: duration %v", i, r.duration)
		}
		if r.phase != "parallel" {
			warmups = append(warmups, r.want+":"+r.got+"/"+r.srvProto)
		}
	}
	checkParallel(t, rows, "Chromium")

	var excl uint8
	if err := conn.QueryRow(ctx, "SELECT any(exclusions) FROM samples WHERE site = ?", site).Scan(&excl); err != nil {
		t.Fatal(err)
	}
	// The script read each connection's age from Server-Timing.
	var minAge float32
	if err := conn.QueryRow(ctx, "SELECT min(srv_conn_age_ms) FROM samples WHERE site = ? AND phase = 'parallel'", site).Scan(&minAge); err != nil || minAge <= 0 {
		t.Errorf("parallel samples' connection age: min %v ms (%v), want every one reported and positive", minAge, err)
	}
	if store.Exclusions(excl) == store.ExcludeBot {
		rep, err := queries.Run(ctx, conn, model.Options{Site: site, By: "none", IncludeBots: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Groups) != 1 || rep.Groups[0].H2 == nil || rep.Groups[0].H3 == nil ||
			rep.Groups[0].H2.Runs != 1 || rep.Groups[0].H3.Samples != 5 {
			t.Errorf("default report with bots right after the run: %s %+v", rep.Source, rep.Groups)
		}
	}
	return store.Exclusions(excl), warmups
}

// TestFirefoxEndToEnd is TestBrowserEndToEnd with the second engine: the
// script in headless Firefox ESR, which trusts the collector's local
// development CA (a user-imported root, so the profile keeps HTTP/3 on —
// Firefox turns it off by default then), over real HTTP/2 and HTTP/3.
func TestFirefoxEndToEnd(t *testing.T) {
	if _, err := firefox.Find(""); err != nil {
		t.Skipf("Firefox is not installed (make test installs it): %v", err)
	}
	ts := startServe(t, "--sites", "ff")
	d, ok := ts.srv.DevCert()
	if !ok {
		t.Fatal("no development certificate")
	}
	page := pageOrigin(t, fmt.Sprintf(`<!doctype html><title>shop</title><p>page
<script async src="%s/h3rum.js" data-h3="%s" data-h2="%s" data-site="ff" data-sample="1"></script>`, ts.h3, ts.h3, ts.h2))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := firefox.Start(ctx, page, firefox.Options{CAFile: d.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	conn := ts.conn(t)
	rows := storedSamples(t, ctx, conn, "ff")
	if len(rows) != 13 {
		t.Fatalf("got %d samples, want 13: %+v\nfirefox: %s", len(rows), rows, b.Output())
	}
	for i, r := range rows {
		if r.errCode != "" || r.srvPresent != 1 || r.browser != "Firefox" {
			t.Errorf("sample %d: error %q, Server-Timing visible %d, browser %q", i, r.errCode, r.srvPresent, r.browser)
		}
	}
	checkParallel(t, rows, "Firefox")
}

// checkParallel checks that both parallel batches used the intended
// protocol, as both the browser and the server saw it, five requests each.
func checkParallel(t *testing.T, rows []sample, engine string) {
	t.Helper()
	parallel := map[string]int{}
	for i, r := range rows {
		if r.phase != "parallel" {
			continue
		}
		if r.got != r.want || r.srvProto != r.want {
			t.Errorf("parallel sample %d meant for %s: %s saw %s, server saw %s", i, r.want, engine, r.got, r.srvProto)
		}
		parallel[r.want]++
	}
	if parallel["h2"] != 5 || parallel["h3"] != 5 {
		t.Errorf("parallel samples by origin = %v, want 5 h2 and 5 h3", parallel)
	}
}

// sample is what the end-to-end tests check of a stored sample.
type sample struct {
	phase, want, got, srvProto, errCode, browser, country string
	srvPresent, bot                                       uint8
	duration                                              float32
}

// storedSamples waits (up to 90 s) until site's run has its 13 samples in
// ClickHouse and returns them in seq order.
func storedSamples(t *testing.T, ctx context.Context, conn driver.Conn, site string) []sample {
	t.Helper()
	var rows []sample
	waitFor(t, 90*time.Second, "the run's 13 samples and its per-run rows in ClickHouse", func() (bool, error) {
		q, err := conn.Query(ctx, `SELECT toString(phase), toString(want), toString(got), toString(srv_proto),
			error, browser, country, srv_present, bot, duration_ms FROM samples WHERE site = ? ORDER BY seq`, site)
		if err != nil {
			return false, err
		}
		defer q.Close()
		rows = rows[:0]
		for q.Next() {
			var r sample
			if err := q.Scan(&r.phase, &r.want, &r.got, &r.srvProto, &r.errCode, &r.browser, &r.country, &r.srvPresent, &r.bot, &r.duration); err != nil {
				return false, err
			}
			rows = append(rows, r)
		}
		if len(rows) < 13 || q.Err() != nil {
			return false, q.Err()
		}
		// The insert is done once its views have written too: a query
		// may see the samples a moment before the per-run tables, which
		// the reports read.
		var perRun uint64
		err = conn.QueryRow(ctx, "SELECT (SELECT count() FROM runs WHERE site = ?) + (SELECT count() FROM run_facts WHERE site = ?)", site, site).Scan(&perRun)
		return perRun >= 2, err
	})
	return rows
}
