package ingest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/store"
)

// sinkFunc is a Sink for handler tests.
type sinkFunc func(ctx context.Context, run store.Run) error

func (f sinkFunc) Accept(ctx context.Context, run store.Run) error { return f(ctx, run) }

// recordingSink keeps what it accepts: runs (a Sink) and NEL uploads (a
// NELSink).
type recordingSink struct {
	mu      sync.Mutex
	runs    []store.Run
	batches []store.NELBatch
	err     error
}

func (s *recordingSink) Accept(_ context.Context, run store.Run) error {
	return record(s, &s.runs, run)
}

func (s *recordingSink) AcceptNEL(_ context.Context, b store.NELBatch) error {
	return record(s, &s.batches, b)
}

// record appends v to s's list to, unless s is set to fail.
func record[T any](s *recordingSink, to *[]T, v T) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	*to = append(*to, v)
	return nil
}

func TestHandlerPost(t *testing.T) {
	valid := wireReport("shop")
	for _, tc := range []struct {
		name       string
		body       []byte
		setup      func(h *Handler, r *http.Request)
		sinkErr    error
		repeat     int // send this many first, expect the status on the last
		status     int
		reason     string
		retryAfter bool
	}{
		{name: "accepted", body: valid, status: 204},
		{name: "not json", body: []byte("hello"), status: 400, reason: "decode_json"},
		{name: "empty", body: nil, status: 400, reason: "decode_json"},
		{name: "bad field", body: bytes.Replace(valid, []byte(`"site"`), []byte(`"Site"`), 1), status: 400, reason: "decode_field"},
		{name: "wrong version", body: bytes.Replace(valid, []byte(`"v":1`), []byte(`"v":9`), 1), status: 400, reason: "decode_version"},
		{name: "wire v2", body: beacontest.Report(beacontest.Run{ID: randomRunID(), Site: "shop", Alt: 2}), status: 204},
		{name: "alt out of range", body: beacontest.Report(beacontest.Run{ID: randomRunID(), Site: "shop", Alt: 9}), status: 400, reason: "decode_value"},
		{name: "alt missing in v2", body: bytes.Replace(valid, []byte(`"v":1`), []byte(`"v":2`), 1), status: 400, reason: "decode_field"},
		{name: "alt in v1", body: bytes.Replace(valid, []byte(`"mt":3.5`), []byte(`"mt":3.5,"alt":2`), 1), status: 400, reason: "decode_field"},
		{name: "too large", body: bytes.Repeat([]byte(" "), 40<<10), status: 413, reason: beacon.ReasonTooLarge},
		{name: "over a smaller cap", body: valid, setup: func(h *Handler, _ *http.Request) { h.MaxBodyBytes = 100 }, status: 413, reason: beacon.ReasonTooLarge},
		{name: "site not allowed", body: valid, setup: func(h *Handler, _ *http.Request) { h.Sites = []string{"other"} }, status: 403, reason: beacon.ReasonSiteNotAllowed},
		{name: "site allowed", body: valid, setup: func(h *Handler, _ *http.Request) { h.Sites = []string{"other", "shop"} }, status: 204},
		{name: "origin not allowed", body: valid, setup: func(h *Handler, r *http.Request) {
			h.Origins = mustOrigins(t, "https://shop.example")
			r.Header.Set("Origin", "https://evil.example")
		}, status: 403, reason: beacon.ReasonOriginNotAllowed},
		{name: "origin allowed", body: valid, setup: func(h *Handler, r *http.Request) {
			h.Origins = mustOrigins(t, "https://shop.example")
			r.Header.Set("Origin", "https://shop.example")
		}, status: 204},
		{name: "early data", body: valid, setup: func(_ *Handler, r *http.Request) { r.TLS = &tls.ConnectionState{HandshakeComplete: false} }, status: 425, reason: beacon.ReasonTooEarly},
		{name: "after handshake", body: valid, setup: func(_ *Handler, r *http.Request) { r.TLS = &tls.ConnectionState{HandshakeComplete: true} }, status: 204},
		{name: "rate limited", body: valid, setup: func(h *Handler, _ *http.Request) { h.RateLimit, h.RateBurst = 0.5, 2 }, repeat: 3, status: 429, reason: beacon.ReasonRateLimited, retryAfter: true},
		{name: "within rate", body: valid, setup: func(h *Handler, _ *http.Request) { h.RateLimit, h.RateBurst = 0.5, 2 }, repeat: 2, status: 204},
		{name: "busy", body: valid, sinkErr: ErrBusy, status: 503, reason: beacon.ReasonBusy, retryAfter: true},
		{name: "shutting down", body: valid, sinkErr: ErrClosed, status: 503, reason: beacon.ReasonShuttingDown, retryAfter: true},
		{name: "spool error", body: valid, sinkErr: errors.New("disk full"), status: 503, reason: beacon.ReasonSpoolError, retryAfter: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &recordingSink{err: tc.sinkErr}
			reg := prometheus.NewRegistry()
			h := &Handler{Sink: sink, Registerer: reg}
			var rec *httptest.ResponseRecorder
			for i := range max(tc.repeat, 1) {
				r := httptest.NewRequest("POST", "/beacon", bytes.NewReader(tc.body))
				r.RemoteAddr = "203.0.113.7:5555"
				if tc.setup != nil {
					tc.setup(h, r)
				}
				if i == 0 {
					if err := h.Init(); err != nil {
						t.Fatal(err)
					}
				}
				rec = httptest.NewRecorder()
				h.ServeHTTP(rec, r)
			}
			if rec.Code != tc.status {
				t.Fatalf("status %d (%q), want %d", rec.Code, rec.Body.String(), tc.status)
			}
			if tc.reason != "" {
				body := rec.Body.String()
				if !strings.HasPrefix(body, tc.reason+": ") || strings.Count(body, "\n") != 1 || !strings.HasSuffix(body, "\n") {
					t.Errorf("body %q, want one line starting %q", body, tc.reason+": ")
				}
				if n := rejectedCount(t, reg, tc.reason); n != 1 {
					t.Errorf("rejected{reason=%q} = %v, want 1", tc.reason, n)
				}
			}
			if got := rec.Header().Get("Retry-After"); (got != "") != tc.retryAfter {
				t.Errorf("Retry-After %q, want present=%v", got, tc.retryAfter)
			}
			if tc.status == 204 && tc.sinkErr == nil {
				if len(sink.runs) == 0 {
					t.Fatal("204 without a run reaching the sink")
				}
				run := sink.runs[len(sink.runs)-1]
				if rec, err := appendRecord(nil, &run); err != nil || bytes.Contains(rec, []byte("203.0.113.7")) || bytes.Contains(rec, []byte("192.0.2.1")) {
					t.Errorf("spool record %q (%v): the client address travelled past enrichment", rec, err)
				}
				if run.Received.IsZero() || run.Browser == "" {
					t.Errorf("run not enriched: %+v", run)
				}
			}
		})
	}
}

func rejectedCount(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	return labelledCount(t, reg, "h3rum_ingest_rejected_total", "reason", reason)
}

// labelledCount is the value of the counter metric's series whose label
// is value, -1 when there is none.
func labelledCount(t *testing.T, reg *prometheus.Registry, metric, label, value string) float64 {
	t.Helper()
	n, _ := labelledSeries(t, reg, metric, label, value)
	return n
}

// labelledSeries is labelledCount, and how many series the metric has.
func labelledSeries(t *testing.T, reg *prometheus.Registry, metric, label, value string) (float64, int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue(), len(mf.GetMetric())
				}
			}
		}
		return -1, len(mf.GetMetric())
	}
	return -1, 0
}

// A report the decoder refuses is counted by the field at fault, so that a
// browser quirk in the field (headless Chromium's negative durations)
// shows up as a cause; the labels are a fixed set, whatever the sender
// puts in its keys.
func TestHandlerCountsRefusalsByField(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := &Handler{Sink: &recordingSink{}, RateLimit: Unlimited, Registerer: reg}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	post := func(body []byte) (int, string) {
		resp, err := srv.Client().Post(srv.URL+"/beacon", "text/plain", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	duration := regexp.MustCompile(`"d":[0-9.]+`)
	negative := func(nth int) []byte {
		b, i := wireReport("shop"), 0
		return duration.ReplaceAllFunc(b, func(m []byte) []byte {
			if i++; i == nth {
				return []byte(`"d":-2981.9`)
			}
			return m
		})
	}
	const metric = "h3rum_ingest_rejected_fields_total"
	fields := len(beacon.DecodeFields()) + 1
	for _, nth := range []int{1, 4} {
		if code, body := post(negative(nth)); code != 400 || !strings.Contains(body, "-2981.9") {
			t.Fatalf("a report whose sample %d lasted -2981.9 ms: %d %q, want 400 naming the value", nth, code, body)
		}
	}
	for i := range 50 {
		post([]byte(fmt.Sprintf(`{"v":1,"k%d":1}`, i))) // made-up keys
	}
	post([]byte("hello"))
	if n := labelledCount(t, reg, metric, "field", "s.d"); n != 2 {
		t.Errorf("%s{field=\"s.d\"} = %v, want 2", metric, n)
	}
	if n, series := labelledSeries(t, reg, metric, "field", "none"); n != 51 || series != fields {
		t.Errorf("%s{field=\"none\"} = %v in %d series, want 51 in %d (beacon.DecodeFields and none)", metric, n, series, fields)
	}
	if n := labelledCount(t, reg, metric, "field", "mt"); n != 0 {
		t.Errorf("%s{field=\"mt\"} = %v, want 0: every field's series exists from the start", metric, n)
	}
}

func TestHandlerPreflightAndCORS(t *testing.T) {
	h := &Handler{Sink: &recordingSink{}, Origins: mustOrigins(t, "https://shop.example")}
	r := httptest.NewRequest("OPTIONS", "/beacon", nil)
	r.Header.Set("Origin", "https://SHOP.example") // origins compare as the probe's do: case-insensitively
	r.Header.Set("Access-Control-Request-Method", "POST")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 204 || rec.Header().Get("Access-Control-Allow-Origin") != "https://SHOP.example" ||
		rec.Header().Get("Access-Control-Allow-Methods") != "POST" || rec.Header().Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight: %d %v", rec.Code, rec.Header())
	}
	r.Header.Set("Origin", "https://evil.example")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 403 {
		t.Errorf("preflight from a foreign origin: %d, want 403", rec.Code)
	}
	// Any origin when none are configured.
	h = &Handler{Sink: &recordingSink{}}
	r = httptest.NewRequest("POST", "/beacon", bytes.NewReader(wireReport("s")))
	r.Header.Set("Origin", "https://anyone.example")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 204 || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("open CORS: %d %v", rec.Code, rec.Header())
	}
	r = httptest.NewRequest("GET", "/beacon", nil)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 405 {
		t.Errorf("GET /beacon: %d, want 405", rec.Code)
	}
}

func TestHandlerTrustedProxyAndGeoHeader(t *testing.T) {
	sink := &recordingSink{}
	h := &Handler{Sink: sink, Clients: access.Clients{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
		GeoHeader: "CF-IPCountry", RateLimit: 1, RateBurst: 1}
	post := func(remote string, hdr ...string) int {
		r := httptest.NewRequest("POST", "/beacon", bytes.NewReader(wireReport("s")))
		r.RemoteAddr = remote
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	// Two clients behind the same trusted proxy are limited separately…
	if a, b := post("10.0.0.1:1", "X-Forwarded-For", "198.51.100.1", "CF-IPCountry", "JP"),
		post("10.0.0.1:1", "X-Forwarded-For", "198.51.100.2"); a != 204 || b != 204 {
		t.Errorf("two clients via a trusted proxy: %d %d, want 204 204", a, b)
	}
	// …a forged header from an untrusted peer does not dodge the limit…
	if a, b := post("203.0.113.9:1", "X-Forwarded-For", "1.1.1.1"), post("203.0.113.9:1", "X-Forwarded-For", "2.2.2.2"); a != 204 || b != 429 {
		t.Errorf("forged X-Forwarded-For: %d %d, want 204 429", a, b)
	}
	// …nor does a Forwarded header a trusted proxy passed through, when
	// the proxy speaks X-Forwarded-For…
	if a, b := post("10.0.0.1:1", "X-Forwarded-For", "198.51.100.3", "Forwarded", "for=6.6.6.1"),
		post("10.0.0.1:1", "X-Forwarded-For", "198.51.100.3", "Forwarded", "for=6.6.6.2"); a != 204 || b != 429 {
		t.Errorf("rotating Forwarded behind an X-Forwarded-For proxy: %d %d, want 204 429", a, b)
	}
	// …and the CDN's country is believed from the proxy only.
	if code := post("203.0.113.10:1", "CF-IPCountry", "KP"); code != 204 {
		t.Fatalf("direct client: %d", code)
	}
	if len(sink.runs) != 5 {
		t.Fatalf("%d runs, want 5", len(sink.runs))
	}
	if g := sink.runs[0].Geo; g.Country != "JP" || g.Continent != "AS" {
		t.Errorf("geo header from the trusted proxy ignored: %+v", g)
	}
	if g := sink.runs[4].Geo; g.Country == "KP" {
		t.Errorf("geo header from an untrusted peer believed: %+v", g)
	}
}

// A proxy trusted as an IPv4-mapped prefix, as the origin's connection caps
// already read it, is trusted by ingest too: the clients behind it are
// limited one by one, not as one address sharing one limit.
func TestHandlerMappedTrustedProxy(t *testing.T) {
	h := &Handler{Sink: &recordingSink{}, RateLimit: 1, RateBurst: 1,
		Clients: access.Clients{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("::ffff:127.0.0.0/104")}}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	post := func(xff string) int {
		req, err := http.NewRequest("POST", srv.URL+"/beacon", bytes.NewReader(wireReport("s")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b, c := post("198.51.100.1"), post("198.51.100.2"), post("198.51.100.1"); a != 204 || b != 204 || c != 429 {
		t.Errorf("two clients, then the first again, via a proxy trusted as ::ffff:127.0.0.0/104: %d %d %d, want 204 204 429", a, b, c)
	}
}

// The rate limit is applied before the body is read or decoded: a flood of
// malformed reports from one address costs one decode, not fifty.
func TestHandlerRateLimitBeforeDecode(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := &Handler{Sink: &recordingSink{}, RateLimit: 1, RateBurst: 1, MaxConcurrency: 1, Registerer: reg}
	if err := h.Init(); err != nil {
		t.Fatal(err)
	}
	junk := bytes.Repeat([]byte("{"), 30<<10)
	codes := map[int]int{}
	for range 50 {
		body := &countingReader{r: bytes.NewReader(junk)}
		r := httptest.NewRequest("POST", "/beacon", body)
		r.RemoteAddr = "203.0.113.7:5555"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		codes[rec.Code]++
		if rec.Code == 429 && body.n > 0 {
			t.Fatalf("a rate-limited report had %d body bytes read", body.n)
		}
	}
	if codes[400] != 1 || codes[429] != 49 {
		t.Errorf("50 malformed reports at 1/s: %v, want 1×400 and 49×429", codes)
	}
}

func mustOrigins(t *testing.T, allow ...string) access.Origins {
	t.Helper()
	o, err := access.ParseOrigins(allow)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

type countingReader struct {
	r *bytes.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestWebSocket(t *testing.T) {
	sink := &recordingSink{}
	reg := prometheus.NewRegistry()
	h := &Handler{Sink: sink, AgentToken: testAgentToken, Sites: []string{"shop"}, Registerer: reg}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ingest/ws"

	if _, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer wrong"}}); err == nil || resp.StatusCode != 401 {
		t.Fatalf("wrong token: err=%v status=%v, want 401", err, resp)
	}
	conn, _, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer " + testAgentToken}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []string{
		`{"id":"a","report":` + string(wireReport("shop")) + `}`,
		`{"id":"b","report":{"v":1}}`,
		`not json`,
		`{"id":"c","report":` + string(wireReport("elsewhere")) + `}`,
		`{"id":"d","report":` + string(beacontest.Report(beacontest.Run{ID: randomRunID(), Site: "shop", Warmup: 2, Parallel: 3})) + `}`,
		// Agents: their runs with handshakes; handshakes only from agents;
		// a source is agent or browser; handshakes are decoded as strictly
		// as reports.
		`{"id":"e","source":"agent","report":` + string(wireReport("shop")) + `,"handshakes":` + handshakesJSON + `}`,
		`{"id":"f","report":` + string(wireReport("shop")) + `,"handshakes":` + handshakesJSON + `}`,
		`{"id":"g","source":"robot","report":` + string(wireReport("shop")) + `}`,
		`{"id":"h","source":"agent","report":` + string(wireReport("shop")) + `,"handshakes":[{"q":0,"ph":"p"}]}`,
	}
	for _, m := range msgs {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	acks := map[string]beacon.WSAck{}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for range msgs {
		var a beacon.WSAck
		if err := conn.ReadJSON(&a); err != nil {
			t.Fatal(err)
		}
		acks[a.ID] = a
	}
	for id, want := range map[string]struct {
		ok     bool
		reason string
	}{"a": {true, ""}, "b": {false, "decode_field"}, "": {false, beacon.ReasonBadMessage}, "c": {false, beacon.ReasonSiteNotAllowed}, "d": {true, ""},
		"e": {true, ""}, "f": {false, beacon.ReasonBadMessage}, "g": {false, beacon.ReasonBadMessage}, "h": {false, "decode_value"}} {
		a, found := acks[id]
		if !found || a.OK != want.ok || a.Reason != want.reason || (!a.OK && !strings.HasPrefix(a.Error, want.reason+": ")) {
			t.Errorf("ack %q = %+v (found %v), want ok=%v reason=%q", id, a, found, want.ok, want.reason)
		}
	}
	if len(sink.runs) != 3 {
		t.Fatalf("%d runs reached the sink, want 3", len(sink.runs))
	}
	for _, r := range sink.runs {
		agent := len(r.Handshakes) > 0
		if agent != (r.Source == store.SourceAgent) || agent != (r.Browser == BrowserAgent) {
			t.Errorf("run from %s with %d handshakes: source %q, browser %q", r.Report.Site, len(r.Handshakes), r.Source, r.Browser)
		}
		if agent && (len(r.Handshakes) != 3 || r.Handshakes[1].Phase != beacon.PhaseHandshake || !r.Handshakes[1].Server.EarlyData || string(r.HandshakeWire) != handshakesJSON) {
			t.Errorf("agent run's handshakes: %+v", r.Handshakes)
		}
	}
	// An oversized message closes the connection with 1009 and is counted.
	conn.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("x"), 64<<10))
	if _, _, err := conn.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Errorf("oversized message: %v, want close 1009", err)
	}
	conn.Close()
	waitFor(t, "the too_large count", func() bool { return rejectedCount(t, reg, beacon.ReasonTooLarge) == 1 })

	// An agent connection has its own report rate: beyond it, reports are
	// refused with rate_limited (and the agent's id) before decoding.
	limitedSrv := httptest.NewServer(&Handler{Sink: sink, AgentToken: testAgentToken, AgentRateLimit: 2})
	t.Cleanup(limitedSrv.Close)
	conn, _, err = websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(limitedSrv.URL, "http")+"/ingest/ws", http.Header{"Authorization": {"Bearer " + testAgentToken}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		conn.WriteMessage(websocket.TextMessage, []byte(`{"id":"r`+strconv.Itoa(i)+`","report":`+string(wireReport("shop"))+`}`))
	}
	limited := 0
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for range 5 {
		var a beacon.WSAck
		if err := conn.ReadJSON(&a); err != nil {
			t.Fatal(err)
		}
		if a.Reason == beacon.ReasonRateLimited && strings.HasPrefix(a.ID, "r") {
			limited++
		}
	}
	conn.Close()
	if limited != 3 {
		t.Errorf("5 reports at once at 2/s: %d refused as rate limited, want 3", limited)
	}

	// Wrong tokens are throttled per address: after the burst, even the
	// right token is answered 429 until the address has waited.
	throttledSrv := httptest.NewServer(&Handler{Sink: sink, AgentToken: testAgentToken, Failures: access.NewFailures()})
	t.Cleanup(throttledSrv.Close)
	url = "ws" + strings.TrimPrefix(throttledSrv.URL, "http") + "/ingest/ws"
	for range access.FailureBurst {
		websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer wrong"}})
	}
	if _, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer " + testAgentToken}}); err == nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("after %d wrong tokens: err=%v resp=%v, want 429 with Retry-After", access.FailureBurst, err, resp)
	}

	// No token configured: the endpoint does not exist.
	srv2 := httptest.NewServer(&Handler{Sink: sink})
	t.Cleanup(srv2.Close)
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv2.URL, "http")+"/ingest/ws", nil); err == nil || resp.StatusCode != 404 {
		t.Errorf("disabled endpoint: err=%v resp=%v, want 404", err, resp)
	}
}

const testAgentToken = "agent-token-0123456789abcdef0123456789"

// TestWebSocketAckWaitsForDurability: the ack comes only after Accept
// returns, and carries its failure.
// The agent token is taken from the Authorization header only: in the URL
// it would land in every proxy's and server's log. The right token as
// ?token= is refused, and counted as a wrong one.
func TestWebSocketTokenNotInURL(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := &Handler{Sink: &recordingSink{}, AgentToken: testAgentToken, Registerer: reg, Failures: access.NewFailures()}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ingest/ws"
	for _, q := range []string{"?token=", "?access_token=", "?token=x&token="} {
		conn, resp, err := websocket.DefaultDialer.Dial(url+q+testAgentToken, nil)
		if err == nil {
			conn.Close()
		}
		if resp == nil || resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("the agent token as %s…: %v, %v; want 401 and no upgrade", q, resp, err)
		}
	}
	if n := rejectedCount(t, reg, beacon.ReasonUnauthorized); n != 3 {
		t.Errorf("rejected{reason=unauthorized} = %v, want 3", n)
	}
	conn, _, err := websocket.DefaultDialer.Dial(url+"?token=ignored", http.Header{"Authorization": {"Bearer " + testAgentToken}})
	if err != nil {
		t.Fatalf("the token in the header, a stray ?token= beside it: %v", err)
	}
	conn.Close()
}

func TestWebSocketAckWaitsForDurability(t *testing.T) {
	release := make(chan struct{})
	h := &Handler{Sink: sinkFunc(func(ctx context.Context, run store.Run) error {
		<-release
		return ErrBusy
	}), AgentToken: "t", WSPingInterval: 50 * time.Millisecond}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/ingest/ws", http.Header{"Authorization": {"Bearer t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.WriteMessage(websocket.TextMessage, []byte(`{"id":"x","report":`+string(wireReport("s"))+`}`))
	pings := 0
	conn.SetPingHandler(func(string) error {
		pings++
		if pings == 3 {
			close(release)
		}
		return conn.WriteControl(websocket.PongMessage, nil, time.Now().Add(time.Second))
	})
	var a beacon.WSAck
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if err := conn.ReadJSON(&a); err != nil {
		t.Fatal(err)
	}
	if pings < 3 {
		t.Errorf("ack arrived before the sink returned (after %d pings)", pings)
	}
	if a.ID != "x" || a.OK || a.Reason != beacon.ReasonBusy {
		t.Errorf("ack %+v, want x refused as busy", a)
	}
}

// With every decoding slot taken, a report waits ConcurrencyWait and is
// then refused 503 with Retry-After; once a slot frees, reports go through
// and every slot is given back.
func TestHandlerConcurrencyLimit(t *testing.T) {
	reg := prometheus.NewRegistry()
	sink := &recordingSink{}
	h := &Handler{Sink: sink, MaxConcurrency: 1, ConcurrencyWait: 20 * time.Millisecond, Registerer: reg}
	if err := h.Init(); err != nil {
		t.Fatal(err)
	}
	post := func(body []byte) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/beacon", bytes.NewReader(body)))
		return rec
	}
	h.slots <- struct{}{} // another report is being decoded
	rec := post(wireReport("s"))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.HasPrefix(rec.Body.String(), beacon.ReasonOverloaded) {
		t.Errorf("all slots busy: %d %q Retry-After %q; want 503 %s", rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"), beacon.ReasonOverloaded)
	}
	if got := rejectedCount(t, reg, beacon.ReasonOverloaded); got != 1 {
		t.Errorf("overloaded counted %v, want 1", got)
	}
	<-h.slots
	// Accepted and rejected reports alike give their slot back.
	for _, body := range [][]byte{wireReport("s"), []byte("not json"), wireReport("s")} {
		post(body)
	}
	if len(h.slots) != 0 || len(sink.runs) != 2 {
		t.Errorf("after three reports: %d slots held, %d runs accepted; want 0 and 2", len(h.slots), len(sink.runs))
	}
}

// Over HTTP/1.1 a refusal decided before the body is read arrives at once
// and closes the connection, even when the client announced a body and
// stalls after its first bytes: net/http would otherwise read the body
// (below 256 KiB) before writing the refusal, so the client waited for its
// own 429 until the body timeout and held a goroutine meanwhile.
func TestRefusalBeforeBodyHTTP1(t *testing.T) {
	const h3 = "https://h3.rum.example:8443"
	limited := func(h *Handler) { h.RateLimit, h.RateBurst = 0.001, 1 }
	for _, tc := range []struct {
		name, path          string
		contentType, origin string
		length              int // announced; the stalling client sends 10 bytes of it
		setup               func(h *Handler)
		prime               []byte // sent and accepted first, to use up the rate limit's burst
		status              int
	}{
		{name: "beacon rate limited", path: "/beacon", contentType: "text/plain", length: 30_000,
			setup: limited, prime: wireReport("shop"), status: 429},
		{name: "beacon origin", path: "/beacon", contentType: "text/plain", origin: "https://evil.example", length: 30_000,
			setup: func(h *Handler) { h.Origins = mustOrigins(t, "https://shop.example") }, status: 403},
		{name: "reports rate limited", path: "/reports", contentType: nelMediaType, length: 100_000,
			setup: limited, prime: nelUpload(h3, 1), status: 429},
		{name: "reports origin", path: "/reports", contentType: nelMediaType, origin: "https://evil.example", length: 100_000,
			setup: func(h *Handler) { h.NELHosts = []string{"h3.rum.example"} }, status: 403},
		{name: "reports content type", path: "/reports", contentType: "application/json", length: 100_000, status: 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Handler{Sink: &recordingSink{}, NELSink: &recordingSink{}, Registerer: prometheus.NewRegistry()}
			if tc.setup != nil {
				tc.setup(h)
			}
			if err := h.Init(); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h) // HTTP/1.1 on loopback, no timeouts of its own
			t.Cleanup(srv.Close)
			if tc.prime != nil {
				resp, err := srv.Client().Post(srv.URL+tc.path, tc.contentType, bytes.NewReader(tc.prime))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 204 {
					t.Fatalf("priming request: status %d, want 204", resp.StatusCode)
				}
			}

			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			conn.SetDeadline(start.Add(3 * time.Second))
			head := "POST " + tc.path + " HTTP/1.1\r\nHost: collector.example\r\nContent-Type: " + tc.contentType + "\r\n"
			if tc.origin != "" {
				head += "Origin: " + tc.origin + "\r\n"
			}
			fmt.Fprintf(conn, "%sContent-Length: %d\r\n\r\n0123456789", head, tc.length)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer while the body stalls (after %v): %v", time.Since(start).Round(time.Millisecond), err)
			}
			answered := time.Since(start)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !resp.Close {
				t.Errorf("status %d, Connection %q; want %d and close", resp.StatusCode, resp.Header.Get("Connection"), tc.status)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the refusal the connection gave %v, want it closed (EOF)", err)
			}
			t.Logf("answered in %v, closed in %v", answered.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

			// A client that sends its whole body at once reads the same
			// refusal intact: the close waits for the body it was sending.
			req, _ := http.NewRequest("POST", srv.URL+tc.path, bytes.NewReader(make([]byte, tc.length)))
			req.Header.Set("Content-Type", tc.contentType)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err = srv.Client().Do(req)
			if err != nil {
				t.Fatalf("a client sending its body: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !bytes.HasSuffix(body, []byte("\n")) {
				t.Errorf("a client sending its body: status %d, %q; want %d with its reason", resp.StatusCode, body, tc.status)
			}
		})
	}
}

// HTTP/2 answers a refusal on its stream without waiting for the body and
// must not see Connection: close, which its server turns into a GOAWAY of
// the connection every other request of the page shares.
func TestRefusalBeforeBodyKeepsHTTP2Connection(t *testing.T) {
	h := &Handler{Sink: &recordingSink{}, RateLimit: 0.001, RateBurst: 1, Registerer: prometheus.NewRegistry()}
	if err := h.Init(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	var mu sync.Mutex
	conns := 0
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := srv.Client()
	c.Timeout = 10 * time.Second
	for i, want := range []int{204, 429, 429, 429} {
		resp, err := c.Post(srv.URL+"/beacon", "text/plain", bytes.NewReader(wireReport("shop")))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != want || resp.Header.Get("Connection") != "" {
			t.Errorf("request %d: %s %d, Connection %q; want HTTP/2 %d without Connection", i, resp.Proto, resp.StatusCode, resp.Header.Get("Connection"), want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 1 {
		t.Errorf("%d connections for four requests, want 1 (a refusal closed the connection)", conns)
	}
}

// A zero RateLimit is the default limit, like every other zero setting;
// only a negative one (Unlimited) turns it off.
func TestHandlerRateLimitZeroIsDefault(t *testing.T) {
	for _, tc := range []struct {
		rate    float64
		limited bool
	}{{0, true}, {3, true}, {Unlimited, false}} {
		h := &Handler{Sink: &recordingSink{}, RateLimit: tc.rate}
		if err := h.Init(); err != nil {
			t.Fatalf("RateLimit %v: %v", tc.rate, err)
		}
		if limited := h.limiter != nil && h.nelLimiter != nil; limited != tc.limited {
			t.Errorf("RateLimit %v: limited %v, want %v", tc.rate, limited, tc.limited)
		}
	}
}
