package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/collector/internal/cli"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
)

// TestNELChromium makes real headless Chromium emit Network Error Logging
// reports about the collector's origins and finds them in ClickHouse. A
// policy is per origin, so the page first fetches /probe from each origin
// (the first response on a connection carries NEL, Report-To and
// Reporting-Endpoints), then a path each origin answers 404 — an
// http.error failure. Chromium batches reports and uploads them a minute
// later by default; --short-reporting-delay (a Chromium switch) cuts that
// to 100 ms, and the test still waits boundedly (60 s) for the rows. The
// uploads go, as configured by default, to the other origin's /reports: a
// cross-origin upload with its CORS preflight, over the development
// certificate Chromium trusts by its SPKI.
func TestNELChromium(t *testing.T) {
	ts := startServe(t, "--nel-success-fraction", "1", "--nel-failure-fraction", "1")
	d, ok := ts.srv.DevCert()
	if !ok {
		t.Fatal("no development certificate")
	}
	page := pageOrigin(t, fmt.Sprintf(`<!doctype html><title>nel</title><p>nel
<script>
(async () => {
  const get = (u) => fetch(u, {mode: 'no-cors', cache: 'no-store'}).catch(() => {});
  await get(%[1]q + '/probe');
  await get(%[2]q + '/probe');
  await get(%[1]q + '/nel-missing?secret=1');
  await get(%[2]q + '/nel-missing?secret=2');
})();
</script>`, ts.h3, ts.h2))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	b, err := chromium.Start(ctx, page, chromium.Options{SPKI: []string{d.SPKI}}, "--short-reporting-delay")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	// Uploads the collector refused or ignored are only counted: show
	// the counts when the test fails.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		_, _, body := get(t, http.DefaultClient, "http://"+ts.srv.MetricsAddrPort().String()+"/metrics")
		for line := range strings.Lines(body) {
			if !strings.HasPrefix(line, "#") && strings.Contains(line, "_nel_") {
				t.Log(strings.TrimSpace(line))
			}
		}
	})
	conn := ts.conn(t)
	type row struct {
		origin, typ, phase, proto, method, serverIP, browser string
		status                                               uint16
		probe, bot                                           uint8
		fraction                                             float64
	}
	var errs []row
	waitFor(t, 60*time.Second, "Chromium's http.error reports about both origins in ClickHouse", func() (bool, error) {
		q, err := conn.Query(ctx, `SELECT origin, type, toString(phase), toString(protocol), method, server_ip, browser,
			status_code, probe, bot, sampling_fraction FROM nel_reports WHERE type = 'http.error' ORDER BY origin`)
		if err != nil {
			return false, err
		}
		defer q.Close()
		errs = errs[:0]
		for q.Next() {
			var r row
			if err := q.Scan(&r.origin, &r.typ, &r.phase, &r.proto, &r.method, &r.serverIP, &r.browser, &r.status, &r.probe, &r.bot, &r.fraction); err != nil {
				return false, err
			}
			errs = append(errs, r)
		}
		seen := map[string]bool{}
		for _, r := range errs {
			seen[r.origin] = true
		}
		return seen[ts.h3] && seen[ts.h2], q.Err()
	})
	t.Logf("Chromium's NEL reports were in ClickHouse %v after it started (with --short-reporting-delay)", time.Since(start).Round(100*time.Millisecond))
	for _, r := range errs {
		if r.status != 404 || r.phase != "application" || r.probe != 0 || r.method != "GET" || r.fraction != 1 ||
			(r.proto != "h2" && r.proto != "h3") || r.serverIP == "" || r.bot != 1 || r.browser == "" {
			t.Errorf("stored http.error report %+v", r)
		}
		if strings.Contains(r.origin, "/nel-missing") || strings.Contains(r.origin, "secret") {
			t.Errorf("stored origin %q keeps the path or query", r.origin)
		}
	}
	// The successful probe requests were reported too (success fraction 1).
	// Chromium uploads each origin's reports to the other origin's
	// endpoint, in batches of its own timing: they need not arrive with
	// the http.error reports that ended the wait above.
	var okOrigins []string
	waitFor(t, 30*time.Second, "Chromium's reports of the successful /probe requests to both origins in ClickHouse", func() (bool, error) {
		q, err := conn.Query(ctx, "SELECT DISTINCT origin FROM nel_reports WHERE type = 'ok' AND probe = 1 ORDER BY origin")
		if err != nil {
			return false, err
		}
		defer q.Close()
		okOrigins = okOrigins[:0]
		for q.Next() {
			var o string
			if err := q.Scan(&o); err != nil {
				return false, err
			}
			okOrigins = append(okOrigins, o)
		}
		return slices.Contains(okOrigins, ts.h3) && slices.Contains(okOrigins, ts.h2), q.Err()
	})

	rep, err := queries.Run(ctx, conn, model.Options{By: "continent", IncludeBots: true, Replicates: -1})
	if err != nil {
		t.Fatal(err)
	}
	var estimated float64
	for _, f := range rep.NEL.Failures {
		if f.Type == "http.error" {
			estimated += f.Estimated
		}
	}
	if estimated < 2 {
		t.Errorf("report's NEL failures %+v, want the http.error reports about both origins", rep.NEL.Failures)
	}
}

// TestNELFlags checks the NEL flags' validation and where each role sends
// reports.
func TestNELFlags(t *testing.T) {
	parse := func(args ...string) (*serveFlags, error) {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		var c serveFlags
		c.register(fs)
		if err := cli.Parse(fs, append([]string{"--data-dir", t.TempDir()}, args...), io.Discard); err != nil {
			return nil, err
		}
		return &c, c.validate()
	}
	for _, bad := range [][]string{{"--nel-success-fraction", "1.5"}, {"--nel-failure-fraction", "-1"}, {"--nel-max-age", "-5"},
		{"--nel-endpoint", "http://ingest.example/reports"}} {
		if _, err := parse(bad...); err == nil || !strings.Contains(err.Error(), "nel") {
			t.Errorf("%v accepted (%v)", bad, err)
		}
	}
	for _, tc := range []struct {
		args     []string
		maxAge   time.Duration
		endpoint string
	}{
		{nil, 24 * time.Hour, ""}, // each origin reports to the other
		{[]string{"--nel-max-age", "0"}, 0, ""},
		{[]string{"--role", "probe", "--ingest-url", "https://ingest.example"}, 24 * time.Hour, "https://ingest.example/reports"},
		{[]string{"--role", "probe"}, 0, ""}, // nowhere to send reports
		{[]string{"--role", "ingest"}, 0, ""},
		{[]string{"--nel-endpoint", "https://nel.example/r"}, 24 * time.Hour, "https://nel.example/r"},
	} {
		c, err := parse(tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if n := c.Origin.NEL; n.MaxAge != tc.maxAge || n.Endpoint != tc.endpoint || (n.MaxAge > 0 && (n.SuccessFraction != 0.01 || n.FailureFraction != 1)) {
			t.Errorf("%v: NEL %+v, want max age %v, endpoint %q", tc.args, n, tc.maxAge, tc.endpoint)
		}
	}
	c, _ := parse("--h3-host", "h3.example", "--h2-host", "h2.example")
	if got := c.Origin.NELHosts(c.Ingest.NELHosts); len(got) != 2 || got[0] != "h3.example" || got[1] != "h2.example" {
		t.Errorf("NEL hosts %v, want the two origins' hosts", got)
	}
}
