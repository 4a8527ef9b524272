package agent

import (
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/collector/agent/agenttest"
)

// testConfig is a Config for the origins o, logging to the test.
func testConfig(t testing.TB, o *agenttest.Origins) *Config {
	return &Config{H3Origin: o.H3, H2Origin: o.H2, Roots: o.Roots, Resolve: o.Resolve, Site: "lab",
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))}
}

// TestRun runs the protocol against a real origin server, in both orders,
// and checks the report and the handshakes against what the server says
// it saw (Server-Timing).
func TestRun(t *testing.T) {
	o := agenttest.Start(t)
	for _, order := range []string{"h3first", "h2first"} {
		t.Run(order, func(t *testing.T) {
			c := testConfig(t, o)
			c.Order, c.Bytes = order, 1000
			res, err := c.Run(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, res.Report, order, 2, 5, 1000)
			checkHandshakes(t, res)
			checkEnvelope(t, res)
		})
	}
}

// rtt is agenttest.QUICRTT in ms, less the rounding to 1 µs.
const rtt = float64(agenttest.QUICRTT/time.Microsecond)/1000 - 0.001

// checkReport checks a complete run's report on a healthy loopback path
// (the H3 origin's with agenttest.QUICRTT).
func checkReport(t *testing.T, r *beacon.Report, order string, w, n, b int) {
	t.Helper()
	wire, err := beacon.Encode(r)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if got, err := beacon.Decode(wire); err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("Decode(Encode(report)): %v\n%s", err, wire)
	}
	wantPar := beacon.Params{Parallel: n, Warmup: w, Bytes: b, Order: order, Trigger: "manual"}
	if r.Version != beacon.Version || r.AltSvc != beacon.AltSvcNone || r.Site != "lab" || r.PageOrigin != "null" || r.BeaconVersion != BeaconVersion || r.Partial ||
		r.MainThreadMS != 0 || r.Params != wantPar {
		t.Errorf("report header %+v, params want %+v", r, wantPar)
	}
	if c := r.Client; len(c.Brands) != 1 || c.Brands[0] != (beacon.Brand{Brand: "h3rum-agent", Version: "1"}) ||
		c.Platform != runtime.GOOS || c.Mobile || c.Webdriver || c.RTT != -1 || c.Downlink != -1 {
		t.Errorf("client %+v", c)
	}
	if !strings.Contains(string(wire), `"o":"null"`) || !strings.Contains(string(wire), `"c":{"br":[["h3rum-agent","1"]],"pf":"`+runtime.GOOS+`","mb":false,"wd":false}`) {
		t.Errorf("page origin or client on the wire: %s", wire)
	}
	if len(r.Samples) != w+1+2*n {
		t.Fatalf("%d samples, want %d", len(r.Samples), w+1+2*n)
	}
	first, second := beacon.ProtoH3, beacon.ProtoH2
	if order == "h2first" {
		first, second = second, first
	}
	warmCID := map[beacon.Proto]string{}
	var batchEnd [2]float64 // end of each parallel batch's last request, ms
	for i, s := range r.Samples {
		want, ph := second, beacon.PhaseParallel
		switch {
		case i < w:
			want, ph = beacon.ProtoH3, beacon.PhaseWarmup
		case i == w:
			want, ph = beacon.ProtoH2, beacon.PhaseWarmup
		case i <= w+n:
			want = first
		}
		sv := s.Server
		if s.Seq != i || s.Phase != ph || s.Want != want || s.Got != want || s.Error != "" || !sv.Present || sv.Proto != want {
			t.Errorf("sample %d: %+v; want seq %d, %s, %s over %s", i, s, i, ph, want, want)
			continue
		}
		if s.Duration <= 0 || s.TTFB < 0 || s.Download < 0 || s.TransferSize < b || sv.ConnID == "" || sv.ConnReqs < 1 ||
			sv.RTT <= 0 || sv.Resumed || sv.EarlyData {
			t.Errorf("sample %d: %+v", i, s)
		}
		// Each origin's connection is opened by its first warm-up, which
		// shows the set-up; every later request reuses it, parallel ones
		// included.
		opened := i == 0 || i == w
		if opened {
			warmCID[want] = sv.ConnID
			if s.Reused || s.Connect <= 0 || s.TLS <= 0 || sv.ConnReqs != 1 || want == beacon.ProtoH3 && (s.Connect < rtt || s.Duration < 2*rtt) {
				t.Errorf("sample %d opened the connection: reused %v, connect %v, tls %v, duration %v, creq %d", i, s.Reused, s.Connect, s.TLS, s.Duration, sv.ConnReqs)
			}
			continue
		}
		if !s.Reused || s.Connect != 0 || s.DNS != 0 || s.TLS != 0 {
			t.Errorf("sample %d: reused %v, dns %v, connect %v, tls %v; want a reused connection", i, s.Reused, s.DNS, s.Connect, s.TLS)
		}
		if sv.ConnID != warmCID[want] {
			t.Errorf("sample %d (%s, %s) on connection %s, not the warm-up's %s", i, ph, want, sv.ConnID, warmCID[want])
		}
		if want == beacon.ProtoH3 && s.TTFB < rtt {
			t.Errorf("sample %d: time to first byte %v ms over HTTP/3, below the path's round trip %v ms", i, s.TTFB, rtt)
		}
		if ph == beacon.PhaseParallel {
			batch := 0
			if i > w+n {
				batch = 1
			}
			batchEnd[batch] = max(batchEnd[batch], s.Start+s.Duration)
		}
	}
	// The second batch starts when the first has finished.
	for _, s := range r.Samples[w+n+1:] {
		if s.Start < batchEnd[0]-0.002 {
			t.Errorf("sample %d of the second batch started at %v ms, before the first batch ended at %v ms", s.Seq, s.Start, batchEnd[0])
		}
	}
}

// checkHandshakes checks the handshake samples against the server's view:
// each on a new connection, resumed and early data as the step intends,
// and one key exchange for all; and, over HTTP/3, against the path's round
// trip R: a full or resumed handshake and its request take at least 2R, a
// 0-RTT request at least R (TestHandshakeRoundTrips checks the upper side).
func checkHandshakes(t *testing.T, res *Result) {
	t.Helper()
	want := []struct {
		proto          beacon.Proto
		resumed, early bool
		rtts           float64 // round trips of the H3 path, at least
	}{
		{beacon.ProtoH3, false, false, 2}, // full
		{beacon.ProtoH3, true, false, 2},  // resumed
		{beacon.ProtoH3, true, true, 1},   // 0-RTT
		{beacon.ProtoH2, false, false, 0}, // full
		{beacon.ProtoH2, true, false, 0},  // resumed
	}
	if len(res.Handshakes) != len(want) {
		t.Fatalf("%d handshakes, want %d", len(res.Handshakes), len(want))
	}
	cids := map[string]bool{}
	for _, s := range res.Report.Samples {
		cids[s.Server.ConnID] = true
	}
	for i, s := range res.Handshakes {
		w, sv := want[i], s.Server
		if s.Seq != i || s.Phase != beacon.PhaseHandshake || s.Want != w.proto || s.Got != w.proto || s.Error != "" || s.Reused {
			t.Errorf("handshake %d: %+v", i, s)
			continue
		}
		if !sv.Present || sv.Resumed != w.resumed || sv.EarlyData != w.early || sv.ConnReqs != 1 || cids[sv.ConnID] {
			t.Errorf("handshake %d (%s): server saw resumed=%v early=%v creq=%d cid=%s; want resumed=%v early=%v on a new connection",
				i, w.proto, sv.Resumed, sv.EarlyData, sv.ConnReqs, sv.ConnID, w.resumed, w.early)
		}
		cids[sv.ConnID] = true
		if s.Connect <= 0 || s.TLS <= 0 || s.Duration <= 0 || s.TTFB < 0 || s.Download < 0 {
			t.Errorf("handshake %d: connect %v, tls %v, duration %v, ttfb %v, download %v", i, s.Connect, s.TLS, s.Duration, s.TTFB, s.Download)
		}
		if w.proto == beacon.ProtoH3 && (s.Duration < w.rtts*rtt || s.Connect < rtt) {
			t.Errorf("handshake %d (%s): %v ms, connect %v ms; want at least %v and %v round trips of %v ms", i, handshakeSteps[i].name,
				s.Duration, s.Connect, w.rtts, 1, rtt)
		}
		if res.curves[i] == 0 || res.curves[i] != res.curves[0] {
			t.Errorf("handshake %d used key exchange %v, the first %v", i, res.curves[i], res.curves[0])
		}
		t.Logf("%-10s connect %7.3f ms  total %7.3f ms  (ttfb %.3f, download %.3f)", handshakeSteps[i].name, s.Connect, s.Duration, s.TTFB, s.Download)
	}
}

// checkEnvelope checks the message for the WebSocket ingest: it is what
// beacon.WSMessage reads, and its parts decode to the result.
func checkEnvelope(t *testing.T, res *Result) {
	t.Helper()
	msg, err := res.Envelope()
	if err != nil {
		t.Fatal(err)
	}
	var env beacon.WSMessage
	if err := json.Unmarshal(msg, &env); err != nil {
		t.Fatal(err)
	}
	if env.ID != hex.EncodeToString(res.Report.RunID[:]) || env.Source != "agent" {
		t.Errorf("envelope id %q source %q", env.ID, env.Source)
	}
	if rep, err := beacon.Decode(env.Report); err != nil || !reflect.DeepEqual(rep, res.Report) {
		t.Errorf("the envelope's report: %v\n%s", err, env.Report)
	}
	if hs, err := beacon.DecodeHandshakes(env.Handshakes); err != nil || !reflect.DeepEqual(hs, res.Handshakes) {
		t.Errorf("the envelope's handshakes: %v\n%s", err, env.Handshakes)
	}
	if !strings.Contains(string(env.Handshakes), `"ph":"h"`) {
		t.Errorf("handshakes on the wire: %s", env.Handshakes)
	}
}

// Over a path with round trip R, a QUIC full handshake and its request
// take about 2R and a 0-RTT request about R. The medians of a few rounds
// are compared, so that a stall of this busy machine cannot decide it.
func TestHandshakeRoundTrips(t *testing.T) {
	o := agenttest.Start(t)
	c := testConfig(t, o)
	c.Logger = nil
	const rounds = 5
	byStep := make([][]float64, len(handshakeSteps))
	for range rounds {
		r := c.newRun()
		r.t0 = time.Now()
		hs, _, err := r.handshakes(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range hs {
			if s.Error != "" {
				t.Fatalf("handshake %d: %+v", i, s)
			}
			byStep[i] = append(byStep[i], s.Duration)
		}
	}
	median := func(i int) float64 { slices.Sort(byStep[i]); return byStep[i][rounds/2] }
	R := float64(agenttest.QUICRTT) / float64(time.Millisecond)
	for i, step := range handshakeSteps {
		t.Logf("%-10s median %7.3f ms = %.2f R (R = %v ms over QUIC; TCP is plain loopback)", step.name, median(i), median(i)/R, R)
	}
	full, resumed, zeroRTT := median(0), median(1), median(2)
	if full < 2*rtt || resumed < 2*rtt || zeroRTT < rtt || zeroRTT >= full-R/2 {
		t.Errorf("medians: full %v ms, resumed %v ms, 0-RTT %v ms; want ≥ 2R, ≥ 2R, and between R and a round trip less than the full one (R = %v ms)",
			full, resumed, zeroRTT, R)
	}
}

// No warm-up and one request per batch is a valid run too: the first
// request to the H3 origin opens its connection.
func TestRunWithoutWarmup(t *testing.T) {
	o := agenttest.Start(t)
	c := testConfig(t, o)
	c.Warmup, c.Parallel = -1, 1
	res, err := c.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	r := res.Report
	if r.Params.Warmup != 0 || r.Params.Parallel != 1 || len(r.Samples) != 3 {
		t.Fatalf("params %+v, %d samples", r.Params, len(r.Samples))
	}
	if _, err := beacon.Encode(r); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.Samples {
		if s.Error != "" || s.Got != s.Want {
			t.Errorf("sample %+v", s)
		}
		if s.Want == beacon.ProtoH3 && (s.Reused || s.Connect <= 0) {
			t.Errorf("the first H3 request did not open the connection: %+v", s)
		}
	}
}

// Requests that fail become samples with error codes, as a browser
// reports them, and the report stays valid: nothing listens on the H2
// origin (refused: "network"), and the H3 origin's port never answers
// over UDP ("timeout").
func TestRunFailures(t *testing.T) {
	o := agenttest.Start(t)
	c := testConfig(t, o)
	c.H3Origin = o.H2                  // TCP only: QUIC packets go unanswered
	c.H2Origin = "https://localhost:1" // nothing listens
	c.Timeout = 300 * time.Millisecond
	c.Parallel = 2
	res, err := c.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := beacon.Encode(res.Report); err != nil {
		t.Fatalf("a report of failures does not encode: %v", err)
	}
	for _, s := range append(res.Report.Samples, res.Handshakes...) {
		want := "network"
		if s.Want == beacon.ProtoH3 {
			want = "timeout"
		}
		if s.Error != want || s.Duration != -1 || s.Server.Present || s.Got != beacon.ProtoUnknown {
			t.Errorf("sample %d (%s, %s): %+v, want error %q without timings", s.Seq, s.Phase, s.Want, s, want)
		}
	}
	if _, err := beacon.EncodeHandshakes(res.Handshakes); err != nil {
		t.Errorf("failed handshakes do not encode: %v", err)
	}
	// Without a full handshake there is no ticket: the resumed and 0-RTT
	// steps are left out, not timed as other full handshakes.
	var seqs []int
	for _, s := range res.Handshakes {
		seqs = append(seqs, s.Seq)
	}
	if !slices.Equal(seqs, []int{0, 3}) {
		t.Errorf("handshake steps %v, want only the full ones (0, 3)", seqs)
	}
}

// A run closes everything it opened: connections, UDP sockets, and the
// goroutines that serve them, on the client and so on the server.
func TestRunLeavesNothingOpen(t *testing.T) {
	o := agenttest.Start(t)
	c := testConfig(t, o)
	c.Logger = nil
	if _, err := c.Run(t.Context()); err != nil { // warm up lazily started goroutines
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	before := runtime.NumGoroutine()
	if _, err := c.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after the run, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{H3Origin: "https://h3.lab:8443", H2Origin: "https://h2.lab", Order: "random"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, mutate := range map[string]func(*Config){
		"no h3 origin":      func(c *Config) { c.H3Origin = "" },
		"http origin":       func(c *Config) { c.H2Origin = "http://h2.lab" },
		"origin with path":  func(c *Config) { c.H3Origin = "https://h3.lab/probe" },
		"origin with query": func(c *Config) { c.H3Origin = "https://h3.lab?x=1" },
		"parallel 21":       func(c *Config) { c.Parallel = 21 },
		"negative parallel": func(c *Config) { c.Parallel = -1 },
		"warmup 11":         func(c *Config) { c.Warmup = 11 },
		"negative bytes":    func(c *Config) { c.Bytes = -1 },
		"bytes over 16 MiB": func(c *Config) { c.Bytes = beacon.MaxBytes + 1 },
		"order":             func(c *Config) { c.Order = "h1first" },
		"site":              func(c *Config) { c.Site = "my site" },
		"resolve":           func(c *Config) { c.Resolve = map[string]string{"h3.lab": "h3.example"} },
		"negative timeout":  func(c *Config) { c.Timeout = -time.Second },
	} {
		c := ok
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %q is not one line", name, err)
		}
	}
}

func TestLoopValidate(t *testing.T) {
	c := Config{H3Origin: "https://h3.lab", H2Origin: "https://h2.lab"}
	ok := Loop{Config: &c, Count: 1, Concurrency: 1, Interval: time.Minute}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid loop: %v", err)
	}
	bad := Config{H3Origin: "https://h3.lab"}
	for name, mutate := range map[string]func(*Loop){
		"negative count":   func(l *Loop) { l.Count = -1 },
		"zero interval":    func(l *Loop) { l.Interval = 0 },
		"no workers":       func(l *Loop) { l.Concurrency = 0 },
		"too many workers": func(l *Loop) { l.Concurrency = MaxConcurrency + 1 },
		"bad config":       func(l *Loop) { l.Config = &bad },
	} {
		l := ok
		mutate(&l)
		if err := l.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		} else if err := l.Run(t.Context()); err == nil {
			t.Errorf("%s: Run ran", name)
		}
	}
}

func TestResolveSet(t *testing.T) {
	r := Resolve{}
	if err := r.Set("h3.lab=127.0.0.1, h2.lab=::1"); err != nil {
		t.Fatal(err)
	}
	if err := r.Set("h3.lab=127.0.0.2"); err != nil {
		t.Fatal(err)
	}
	if got, want := r.String(), "h2.lab=::1,h3.lab=127.0.0.2"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, v := range []string{"h3.lab", "=127.0.0.1", "h3.lab=h3.example", "h3.lab=127.0.0.1,h2.lab"} {
		if err := (Resolve{}).Set(v); err == nil {
			t.Errorf("Set(%q) accepted", v)
		}
	}
}

func TestLoadRoots(t *testing.T) {
	o := agenttest.Start(t)
	if roots, err := LoadRoots(o.CAFile); err != nil || !roots.Equal(o.Roots) {
		t.Errorf("LoadRoots(%s) = %v, %v; want the development CA", o.CAFile, roots, err)
	}
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{notPEM, filepath.Join(t.TempDir(), "missing.pem")} {
		if _, err := LoadRoots(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("LoadRoots(%s) = %v; want an error naming the file", p, err)
		}
	}
}
