package agent

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest"
	"github.com/h3rum/h3rum/ingest/store"
)

const testToken = "agent-token-0123456789abcdef0123456789"

// sinkFunc makes a function an ingest.Sink.
type sinkFunc func(context.Context, store.Run) error

func (f sinkFunc) Accept(ctx context.Context, run store.Run) error { return f(ctx, run) }

// testResult is a small valid result, without touching the network.
func testResult(t *testing.T, site string) *Result {
	t.Helper()
	r := (&Config{H3Origin: "https://h3.lab", H2Origin: "https://h2.lab", Site: site, Warmup: -1, Parallel: 1}).newRun()
	rep := r.report()
	for q, want := range []beacon.Proto{beacon.ProtoH2, beacon.ProtoH3, beacon.ProtoH2} {
		ph := beacon.PhaseParallel
		if q == 0 {
			ph = beacon.PhaseWarmup
		}
		if q > 0 && r.order == "h2first" {
			want = []beacon.Proto{beacon.ProtoH2, beacon.ProtoH3}[q-1]
		}
		rep.Samples = append(rep.Samples, beacon.Sample{Seq: q, Phase: ph, Want: want, Got: want, Start: float64(q), Duration: 1,
			TTFB: 0.5, Download: 0.5, Reused: q > 0, TransferSize: 100, Server: noServerTiming})
	}
	hs := []beacon.Sample{{Seq: 0, Phase: beacon.PhaseHandshake, Want: beacon.ProtoH3, Got: beacon.ProtoH3, Start: 5, Duration: 2,
		Connect: 1, TLS: 1, TTFB: 0.5, Download: 0.1, TransferSize: 100, Server: noServerTiming}}
	return &Result{Report: rep, Handshakes: hs}
}

// startIngest serves a real ingest.Handler's WebSocket on loopback.
func startIngest(t *testing.T, sink ingest.Sink) (wsURL string) {
	t.Helper()
	h := &ingest.Handler{Sink: sink, AgentToken: testToken, Sites: []string{"lab"}}
	if err := h.Init(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/ingest/ws"
}

func testSender(t *testing.T, url string) *Sender {
	s := &Sender{URL: url, Token: testToken, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))}
	t.Cleanup(func() { s.Close() })
	return s
}

// Runs reach the ingest as the agent's, handshakes included, concurrent
// Sends share the connection, and a run the collector defers (busy) is
// sent again until it is stored.
func TestSenderDelivers(t *testing.T) {
	var (
		mu     sync.Mutex
		stored []store.Run
		calls  atomic.Int32
	)
	url := startIngest(t, sinkFunc(func(_ context.Context, run store.Run) error {
		if calls.Add(1) == 1 {
			return ingest.ErrBusy // the first attempt is deferred
		}
		mu.Lock()
		stored = append(stored, run)
		mu.Unlock()
		return nil
	}))
	s := testSender(t, url)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := s.Send(t.Context(), testResult(t, "lab")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(stored) != 3 || calls.Load() != 4 {
		t.Fatalf("%d runs stored in %d attempts, want 3 in 4", len(stored), calls.Load())
	}
	for _, run := range stored {
		if run.Source != store.SourceAgent || len(run.Handshakes) != 1 || run.Handshakes[0].Phase != beacon.PhaseHandshake ||
			run.Report.BeaconVersion != BeaconVersion {
			t.Errorf("stored run: source %q, %d handshakes, bv %q", run.Source, len(run.Handshakes), run.Report.BeaconVersion)
		}
	}
}

// A run the collector will never take is not sent again: Send returns a
// *RefusedError with the collector's reason.
func TestSenderRefused(t *testing.T) {
	url := startIngest(t, sinkFunc(func(context.Context, store.Run) error { return nil }))
	s := testSender(t, url)
	err := s.Send(t.Context(), testResult(t, "elsewhere"))
	var re *RefusedError
	if !errors.As(err, &re) || re.Reason != beacon.ReasonSiteNotAllowed {
		t.Fatalf("Send: %v, want a refusal with reason %s", err, beacon.ReasonSiteNotAllowed)
	}
	// The connection is still good for the next run.
	if err := s.Send(t.Context(), testResult(t, "lab")); err != nil {
		t.Fatal(err)
	}
}

// A wrong token is an error at once, not a reason to retry forever.
func TestSenderWrongToken(t *testing.T) {
	url := startIngest(t, sinkFunc(func(context.Context, store.Run) error { return nil }))
	s := testSender(t, url)
	s.Token = "wrong"
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := s.Send(ctx, testResult(t, "lab"))
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Send with a wrong token: %v, want the 401 at once", err)
	}
}

// An ingest that is not there yet is retried with backoff until it is.
func TestSenderWaitsForTheIngest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused until the ingest starts below

	h := &ingest.Handler{Sink: sinkFunc(func(context.Context, store.Run) error { return nil }), AgentToken: testToken}
	srv := &http.Server{Handler: h}
	t.Cleanup(func() { srv.Close() })
	go func() {
		time.Sleep(700 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		srv.Serve(ln)
	}()
	s := testSender(t, "ws://"+addr+"/ingest/ws")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := s.Send(ctx, testResult(t, "lab")); err != nil {
		t.Fatal(err)
	}
}

// A connection that breaks before the acknowledgement is replaced, and the
// run sent again on the new one (so it may be stored twice: the ingest
// deduplicates by run id).
func TestSenderResendsAfterABrokenConnection(t *testing.T) {
	var (
		mu       sync.Mutex
		hijacked []net.Conn
		calls    atomic.Int32
	)
	h := &ingest.Handler{AgentToken: testToken, Sink: sinkFunc(func(context.Context, store.Run) error {
		if calls.Add(1) == 1 {
			mu.Lock()
			for _, c := range hijacked {
				c.Close() // the collector's side drops before it can acknowledge
			}
			mu.Unlock()
		}
		return nil
	})}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateHijacked {
			mu.Lock()
			hijacked = append(hijacked, c)
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	s := testSender(t, "ws"+strings.TrimPrefix(srv.URL, "http")+"/ingest/ws")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := s.Send(ctx, testResult(t, "lab")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls.Load() != 2 || len(hijacked) != 2 {
		t.Errorf("%d attempts on %d connections, want 2 on 2", calls.Load(), len(hijacked))
	}
}

func TestSenderValidate(t *testing.T) {
	for _, s := range []*Sender{
		{URL: "https://collector/ingest/ws", Token: "t"},
		{URL: "collector/ingest/ws", Token: "t"},
		{URL: "wss://collector/ingest/ws"},
		{URL: "wss://collector/ingest/ws", Token: "t", Resolve: map[string]string{"collector": "nowhere"}},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%s (token %q, resolve %v): accepted", s.URL, s.Token, s.Resolve)
		}
	}
}
