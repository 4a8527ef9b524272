package api

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/synth"
)

const testToken = "s3cret-t0ken-0123456789abcdef0123"

func serve(t *testing.T, h *Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	h.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestHandlerAuthAndParams(t *testing.T) {
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 5, Runs: 300}))
	window := "?since=2025-01-01T00:00:00Z&until=2025-01-03T00:00:00Z"
	locked := serve(t, &Handler{Conn: conn, Token: testToken, Hub: &Hub{}})
	open := serve(t, &Handler{Conn: conn, AllowOpen: true})
	closed := serve(t, &Handler{Conn: conn})
	both := serve(t, &Handler{Conn: conn, Token: testToken, AllowOpen: true})
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	for _, tc := range []struct {
		name   string
		url    string
		hdr    map[string]string
		status int
		body   string
	}{
		{"no token", locked.URL + "/api/report" + window, nil, 401, "unauthorized"},
		{"wrong token", locked.URL + "/api/report" + window, map[string]string{"Authorization": "Bearer nope"}, 401, "unauthorized"},
		{"basic auth", locked.URL + "/api/report" + window, map[string]string{"Authorization": "Basic " + testToken}, 401, "unauthorized"},
		{"bearer", locked.URL + "/api/report" + window, bearer, 200, `"groups":[`},
		{"cookie", locked.URL + "/api/report" + window, map[string]string{"Cookie": CookieName + "=" + testToken}, 200, `"version":1`},
		{"header wins over cookie", locked.URL + "/api/report" + window, map[string]string{"Authorization": "Basic x", "Cookie": CookieName + "=" + testToken}, 401, "unauthorized"},
		{"bearer case-insensitive, spaces trimmed", locked.URL + "/api/report" + window, map[string]string{"Authorization": "bearer  " + testToken + " "}, 200, `"groups":[`},
		{"empty bearer", locked.URL + "/api/report" + window, map[string]string{"Authorization": "Bearer "}, 401, "unauthorized"},
		{"query token is for the dashboard only", locked.URL + "/api/report" + window + "&token=" + testToken, nil, 401, "unauthorized"},
		{"dashboard without token", locked.URL + "/dashboard" + window, nil, 401, "unauthorized"},
		{"dashboard wrong query token", locked.URL + "/dashboard" + window + "&token=x", nil, 401, "unauthorized"},
		{"dashboard cookie", locked.URL + "/dashboard" + window, map[string]string{"Cookie": CookieName + "=" + testToken}, 200, `id="report"`},
		{"live without token", locked.URL + "/api/live", nil, 401, "unauthorized"},
		{"static js needs no token", locked.URL + "/dashboard.js", nil, 200, "use strict"},
		{"open on loopback", open.URL + "/api/report" + window, nil, 200, `"groups":[`},
		{"open, but through a proxy", open.URL + "/api/report" + window, map[string]string{"X-Forwarded-For": "203.0.113.5"}, 403, "forbidden"},
		{"open, but forwarded", open.URL + "/api/report" + window, map[string]string{"Forwarded": "for=203.0.113.5"}, 403, "forbidden"},
		{"open, but a rebinding host", open.URL + "/api/report" + window, map[string]string{"Host": "attacker.example"}, 403, "forbidden"},
		{"open dashboard, rebinding host", open.URL + "/dashboard" + window, map[string]string{"Host": "attacker.example:80"}, 403, "forbidden"},
		{"open live, rebinding host", open.URL + "/api/live", map[string]string{"Host": "attacker.example"}, 404, ""},
		{"open, localhost host", open.URL + "/api/report" + window, map[string]string{"Host": "localhost"}, 200, `"groups":[`},
		{"no token, not open", closed.URL + "/api/report" + window, nil, 403, "forbidden: this collector has no report token; start it with --report-token-file"},
		{"no token, not open, localhost", closed.URL + "/api/report" + window, map[string]string{"Host": "localhost"}, 403, "--open-reports"},
		{"no token, not open, dashboard", closed.URL + "/dashboard" + window, map[string]string{"Host": "localhost"}, 403, "--open-reports"},
		{"token wins over open", both.URL + "/api/report" + window, map[string]string{"Host": "localhost"}, 401, "unauthorized"},
		{"bad by", open.URL + "/api/report?by=planet", nil, 400, `bad request: unknown grouping "planet"`},
		{"bad since", open.URL + "/api/report?since=later", nil, 400, `bad request: cannot parse time "later"`},
		{"until before since", open.URL + "/api/report?since=2025-01-02&until=2025-01-01", nil, 400, "must be after since"},
		{"unknown parameter", open.URL + "/api/report?colour=red", nil, 400, `unknown parameter "colour"`},
		{"rollup cannot answer", open.URL + "/api/report?by=asn&source=rollup", nil, 400, "rollup"},
	} {
		res, body := get(t, tc.url, tc.hdr)
		if res.StatusCode != tc.status || !strings.Contains(body, tc.body) {
			t.Errorf("%s: %d %q, want %d containing %q", tc.name, res.StatusCode, trim(body), tc.status, tc.body)
		}
		if res.StatusCode >= 400 && strings.Count(strings.TrimSpace(body), "\n") != 0 {
			t.Errorf("%s: error body is not one line: %q", tc.name, body)
		}
	}

	// ?token= on first load sets the cookie and redirects without the token.
	res, _ := get(t, locked.URL+"/dashboard"+window+"&token="+testToken, nil)
	loc := res.Header.Get("Location")
	var cookie *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == CookieName {
			cookie = c
		}
	}
	if res.StatusCode != http.StatusSeeOther || strings.Contains(loc, "token") || !strings.Contains(loc, "since=") ||
		cookie == nil || cookie.Value != testToken || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Errorf("token login: %d Location %q cookie %+v", res.StatusCode, loc, cookie)
	}
	res, body := get(t, locked.URL+"/dashboard"+window, map[string]string{"Cookie": CookieName + "=" + testToken})
	if csp := res.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self'") {
		t.Errorf("dashboard CSP %q", csp)
	}
	for _, bad := range []string{"<script>", "style=", "onclick", "http://", "https://"} {
		if strings.Contains(body, bad) {
			t.Errorf("dashboard contains %q (inline code or a remote resource)", bad)
		}
	}

	// The API's JSON is the Report of Run.
	_, body = get(t, open.URL+"/api/report"+window+"&by=country", nil)
	var got model.Report
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want, err := queries.Run(context.Background(), conn, model.Options{Since: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2025, 1, 3, 0, 0, 0, 0, time.UTC), By: "country"})
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(&got)
	if string(wb) != string(gb) {
		t.Errorf("API JSON differs from Run:\n%s\n%s", trim(string(gb)), trim(string(wb)))
	}
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// testRun is an accepted run with known medians: H2 10, 20, 30 → 20;
// H3 5, 7, 100 → 7; one H3-origin request fell back: availability 3/4.
func testRun() store.Run {
	rep := &beacon.Report{Site: "example.com", Samples: []beacon.Sample{
		{Phase: beacon.PhaseWarmup, Want: beacon.ProtoH3, Got: beacon.ProtoH2, Duration: 500},
		{Phase: beacon.PhaseParallel, Want: beacon.ProtoH2, Got: beacon.ProtoH2, Duration: 30},
		{Phase: beacon.PhaseParallel, Want: beacon.ProtoH2, Got: beacon.ProtoH2, Duration: 10},
		{Phase: beacon.PhaseParallel, Want: beacon.ProtoH2, Got: beacon.ProtoH2, Duration: 20},
		{Phase: beacon.PhaseParallel, Want: beacon.ProtoH2, Got: beacon.ProtoUnknown, Duration: 0, Error: "timeout"},
		{Phase: beacon.PhaseParallel, Want: beacon.ProtoH3, Got: beacon.ProtoH3, Duration: 100},
		{Phase: beacon.PhaseParallel, Want: beacon.ProtoH3, Got: beacon.ProtoH3, Duration: 5},
		{Phase: beacon.PhaseParallel, Want: beacon.ProtoH3, Got: beacon.ProtoH3, Duration: 7},
		{Phase: beacon.PhaseParallel, Want: beacon.ProtoH3, Got: beacon.ProtoH2, Duration: 9},
	}}
	return store.Run{Report: rep, Received: time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC),
		Enrichment: store.Enrichment{Geo: store.Geo{Continent: "EU", Country: "DE"}}}
}

func TestLiveRunMessage(t *testing.T) {
	m := NewLiveRun(testRun())
	if m.Site != "example.com" || m.Continent != "EU" || m.H2MedianMS == nil || *m.H2MedianMS != 20 ||
		m.H3MedianMS == nil || *m.H3MedianMS != 7 || m.H3Availability == nil || *m.H3Availability != 0.75 {
		t.Errorf("live message %+v", m)
	}
	empty := NewLiveRun(store.Run{})
	if empty.Continent != "unknown" || empty.H2MedianMS != nil || empty.H3Availability != nil {
		t.Errorf("empty run message %+v", empty)
	}
}

func TestHubDropsSlowClientWithoutBlocking(t *testing.T) {
	h := &Hub{ClientBuffer: 4}
	slow, err := h.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	fast, err := h.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 10; i++ {
			h.Publish(testRun()) // must return although slow never reads
			select {
			case <-fast.C:
			case <-time.After(10 * time.Second):
				t.Error("fast client got no message")
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Publish blocked on a slow client")
	}
	select {
	case <-slow.Done():
	default:
		t.Error("slow client was not dropped")
	}
	select {
	case <-fast.Done():
		t.Error("fast client was dropped")
	default:
	}
	if s := h.Stats(); s.Dropped != 1 || s.Clients != 1 || s.Published != 10 {
		t.Errorf("stats %+v, want 1 dropped, 1 client, 10 published", s)
	}
	if len(slow.C) != 4 {
		t.Errorf("slow client buffered %d messages, want its buffer of 4", len(slow.C))
	}
	h.Unsubscribe(fast)
	h.Unsubscribe(fast) // twice is fine
	lim := &Hub{MaxClients: 1}
	if _, err := lim.Subscribe(); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Subscribe(); err != ErrTooManyClients {
		t.Errorf("second subscriber: %v, want ErrTooManyClients", err)
	}
}

func TestLiveWebSocket(t *testing.T) {
	hub := &Hub{}
	srv := serve(t, &Handler{Token: testToken, Hub: hub})
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/live"
	if _, res, err := websocket.DefaultDialer.Dial(url, nil); err == nil || res == nil || res.StatusCode != 401 {
		t.Fatalf("dial without token: %v %v, want 401", res, err)
	}
	hdr := http.Header{"Authorization": {"Bearer " + testToken}}
	// A cross-site page must not ride the cookie into the feed.
	evil := http.Header{"Cookie": {CookieName + "=" + testToken}, "Origin": {"https://evil.example"}}
	if _, res, err := websocket.DefaultDialer.Dial(url, evil); err == nil || res == nil || res.StatusCode != 403 {
		t.Errorf("cross-origin dial: %v %v, want 403", res, err)
	}
	ws, _, err := websocket.DefaultDialer.Dial(url, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// Subscribe happens before the upgrade; publish until the message arrives.
	deadline := time.Now().Add(10 * time.Second)
	for hub.Stats().Clients == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	hub.Publish(testRun())
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var m LiveRun
	if err := ws.ReadJSON(&m); err != nil {
		t.Fatal(err)
	}
	if m.Country != "DE" || m.H3MedianMS == nil || *m.H3MedianMS != 7 {
		t.Errorf("live message %+v", m)
	}
	ws.Close()
	for hub.Stats().Clients != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := hub.Stats().Clients; n != 0 {
		t.Errorf("%d clients after close, want 0", n)
	}
}

// Wrong tokens are throttled per client address, on every route that takes
// one, and the 429 says so and for how long; other addresses are
// unaffected and the right token works again once the address has waited.
func TestHandlerThrottlesWrongTokens(t *testing.T) {
	conn := newDB(t)
	h := &Handler{Conn: conn, Token: testToken, Failures: access.NewFailures(), Hub: &Hub{}}
	srv := serve(t, h)
	for i := range access.FailureBurst {
		if res, _ := get(t, srv.URL+"/api/report", map[string]string{"Authorization": "Bearer guess" + strconv.Itoa(i)}); res.StatusCode != 401 {
			t.Fatalf("wrong token %d: %d, want 401", i, res.StatusCode)
		}
	}
	for _, path := range []string{"/api/report", "/dashboard?token=guess", "/api/live"} {
		res, body := get(t, srv.URL+path, map[string]string{"Authorization": "Bearer " + testToken})
		if res.StatusCode != 429 || res.Header.Get("Retry-After") != "6" || !strings.HasPrefix(body, "too many requests") ||
			!strings.Contains(body, "locked out after 10 wrong tokens, the right token included: try again in 6 s") {
			t.Errorf("%s after %d wrong tokens: %d %q (Retry-After %q), want 429", path, access.FailureBurst, res.StatusCode, body, res.Header.Get("Retry-After"))
		}
	}
}

// Reports are bounded in cost: replicates are capped, at most
// MaxConcurrent are computed at once (the next waits QueueWait, then gets
// 503 with Retry-After), and a report whose client left gives its slot back.
func TestHandlerCostLimits(t *testing.T) {
	conn := newDB(t)
	load(t, conn, synth.All(synth.Config{Seed: 9, Runs: 2000}))
	window := "?since=2025-01-01T00:00:00Z&until=2025-01-03T00:00:00Z"
	h := &Handler{Conn: conn, AllowOpen: true, MaxConcurrent: 1, QueueWait: 200 * time.Millisecond}
	srv := serve(t, h)

	if res, body := get(t, srv.URL+"/api/report"+window+"&replicates="+strconv.Itoa(model.MaxReplicates+1), nil); res.StatusCode != 400 || !strings.Contains(body, "replicates") {
		t.Errorf("replicates over the cap: %d %q, want 400", res.StatusCode, body)
	}

	h.slots <- struct{}{} // another report is being computed
	for _, path := range []string{"/api/report", "/dashboard"} {
		res, body := get(t, srv.URL+path+window, nil)
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || !strings.HasPrefix(body, "busy") {
			t.Errorf("%s with every slot taken: %d %q, want 503 busy with Retry-After", path, res.StatusCode, body)
		}
	}
	<-h.slots

	// A client that leaves mid-report frees its slot. Leaving cancels the
	// report's queries mid-stream, which store's connections end gently
	// (the 26.x test server would abort on a reset).
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/report"+window+"&by=country&replicates="+strconv.Itoa(model.MaxReplicates), nil)
	if res, err := http.DefaultClient.Do(req); err == nil {
		res.Body.Close()
		t.Logf("the report finished within the client's 300 ms; its slot is free anyway")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(h.slots) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(h.slots) > 0 {
		t.Fatal("the slot of a report whose client left was still held after 10 s")
	}
	if res, _ := get(t, srv.URL+"/api/report"+window, nil); res.StatusCode != 200 {
		t.Errorf("next report: %d, want 200", res.StatusCode)
	}
}

// An option out of its range is a 400 that names it, through a real
// listener, before any query: effect-ms=1e-300 used to overflow the
// conversion of the runs to detect it into an int.
func TestHandlerRefusesEffectOutOfRange(t *testing.T) {
	srv := serve(t, &Handler{AllowOpen: true}) // no ClickHouse: refused before any query
	for _, v := range []string{"1e-300", "0.05", "10001", "NaN", "-Inf", "0x1p-1000"} {
		res, body := get(t, srv.URL+"/api/report?effect-ms="+v, nil)
		if res.StatusCode != 400 || !strings.Contains(body, "effect-ms") || strings.Count(strings.TrimSpace(body), "\n") != 0 {
			t.Errorf("effect-ms=%s: %d %q, want one line of 400 naming effect-ms", v, res.StatusCode, body)
		}
	}
	res, body := get(t, srv.URL+"/api/report?since=1e5w", nil)
	if res.StatusCode != 400 || !strings.Contains(body, "1e5w") {
		t.Errorf("since=1e5w: %d %q, want 400 naming the value", res.StatusCode, body)
	}
}

// TestReportNotFinite: /api/report encodes a report before its status goes
// out, so one holding a number JSON cannot carry is a 500 and one line
// naming it, not an empty 200.
func TestReportNotFinite(t *testing.T) {
	share := math.NaN()
	bad := &model.Report{By: "continent", Groups: []model.Group{}, Timeline: []model.Hour{}, Verdicts: []model.Verdict{},
		NEL: &model.NEL{By: "continent", Failures: []model.NELFailure{},
			Protocols: []model.NELProtocol{{Proto: "h2"}, {Proto: "h3", FailedEstimated: math.Inf(1), FailureShare: &share}}}}
	h := &Handler{}
	h.init()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { h.writeJSON(w, bad) }))
	t.Cleanup(srv.Close)
	res, body := get(t, srv.URL, nil)
	const reason = "nel.protocols[1].failed_estimated_requests is +Inf"
	if res.StatusCode != http.StatusInternalServerError || !strings.Contains(body, reason) || strings.Count(body, "\n") != 1 {
		t.Errorf("a report with +Inf: %d %q, want 500 and one line naming %s", res.StatusCode, body, reason)
	}
}
