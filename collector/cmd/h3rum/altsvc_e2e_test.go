package main

import (
	"context"
	"fmt"
	"html"
	"net/url"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/chromium"
)

// TestAltSvcEndToEnd loads a third-party page embedding the script in real
// headless Chromium and reads what ClickHouse stored in run_facts.alt_svc:
// in a fresh profile, the script from the H3 origin (whose TCP responses
// carry Alt-Svc) is the page's own lesson, AltSvcScript; from the H2
// origin (Alt-Svc: clear) nothing came before the run, AltSvcNone. The
// same browser visiting again, its first request to the H3 origin over h3
// from what it learnt on the first visit, is still AltSvcNone: the report
// can call that HTTP/3 known before the page.
func TestAltSvcEndToEnd(t *testing.T) {
	ts := startServe(t, "--sites", "alt-h3,alt-h2,alt-first,alt-again")
	d, ok := ts.srv.DevCert()
	if !ok {
		t.Fatal("no development certificate")
	}
	conn := ts.conn(t)
	// page is a third origin's page loading the script from the origin
	// from, which also takes the report.
	page := func(site, from string) string {
		q := url.Values{"h3": {ts.h3}, "h2": {ts.h2}, "site": {site}, "sample": {"1"}, "endpoint": {from}}
		return pageOrigin(t, fmt.Sprintf(`<!doctype html><title>shop</title><p>page
<script async src="%s/h3rum.js?%s"></script>`, from, html.EscapeString(q.Encode())))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	for _, tc := range []struct {
		site, from string
		want       beacon.AltSvc
	}{
		{"alt-h3", ts.h3, beacon.AltSvcScript},
		{"alt-h2", ts.h2, beacon.AltSvcNone},
	} {
		b, err := chromium.Start(ctx, page(tc.site, tc.from), chromium.Options{SPKI: []string{d.SPKI}})
		if err != nil {
			t.Fatal(err)
		}
		alt, first := storedAltSvc(t, ctx, conn, tc.site)
		b.Close()
		t.Logf("script from %s, fresh profile: alt_svc %d, first request to the H3 origin over %s", tc.from, alt, first)
		if alt != tc.want {
			t.Errorf("script from %s, fresh profile: alt_svc %d, want %d", tc.from, alt, tc.want)
		}
	}

	// A returning visitor: the same profile, a second page load.
	b, err := chromium.Start(ctx, page("alt-first", ts.h2), chromium.Options{SPKI: []string{d.SPKI}, DevTools: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	alt, first := storedAltSvc(t, ctx, conn, "alt-first")
	t.Logf("first visit: alt_svc %d, first request over %s", alt, first)
	pages, err := b.Pages(ctx)
	if err != nil || len(pages) == 0 {
		t.Fatalf("chromium's pages: %v, %v", pages, err)
	}
	if err := b.Navigate(ctx, pages[0], page("alt-again", ts.h2)); err != nil {
		t.Fatal(err)
	}
	alt, first = storedAltSvc(t, ctx, conn, "alt-again")
	t.Logf("second visit: alt_svc %d, first request over %s", alt, first)
	if first != "h3" {
		t.Errorf("second visit's first request to the H3 origin went over %s, want h3 (Alt-Svc learnt on the first)", first)
	}
	if alt != beacon.AltSvcNone {
		t.Errorf("second visit: alt_svc %d, want %d (nothing from this page before its first request)", alt, beacon.AltSvcNone)
	}
}

// storedAltSvc waits (up to 90 s) for site's run in run_facts and returns
// its alt_svc and the protocol its first request (seq 0, a warm-up to the
// H3 origin) went over.
func storedAltSvc(t *testing.T, ctx context.Context, conn driver.Conn, site string) (beacon.AltSvc, string) {
	t.Helper()
	var alt uint8
	var first string
	waitFor(t, 90*time.Second, "site "+site+"'s run in run_facts", func() (bool, error) {
		var n uint64
		err := conn.QueryRow(ctx, `SELECT count(), any(alt_svc) FROM run_facts WHERE site = ?`, site).Scan(&n, &alt)
		if err != nil || n == 0 {
			return false, err
		}
		return true, conn.QueryRow(ctx, `SELECT toString(got) FROM samples WHERE site = ? AND seq = 0`, site).Scan(&first)
	})
	return beacon.AltSvc(alt), first
}
