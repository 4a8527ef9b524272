package ingest

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/nel"
	"github.com/h3rum/h3rum/ingest/store"
)

// nelUpload is an upload as Chromium sends it: n network-error reports
// about origin (a 404 each) and one deprecation report.
func nelUpload(origin string, n int) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		fmt.Fprintf(&b, `{"age":%d,"body":{"elapsed_time":%d,"method":"GET","phase":"application","protocol":"h3",`+
			`"referrer":"https://shop.example/p?q=1","sampling_fraction":1.0,"server_ip":"127.0.0.1","status_code":404,`+
			`"type":"http.error"},"type":"network-error","url":"%s/missing?q=%d","user_agent":"Mozilla/5.0 Chrome/156.0.0.0"},`, 10+i, 5+i, origin, i)
	}
	b.WriteString(`{"age":0,"body":{"id":"x"},"type":"deprecation","url":"https://shop.example/","user_agent":"UA"}]`)
	return []byte(b.String())
}

func TestNELRecordRoundTrip(t *testing.T) {
	b := store.NELBatch{ID: uuid.New(), Received: time.Now().UTC(), Reports: []nel.Report{
		{Origin: "https://h3.example", Probe: true, Type: "quic.protocol", Phase: "connection", Protocol: "h3", ElapsedMS: 300, SamplingFraction: 1},
		{Origin: "https://h2.example:8444", Type: "ok", Phase: "application", Protocol: "h2", Method: "GET", StatusCode: 204, SamplingFraction: 0.01},
	}}
	b.Geo = store.Geo{Continent: "EU", Country: "DE"}
	b.Browser, b.BrowserMajor = "Chrome", 156
	rec, err := appendNELRecord(nil, &b)
	if err != nil {
		t.Fatal(err)
	}
	if !isNELRecord(rec) {
		t.Fatal("a NEL record is not recognised as one")
	}
	if _, err := decodeRecord(rec); err == nil {
		t.Error("a NEL record decoded as a run")
	}
	got, err := decodeNELRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != b.ID || !got.Received.Equal(b.Received) || got.Enrichment != b.Enrichment || !reflect.DeepEqual(got.Reports, b.Reports) {
		t.Errorf("round trip changed the batch:\n got %+v\nwant %+v", got, b)
	}
	for n := range len(rec) {
		if _, err := decodeNELRecord(rec[:n]); err == nil {
			t.Fatalf("decoding %d of %d bytes succeeded", n, len(rec))
		}
	}
	run := testRun(t, "rt")
	if rr, _ := appendRecord(nil, &run); isNELRecord(rr) {
		t.Error("a run record is taken for a NEL record")
	}
}

func TestHandlerReports(t *testing.T) {
	const h3 = "https://h3.rum.example:8443"
	valid := nelUpload(h3, 2)
	for _, tc := range []struct {
		name       string
		body       []byte
		setup      func(h *Handler, r *http.Request)
		sinkErr    error
		repeat     int
		status     int
		reason     string
		retryAfter bool
		stored     int // reports the sink got
	}{
		{name: "accepted", body: valid, status: 204, stored: 2},
		{name: "charset parameter", body: valid, setup: func(_ *Handler, r *http.Request) {
			r.Header.Set("Content-Type", "application/reports+json; charset=utf-8")
		}, status: 204, stored: 2},
		{name: "only other hosts", body: valid, setup: func(h *Handler, _ *http.Request) { h.NELHosts = []string{"h2.rum.example"} }, status: 204},
		{name: "allowed host", body: valid, setup: func(h *Handler, r *http.Request) {
			h.NELHosts = []string{"H3.rum.example"}
			r.Header.Set("Origin", h3)
		}, status: 204, stored: 2},
		{name: "origin of another host", body: valid, setup: func(h *Handler, r *http.Request) {
			h.NELHosts = []string{"h3.rum.example"}
			r.Header.Set("Origin", "https://evil.example")
		}, status: 403, reason: beacon.ReasonOriginNotAllowed},
		{name: "wrong content type", body: valid, setup: func(_ *Handler, r *http.Request) { r.Header.Set("Content-Type", "application/json") },
			status: 415, reason: beacon.ReasonContentType},
		{name: "no content type", body: valid, setup: func(_ *Handler, r *http.Request) { r.Header.Del("Content-Type") },
			status: 415, reason: beacon.ReasonContentType},
		{name: "bad json", body: []byte(`[{"type":`), status: 400, reason: "decode_json"},
		{name: "not an array", body: []byte(`{"type":"network-error"}`), status: 400, reason: "decode_shape"},
		{name: "bad field", body: bytes.Replace(valid, []byte(`"elapsed_time":5`), []byte(`"elapsed_time":"5"`), 1), status: 400, reason: "decode_field"},
		{name: "too many reports", body: nelUpload(h3, nel.MaxReports+1), status: 400, reason: "decode_too_many"},
		{name: "too large", body: bytes.Repeat([]byte(" "), nel.MaxBodyBytes+1), status: 413, reason: beacon.ReasonTooLarge},
		{name: "over a smaller cap", body: valid, setup: func(h *Handler, _ *http.Request) { h.MaxNELBytes = 100 }, status: 413, reason: beacon.ReasonTooLarge},
		{name: "early data", body: valid, setup: func(_ *Handler, r *http.Request) { r.TLS = &tls.ConnectionState{HandshakeComplete: false} },
			status: 425, reason: beacon.ReasonTooEarly},
		{name: "rate limited", body: valid, setup: func(h *Handler, _ *http.Request) { h.RateLimit, h.RateBurst = 0.5, 2 }, repeat: 3,
			status: 429, reason: beacon.ReasonRateLimited, retryAfter: true, stored: 4},
		{name: "busy", body: valid, sinkErr: ErrBusy, status: 503, reason: beacon.ReasonBusy, retryAfter: true},
		{name: "spool error", body: valid, sinkErr: errors.New("disk full"), status: 503, reason: beacon.ReasonSpoolError, retryAfter: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &recordingSink{err: tc.sinkErr}
			reg := prometheus.NewRegistry()
			h := &Handler{Sink: &recordingSink{}, NELSink: sink, Registerer: reg}
			var rec *httptest.ResponseRecorder
			for i := range max(tc.repeat, 1) {
				r := httptest.NewRequest("POST", "/reports", bytes.NewReader(tc.body))
				r.RemoteAddr = "203.0.113.7:5555"
				r.Header.Set("Content-Type", "application/reports+json")
				r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36")
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
				if !strings.HasPrefix(body, tc.reason+": ") || strings.Count(body, "\n") != 1 {
					t.Errorf("body %q, want one line starting %q", body, tc.reason+": ")
				}
				if n := metricValue(t, reg, "h3rum_ingest_nel_rejected_total", tc.reason); n != 1 {
					t.Errorf("nel_rejected{reason=%q} = %v, want 1", tc.reason, n)
				}
			}
			if got := rec.Header().Get("Retry-After"); (got != "") != tc.retryAfter {
				t.Errorf("Retry-After %q, want present=%v", got, tc.retryAfter)
			}
			stored := 0
			for _, b := range sink.batches {
				stored += len(b.Reports)
				if b.ID == uuid.Nil || b.Received.IsZero() || b.Browser != "Chrome" || b.BrowserMajor != 156 {
					t.Errorf("batch not identified or enriched: %+v", b)
				}
				rec, err := appendNELRecord(nil, &b)
				if err != nil || bytes.Contains(rec, []byte("203.0.113.7")) || bytes.Contains(rec, []byte("missing")) ||
					bytes.Contains(rec, []byte("q=1")) || bytes.Contains(rec, []byte("Mozilla")) {
					t.Errorf("spool record %q (%v) keeps an address, path, query or user agent", rec, err)
				}
			}
			if stored != tc.stored {
				t.Errorf("%d reports reached the sink, want %d", stored, tc.stored)
			}
			if tc.status == 204 && tc.stored > 0 {
				if n := metricValue(t, reg, "h3rum_ingest_nel_ignored_reports_total", ignoredUnknownType); n != 1 {
					t.Errorf("ignored{unknown_type} = %v, want 1 (the deprecation report)", n)
				}
			}
		})
	}
}

func metricValue(t *testing.T, reg *prometheus.Registry, name, reason string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

func TestHandlerReportsPreflight(t *testing.T) {
	h := &Handler{Sink: &recordingSink{}, NELSink: &recordingSink{}, NELHosts: []string{"h3.rum.example"}}
	for _, tc := range []struct {
		origin string
		status int
	}{{"https://h3.rum.example:8443", 204}, {"https://evil.example", 403}, {"null", 403}} {
		r := httptest.NewRequest("OPTIONS", "/reports", nil)
		r.Header.Set("Origin", tc.origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		r.Header.Set("Access-Control-Request-Headers", "content-type")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.status {
			t.Errorf("preflight from %s: %d, want %d", tc.origin, rec.Code, tc.status)
			continue
		}
		hd := rec.Header()
		if tc.status == 204 && (hd.Get("Access-Control-Allow-Origin") != tc.origin || hd.Get("Access-Control-Allow-Methods") != "POST" ||
			!strings.EqualFold(hd.Get("Access-Control-Allow-Headers"), "content-type") || hd.Get("Access-Control-Allow-Credentials") != "") {
			t.Errorf("preflight answer headers %v", hd)
		}
	}
	// Without a NEL sink the endpoint does not exist.
	off := &Handler{Sink: &recordingSink{}}
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/reports", bytes.NewReader(nelUpload("https://a.example", 1)))
	r.Header.Set("Content-Type", "application/reports+json")
	off.ServeHTTP(rec, r)
	if rec.Code != http.StatusNotFound {
		t.Errorf("POST /reports without a NEL sink: %d, want 404", rec.Code)
	}
}

// TestNELThroughPipeline takes uploads through the real pipeline while
// ClickHouse is away (the spool holds them), then to ClickHouse; a copy of
// the spool replayed by a new process stores nothing twice.
func TestNELThroughPipeline(t *testing.T) {
	conn := testDB(t)
	dir := t.TempDir()
	ready := make(chan struct{})
	first := startPipeline(t, &Pipeline{Conn: conn, Dir: dir, FlushInterval: 20 * time.Millisecond, Ready: ready})
	h := &Handler{Sink: first, NELSink: first}
	const uploads = 5
	for i := range uploads {
		r := httptest.NewRequest("POST", "/reports", bytes.NewReader(nelUpload("https://h3.rum.example", 3)))
		r.Header.Set("Content-Type", "application/reports+json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != 204 {
			t.Fatalf("upload %d: %d %q", i, rec.Code, rec.Body.String())
		}
		// A run in the same spool, between the uploads.
		if err := first.Accept(context.Background(), testRun(t, "nel-mix")); err != nil {
			t.Fatal(err)
		}
	}
	// Acknowledged before ClickHouse took anything: the spool holds it.
	if n := countRows(t, conn, "SELECT count() FROM nel_reports"); n != 0 {
		t.Fatalf("%d rows inserted before the store was ready", n)
	}
	if first.Stats().SpoolBytes == 0 {
		t.Fatal("acknowledged uploads are not in the spool")
	}
	close(ready)
	waitFor(t, "the uploads in ClickHouse", func() bool {
		return countRows(t, conn, "SELECT count() FROM nel_reports") == uploads*3 && countRows(t, conn, "SELECT count() FROM samples") == uploads*12
	})
	if got := counterValue(t, first.m.acceptedNEL); got != uploads*3 {
		t.Errorf("accepted NEL reports = %v, want %d", got, uploads*3)
	}
	var origin, proto, typ string
	if err := conn.QueryRow(context.Background(), "SELECT any(origin), any(toString(protocol)), any(type) FROM nel_reports").Scan(&origin, &proto, &typ); err != nil {
		t.Fatal(err)
	}
	if origin != "https://h3.rum.example" || proto != "h3" || typ != "http.error" {
		t.Errorf("stored origin %q protocol %q type %q", origin, proto, typ)
	}

	second := replayCopy(t, conn, dir)
	if n := countRows(t, conn, "SELECT count() FROM nel_reports"); n != uploads*3 {
		t.Errorf("%d NEL rows after the replay, want %d: replayed uploads stored twice", n, uploads*3)
	}
	if n := countRows(t, conn, "SELECT count() FROM samples"); n != uploads*12 {
		t.Errorf("%d sample rows after the replay, want %d", n, uploads*12)
	}
	if got := counterValue(t, second.m.replaySkippedNEL); got != uploads {
		t.Errorf("replay skipped %v NEL uploads, want %d", got, uploads)
	}
}

// TestNELPageOrigin posts, over a real listener, reports whose referrers
// are an allowed page, a page the collector's allowlist does not name and
// none: the report of the page that may not post beacons is not stored
// (its origin never reaches the table) and is counted, the others are.
func TestNELPageOrigin(t *testing.T) {
	const h3 = "https://h3.rum.example"
	origins, err := access.ParseOrigins([]string{"https://shop.example"})
	if err != nil {
		t.Fatal(err)
	}
	sink := &recordingSink{}
	reg := prometheus.NewRegistry()
	h := &Handler{Sink: &recordingSink{}, NELSink: sink, Origins: origins, Registerer: reg}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	report := func(referrer string) string {
		return `{"age":10,"body":{"elapsed_time":5,"phase":"application","protocol":"h3","referrer":` + strconv.Quote(referrer) +
			`,"sampling_fraction":1,"status_code":404,"type":"http.error"},"type":"network-error","url":"` + h3 + `/missing"}`
	}
	body := "[" + strings.Join([]string{report("https://shop.example/cart?id=7"), report("https://evil.example/x"),
		report("https://SHOP.example:443/"), report("")}, ",") + "]"
	resp, err := http.Post(srv.URL+"/reports", "application/reports+json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("upload: %d, want 204", resp.StatusCode)
	}
	var pages []string
	for _, b := range sink.batches {
		for _, r := range b.Reports {
			pages = append(pages, r.PageOrigin)
		}
	}
	if want := []string{"https://shop.example", "https://shop.example", ""}; !reflect.DeepEqual(pages, want) {
		t.Errorf("stored page origins %q, want %q", pages, want)
	}
	if n := metricValue(t, reg, "h3rum_ingest_nel_ignored_reports_total", ignoredPageNotAllowed); n != 1 {
		t.Errorf("ignored{%s} = %v, want 1", ignoredPageNotAllowed, n)
	}
}
