//go:build unix

package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/synth"
)

// artifactDir is where tests leave files for humans: $H3RUM_ARTIFACTS or
// <tmp>/h3rum-artifacts.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("H3RUM_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "h3rum-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("creating artefact directory: %v", err)
	}
	return dir
}

var cellRE = regexp.MustCompile(`data-group="([^"]*)" data-proto="([^"]*)" data-pct="([^"]*)" data-value="([^"]*)"`)

// expectedCells lists what the dashboard's data cells must show, from the
// JSON API's report.
func expectedCells(r *model.Report) map[string]float64 {
	m := map[string]float64{}
	for _, g := range r.Groups {
		for _, o := range []struct {
			k string
			s *model.Stats
		}{{model.OutcomeH2, g.H2}, {model.OutcomeH3, g.H3}, {model.OutcomeWantedH3GotH2, g.WantedH3GotH2}, {model.OutcomeOther, g.Other}} {
			if o.s == nil {
				continue
			}
			m[g.Group+"|"+o.k+"|runs"] = float64(o.s.Runs)
			m[g.Group+"|"+o.k+"|samples"] = float64(o.s.Samples)
			for _, p := range o.s.Percentiles {
				m[fmt.Sprintf("%s|%s|%g", g.Group, o.k, p.P)] = p.MS
			}
		}
		for _, d := range g.Diff {
			m[fmt.Sprintf("%s|diff_ms|%g", g.Group, d.P)] = d.MS
			m[fmt.Sprintf("%s|diff_pct|%g", g.Group, d.P)] = d.Pct
		}
		if p := g.Paired; p != nil {
			m[g.Group+"|paired|runs"] = float64(p.Runs)
			m[g.Group+"|paired|median"] = p.MedianMS
			m[g.Group+"|paired|p90"] = p.P90MS
			m[g.Group+"|paired|won"] = p.H3WonShare
		}
		if a := g.Availability; a != nil {
			m[g.Group+"|availability|share"] = a.Share
		}
	}
	return m
}

func TestDashboardInChromium(t *testing.T) {
	if _, err := chromium.Find(""); err != nil {
		t.Fatalf("the dashboard test needs headless Chromium: %v", err)
	}
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 9, Runs: 2000}))
	hub := &Hub{}
	srv := serve(t, &Handler{Conn: conn, Token: testToken, Hub: hub})
	window := "since=2025-01-01T00:00:00Z&until=2025-01-03T00:00:00Z"

	// The JSON API's numbers.
	req, _ := http.NewRequest("GET", srv.URL+"/api/report?"+window, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rep model.Report
	err = json.NewDecoder(res.Body).Decode(&rep)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("API: %d %v", res.StatusCode, err)
	}
	want := expectedCells(&rep)

	// Feed the live WebSocket while the page is open.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				hub.Publish(testRun())
			}
		}
	}()

	// First load with ?token=: the handler sets the cookie and redirects.
	url := srv.URL + "/dashboard?" + window + "&token=" + testToken
	dom, err := chromium.DumpDOM(ctx, url, chromium.Options{VirtualTimeBudget: 8 * time.Second})
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	if !strings.Contains(dom, `id="report"`) || !strings.Contains(dom, "<svg") {
		t.Fatalf("dashboard did not render: %s", trim(dom))
	}
	// The page streams the estimate first; dashboard.js swapped in the
	// complete report, leaving no trace of the estimate.
	for _, gone := range []string{`id="estimate"`, `id="complete"`, `id="computing"`} {
		if strings.Contains(dom, gone) {
			t.Errorf("after load the page still has %s", gone)
		}
	}
	got := map[string]float64{}
	for _, m := range cellRE.FindAllStringSubmatch(dom, -1) {
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			t.Errorf("cell %v: %v", m[1:], err)
			continue
		}
		got[m[1]+"|"+m[2]+"|"+m[3]] = v
	}
	if len(got) != len(want) || len(want) < 50 {
		t.Errorf("dashboard has %d data cells, the API %d", len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || math.Abs(g-w) > 1e-9 {
			t.Errorf("cell %s: dashboard %v (present %v), API %v", k, g, ok, w)
		}
	}
	// The verdicts open the page, as the API says them.
	if len(rep.Verdicts) == 0 || strings.Index(dom, `id="verdicts"`) > strings.Index(dom, `id="report"`) {
		t.Errorf("%d verdicts; the page's verdicts at %d, its table at %d", len(rep.Verdicts), strings.Index(dom, `id="verdicts"`), strings.Index(dom, `id="report"`))
	}
	text := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	for _, v := range rep.Verdicts {
		li := fmt.Sprintf(`data-group="%s" data-verdict="%s">%s</li>`, v.Group, v.Verdict, text.Replace(v.Text))
		if !strings.Contains(dom, li) {
			t.Errorf("the page lacks the verdict %s", li)
		}
	}
	for _, id := range []string{"chart-timeline", "dist-curves", "dist-paired", "dash-data"} {
		if !strings.Contains(dom, `id="`+id+`"`) {
			t.Errorf("chart %s missing", id)
		}
	}
	if n := strings.Count(dom, "<rect"); n < 50 {
		t.Errorf("only %d bars drawn", n)
	}
	// dashboard.js ran under the CSP and received live runs. Watched in
	// real time through DevTools: under a virtual-time budget the clock
	// jumps to its end as soon as the page is idle, whether or not a live
	// message has arrived.
	b, err := chromium.Start(ctx, url, chromium.Options{DevTools: true})
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	defer b.Close()
	const probe = `document.querySelector("#live tbody tr") ? document.getElementById("live-status").textContent : ""`
	var status string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		pages, err := b.Pages(ctx)
		if err != nil || len(pages) == 0 {
			continue
		}
		res, err := b.Call(ctx, pages[0].WSURL, "Runtime.evaluate", map[string]any{"expression": probe, "returnByValue": true})
		if err != nil {
			continue // the page may be navigating (the ?token= redirect)
		}
		var v struct {
			Result struct{ Value string } `json:"result"`
		}
		if json.Unmarshal(res, &v) == nil && strings.HasPrefix(v.Result.Value, "live: connected") {
			status = v.Result.Value
			break
		}
	}
	if status == "" {
		t.Errorf("live feed did not add a row to the page within 30 s")
	}

	shot := filepath.Join(artifactDir(t), "dashboard.png")
	if err := chromium.Screenshot(ctx, url, shot, chromium.Options{WindowSize: "1280,2400"}); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	t.Logf("dashboard screenshot: %s", shot)
}

// The dashboard streams: the estimate (no intervals yet, a notice) comes
// first, then the complete report in a template, in the same response.
func TestDashboardStreamsEstimateThenComplete(t *testing.T) {
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 3, Runs: 400}))
	h := &Handler{Conn: conn, AllowOpen: true}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://localhost/dashboard?since="+testSince.Format(time.RFC3339)+"&until="+testUntil.Format(time.RFC3339), nil)
	req.RemoteAddr = "127.0.0.1:5000"
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != 200 || !rec.Flushed {
		t.Fatalf("status %d, flushed %v", rec.Code, rec.Flushed)
	}
	est, tmpl := strings.Index(body, `<div id="estimate">`), strings.Index(body, `<template id="complete">`)
	if est < 0 || tmpl < est || !strings.Contains(body[est:tmpl], `id="computing"`) || strings.Contains(body[tmpl:], `id="computing"`) {
		t.Fatalf("want the estimate with its notice, then the complete report: estimate at %d, template at %d", est, tmpl)
	}
	// Intervals appear only in the complete part.
	if strings.Contains(body[est:tmpl], "95% CI [") || !strings.Contains(body[tmpl:], "95% CI [") {
		t.Errorf("intervals: estimate has them %v, complete has them %v", strings.Contains(body[est:tmpl], "95% CI ["), strings.Contains(body[tmpl:], "95% CI ["))
	}
	// Estimates with too few runs for an interval are marked, not bracketed.
	if !strings.Contains(body[tmpl:], `class="n insufficient"`) || !strings.Contains(body[tmpl:], "†<br><small>—</small>") {
		t.Errorf("complete part does not mark estimates with too few runs")
	}
	if !strings.HasSuffix(strings.TrimSpace(body), "</html>") {
		t.Errorf("page not closed: …%s", body[max(0, len(body)-80):])
	}
}

// TestDashboardHeadFirst: the page's head (style sheet and script) is sent
// before the report is computed; options are checked before it, so a bad
// request is still a 400 with its reason, while a report that fails after
// the head is shown in the page.
func TestDashboardHeadFirst(t *testing.T) {
	down, err := clickhouse.Open(&clickhouse.Options{Addr: []string{"127.0.0.1:1"}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	h := &Handler{Conn: down, AllowOpen: true}
	for _, tc := range []struct {
		name, query string
		code        int
		want        []string
	}{
		{"options refused", "?replicates=20000", 400, []string{"replicates 20000 is more than"}},
		{"database down", "?since=1h", 200, []string{`<link rel="stylesheet" href="/dashboard.css">`, `id="estimate-failed"`, "The report failed: ", "</html>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "http://localhost/dashboard"+tc.query, nil)
			req.RemoteAddr = "127.0.0.1:5000"
			h.ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q:\n%s", w, body)
				}
			}
			if tc.code == 400 && strings.Contains(body, "<html") {
				t.Errorf("a refused request got the page's head:\n%s", body)
			}
		})
	}
}

// gatedConn holds every query until gate is closed: a report that takes
// as long as the test wants.
type gatedConn struct {
	driver.Conn
	gate chan struct{}
}

func (c gatedConn) Query(ctx context.Context, q string, args ...any) (driver.Rows, error) {
	select {
	case <-c.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return c.Conn.Query(ctx, q, args...)
}

func (c gatedConn) QueryRow(ctx context.Context, q string, args ...any) driver.Row {
	select {
	case <-c.gate:
	case <-ctx.Done():
	}
	return c.Conn.QueryRow(ctx, q, args...)
}

// The page's head and heading reach the browser before any query
// returns: what it paints first does not wait for the report.
func TestDashboardHeadingBeforeReport(t *testing.T) {
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 3, Runs: 100}))
	gate := make(chan struct{})
	mux := http.NewServeMux()
	(&Handler{Conn: gatedConn{conn, gate}, AllowOpen: true}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/dashboard?by=country&continent=AS&since=" + testSince.Format(time.RFC3339) + "&until=" + testUntil.Format(time.RFC3339))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Read what arrives while every query is held.
	var got strings.Builder
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for !strings.Contains(got.String(), `id="loading"`) {
			n, err := resp.Body.Read(buf)
			got.Write(buf[:n])
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reading the page: %v after %q", err, got.String())
		}
	case <-time.After(20 * time.Second):
		close(gate)
		t.Fatalf("no heading while the report was held; got %q", got.String())
	}
	first := got.String()
	for _, want := range []string{`<link rel="stylesheet" href="/dashboard.css">`, "<h1>HTTP/3 vs HTTP/2 by country in Asia (AS)</h1>", `id="loading"`} {
		if !strings.Contains(first, want) {
			t.Errorf("the first part lacks %q: %s", want, first)
		}
	}
	if strings.Contains(first, `id="estimate"`) || strings.Contains(first, `class="meta"`) {
		t.Errorf("the first part has what needs the report: %s", first)
	}
	close(gate)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	page := first + string(rest)
	if l, m, e := strings.Index(page, `id="loading"`), strings.Index(page, `class="meta"`), strings.Index(page, `<div id="estimate">`); l < 0 || m < l || e < m ||
		!strings.HasSuffix(strings.TrimSpace(page), "</html>") {
		t.Errorf("want the heading, then the header's rest, then the estimate, then the end: loading %d, meta %d, estimate %d", l, m, e)
	}
}

// TestDashboardExperiment: the form's experiment box asks for the
// experiment's verdicts, which the page then shows, box ticked; a start
// relative to now is refused with its reason.
func TestDashboardExperiment(t *testing.T) {
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 3, Runs: 1500}))
	h := &Handler{Conn: conn, AllowOpen: true}
	get := func(query string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "http://localhost/dashboard?"+query, nil)
		req.RemoteAddr = "127.0.0.1:5000"
		h.ServeHTTP(rec, req)
		return rec
	}
	window := "since=" + testSince.Format(time.RFC3339) + "&until=" + testUntil.Format(time.RFC3339) + "&by=none"
	rec := get(window + "&experiment=1")
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `name="experiment" value="1" checked`) {
		t.Fatalf("status %d; the experiment box is not ticked", rec.Code)
	}
	if tmpl := strings.Index(body, `<template id="complete">`); tmpl < 0 || !strings.Contains(body[tmpl:], "(experiment: ") {
		t.Errorf("the complete part's verdicts are not the experiment's")
	}
	if plain := get(window).Body.String(); strings.Contains(plain, "(experiment: ") || strings.Contains(plain, `value="1" checked`) {
		t.Errorf("a window's dashboard shows the experiment's verdicts or a ticked box")
	}
	if rec := get("since=7d&experiment=1"); rec.Code != 400 || !strings.Contains(rec.Body.String(), "give since as a time") {
		t.Errorf("an experiment from 7d ago: status %d %q, want 400 naming the fix", rec.Code, rec.Body.String())
	}
}
