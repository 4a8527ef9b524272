package origin

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/collector/internal/udprelay"
)

// testServer is a started Server with clients that trust its certificate.
type testServer struct {
	*Server
	reg  *prometheus.Registry
	pool *x509.CertPool
	h3   string // https://localhost:port of the H3 origin
	h2   string // https://localhost:port of the H2 origin
}

// startServer fills in what s leaves empty for a loopback test (free
// ports on localhost, a temporary data directory, a fresh registry),
// starts it and shuts it down when the test ends.
func startServer(t testing.TB, s *Server) *testServer {
	t.Helper()
	if s.Addr == "" {
		s.Addr = "localhost:0"
	}
	if s.H2Addr == "" {
		s.H2Addr = "localhost:0"
	}
	if s.DataDir == "" {
		s.DataDir = t.TempDir()
	}
	reg := prometheus.NewRegistry()
	if s.Registerer == nil {
		s.Registerer = reg
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if err := s.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := s.Wait(); err != nil {
			t.Errorf("Wait: %v", err)
		}
	})
	ts := &testServer{Server: s, reg: reg, pool: x509.NewCertPool()}
	if d, ok := s.DevCert(); ok {
		pem, err := os.ReadFile(d.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		ts.pool.AppendCertsFromPEM(pem)
	}
	h3, h2 := s.Addrs()
	ts.h3 = fmt.Sprintf("https://localhost:%d", h3.Port())
	ts.h2 = fmt.Sprintf("https://localhost:%d", h2.Port())
	return ts
}

// tcpClient returns a client over TCP: HTTP/2, or HTTP/1.1 with h1.
func (ts *testServer) tcpClient(t *testing.T, h1 bool, cache tls.ClientSessionCache) *http.Client {
	t.Helper()
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ts.pool, ClientSessionCache: cache},
		ForceAttemptHTTP2: !h1,
	}
	if h1 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// h3Client returns an HTTP/3 client.
func (ts *testServer) h3Client(t *testing.T, cache tls.ClientSessionCache) (*http.Client, *http3.Transport) {
	t.Helper()
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.pool, ClientSessionCache: cache}}
	t.Cleanup(func() { tr.Close() })
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, tr
}

// do sends a request and returns the response with its body read.
func do(t *testing.T, c *http.Client, method, url string, hdr http.Header) (*http.Response, string) {
	t.Helper()
	return send(t, c, method, url, nil, hdr)
}

// send sends a request with body (nil: none) and headers and returns the
// response with its body read.
func send(t *testing.T, c *http.Client, method, url string, body io.Reader, hdr http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return resp, string(b)
}

// metric returns the value of the counter or gauge name with exactly the
// given labels, 0 if absent.
// metricEventually waits (bounded) for a counter to reach want: the
// middleware counts a response after the handler returns, which may be
// after the client has read it.
func metricEventually(t *testing.T, g prometheus.Gatherer, want float64, name string, labels ...string) float64 {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := metric(t, g, name, labels...)
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func metric(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(want) {
				continue
			}
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
		}
	}
	return 0
}

func TestOriginsOverTCP(t *testing.T) {
	ts := startServer(t, &Server{})
	h3, _ := ts.Addrs()
	wantAltSvc := fmt.Sprintf(`h3=":%d"; ma=86400`, h3.Port())
	for _, tc := range []struct {
		name, base string
		h1         bool
		proto      string
		altSvc     string
	}{
		{"h3 origin over h2", ts.h3, false, "HTTP/2.0", wantAltSvc},
		{"h3 origin over h1", ts.h3, true, "HTTP/1.1", wantAltSvc},
		{"h2 origin over h2", ts.h2, false, "HTTP/2.0", "clear"},
		{"h2 origin over h1", ts.h2, true, "HTTP/1.1", "clear"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, ts.tcpClient(t, tc.h1, nil), "GET", tc.base+"/probe", nil)
			if resp.StatusCode != http.StatusNoContent || body != "" {
				t.Errorf("status %d body %q, want 204 and no body", resp.StatusCode, body)
			}
			if resp.Proto != tc.proto {
				t.Errorf("proto %s, want %s", resp.Proto, tc.proto)
			}
			if got := resp.Header.Values("Alt-Svc"); len(got) != 1 || got[0] != tc.altSvc {
				t.Errorf("Alt-Svc %q, want %q", got, tc.altSvc)
			}
			for k, v := range map[string]string{
				"Cache-Control":               "no-store",
				"Timing-Allow-Origin":         "*",
				"Access-Control-Allow-Origin": "*",
			} {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s %q, want %q", k, got, v)
				}
			}
			// Alt-Svc is on every response of the origin, not only /probe.
			resp, _ = do(t, ts.tcpClient(t, tc.h1, nil), "GET", tc.base+"/nope", nil)
			if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Alt-Svc") != tc.altSvc {
				t.Errorf("unknown path: status %d Alt-Svc %q, want 404 and %q", resp.StatusCode, resp.Header.Get("Alt-Svc"), tc.altSvc)
			}
		})
	}
}

func TestAltSvcOverride(t *testing.T) {
	ts := startServer(t, &Server{AltSvcPort: 443, AltSvcMaxAge: time.Hour})
	resp, _ := do(t, ts.tcpClient(t, false, nil), "GET", ts.h3+"/probe", nil)
	if got, want := resp.Header.Get("Alt-Svc"), `h3=":443"; ma=3600`; got != want {
		t.Errorf("Alt-Svc %q, want %q", got, want)
	}
}

func TestHTTP3(t *testing.T) {
	ts := startServer(t, &Server{})
	c, _ := ts.h3Client(t, nil)
	resp, _ := do(t, c, "GET", ts.h3+"/probe", nil)
	if resp.Proto != "HTTP/3.0" || resp.StatusCode != http.StatusNoContent {
		t.Errorf("got %s %d, want HTTP/3.0 204", resp.Proto, resp.StatusCode)
	}
	if got := resp.Header.Values("Alt-Svc"); len(got) != 0 {
		t.Errorf("HTTP/3 response carries Alt-Svc %q", got)
	}
	// Both loopback addresses answer HTTP/3 (browsers try ::1 first).
	h3, h2 := ts.Addrs()
	if len(ts.h3Socks.udp) == 2 {
		resp, _ := do(t, c, "GET", fmt.Sprintf("https://[::1]:%d/probe", h3.Port()), nil)
		if resp.Proto != "HTTP/3.0" {
			t.Errorf("over ::1: got %s", resp.Proto)
		}
	} else {
		t.Logf("no IPv6 loopback here; served %d UDP sockets", len(ts.h3Socks.udp))
	}

	// Nobody listens on UDP at the H2 origin's port: we can bind it.
	for _, host := range []string{"127.0.0.1", "::1"} {
		pc, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(int(h2.Port()))))
		if err != nil {
			if host == "::1" && !strings.Contains(err.Error(), "address already in use") {
				continue // no IPv6 here
			}
			t.Errorf("binding UDP %s at the H2 origin's port: %v (someone listens there)", host, err)
			continue
		}
		pc.Close()
	}
	// …while the H3 origin's UDP port is taken.
	if pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(h3.Port())))); err == nil {
		pc.Close()
		t.Error("the H3 origin's UDP port is free")
	}
}

// parseServerTiming parses the collector's Server-Timing header into
// name → desc or dur.
func parseServerTiming(t *testing.T, v string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range strings.Split(v, ",") {
		name, param, ok := strings.Cut(strings.TrimSpace(e), ";")
		if !ok {
			t.Fatalf("entry %q has no parameter", e)
		}
		k, val, ok := strings.Cut(param, "=")
		if !ok || (k != "desc" && k != "dur") {
			t.Fatalf("entry %q: parameter %q", e, param)
		}
		out[name] = val
	}
	return out
}

func msOf(t *testing.T, st map[string]string, name string) float64 {
	t.Helper()
	v, ok := st[name]
	if !ok {
		t.Fatalf("Server-Timing has no %s: %v", name, st)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	if i := strings.IndexByte(v, '.'); i >= 0 && len(v)-i-1 > 3 {
		t.Errorf("%s=%q has more than 3 decimals", name, v)
	}
	return f
}

func TestServerTiming(t *testing.T) {
	ts := startServer(t, &Server{})
	h3c, _ := ts.h3Client(t, nil)
	for _, tc := range []struct {
		name   string
		client *http.Client
		base   string
		proto  string
	}{
		{"h2 on h2 origin", ts.tcpClient(t, false, nil), ts.h2, "h2"},
		{"h1 on h3 origin", ts.tcpClient(t, true, nil), ts.h3, "h1"},
		{"h3", h3c, ts.h3, "h3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cid string
			for i := 1; i <= 2; i++ {
				resp, _ := do(t, tc.client, "GET", tc.base+"/probe?r="+strconv.Itoa(i), nil)
				st := parseServerTiming(t, resp.Header.Get("Server-Timing"))
				if st["proto"] != tc.proto {
					t.Errorf("proto %q, want %q", st["proto"], tc.proto)
				}
				if app := msOf(t, st, "app"); app < 0 || app > 1000 {
					t.Errorf("app %v ms is implausible", app)
				}
				rtt := msOf(t, st, "rtt")
				if rtt <= 0 || rtt > 1000 {
					t.Errorf("rtt %v ms is implausible on loopback", rtt)
				}
				if min := msOf(t, st, "minrtt"); min <= 0 || min > rtt*10 {
					t.Errorf("minrtt %v ms is implausible next to rtt %v", min, rtt)
				}
				msOf(t, st, "rttvar")
				if st["lost"] == "" {
					t.Error("no lost entry")
				}
				if st["creq"] != strconv.Itoa(i) {
					t.Errorf("request %d on the connection says creq=%q", i, st["creq"])
				}
				if i == 1 {
					cid = st["cid"]
				} else if st["cid"] != cid || cid == "" {
					t.Errorf("cid %q then %q on one connection", cid, st["cid"])
				}
				if st["resumed"] != "0" || st["early"] != "0" {
					t.Errorf("resumed=%q early=%q on a fresh connection", st["resumed"], st["early"])
				}
			}
		})
	}
}

func TestResumption(t *testing.T) {
	ts := startServer(t, &Server{})
	t.Run("quic 0-RTT", func(t *testing.T) {
		// Both connections go through a relay with a 40 ms round trip: on
		// bare loopback a busy machine can finish the resumed handshake
		// before the client writes its request, which then is not early.
		h3, _ := ts.Addrs()
		relay := udprelay.Delay(t, h3, 20*time.Millisecond)
		cache := tls.NewLRUClientSessionCache(8)
		viaRelay := func() (*http.Client, *http3.Transport) {
			c, tr := ts.h3Client(t, cache)
			tr.Dial = func(ctx context.Context, _ string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
				return quic.DialAddrEarly(ctx, relay.String(), tlsCfg, cfg)
			}
			return c, tr
		}
		c1, tr1 := viaRelay()
		resp, _ := do(t, c1, "GET", ts.h3+"/probe", nil)
		first := parseServerTiming(t, resp.Header.Get("Server-Timing"))
		// A second request gives the session ticket, sent after the
		// handshake, time to arrive before the connection closes.
		do(t, c1, "GET", ts.h3+"/probe", nil)
		tr1.Close()

		c2, _ := viaRelay()
		resp, _ = do(t, c2, http3.MethodGet0RTT, ts.h3+"/probe", nil)
		second := parseServerTiming(t, resp.Header.Get("Server-Timing"))
		if first["resumed"] != "0" || first["early"] != "0" {
			t.Errorf("first connection: resumed=%s early=%s, want 0 0", first["resumed"], first["early"])
		}
		if second["resumed"] != "1" || second["early"] != "1" {
			t.Errorf("second connection: resumed=%s early=%s, want 1 1", second["resumed"], second["early"])
		}
		if second["cid"] == first["cid"] || second["creq"] != "1" {
			t.Errorf("second connection: cid=%s creq=%s (first cid %s)", second["cid"], second["creq"], first["cid"])
		}
		if got := metricEventually(t, ts.reg, 1, "h3rum_collector_early_data_requests_total", "origin", "h3", "proto", "h3"); got != 1 {
			t.Errorf("early data requests counted %v, want 1", got)
		}
		if got := metricEventually(t, ts.reg, 1, "h3rum_collector_tls_handshakes_total", "origin", "h3", "proto", "h3", "resumed", "true"); got != 1 {
			t.Errorf("resumed h3 handshakes counted %v, want 1", got)
		}
	})
	t.Run("tcp", func(t *testing.T) {
		cache := tls.NewLRUClientSessionCache(8)
		c1 := ts.tcpClient(t, false, cache)
		do(t, c1, "GET", ts.h2+"/probe", nil)
		do(t, c1, "GET", ts.h2+"/probe", nil)
		c1.Transport.(*http.Transport).CloseIdleConnections()
		resp, _ := do(t, ts.tcpClient(t, false, cache), "GET", ts.h2+"/probe", nil)
		st := parseServerTiming(t, resp.Header.Get("Server-Timing"))
		if st["resumed"] != "1" || st["early"] != "0" {
			t.Errorf("resumed=%s early=%s, want 1 0", st["resumed"], st["early"])
		}
		if got := metricEventually(t, ts.reg, 1, "h3rum_collector_tls_handshakes_total", "origin", "h2", "proto", "h2", "resumed", "true"); got != 1 {
			t.Errorf("resumed h2 handshakes counted %v, want 1", got)
		}
	})
}

func TestMisdirected(t *testing.T) {
	ts := startServer(t, &Server{H3Host: "h3.test", H2Host: "h2.test"})
	h3c, _ := ts.h3Client(t, nil)
	tcp := ts.tcpClient(t, false, nil)
	for _, tc := range []struct {
		name   string
		client *http.Client
		base   string
		host   string
		want   int
	}{
		{"h3 origin asked for h2 host", tcp, ts.h3, "h2.test", http.StatusMisdirectedRequest},
		{"h3 origin asked for h2 host over h3", h3c, ts.h3, "h2.test:443", http.StatusMisdirectedRequest},
		{"h3 origin asked for its host", h3c, ts.h3, "H3.test", http.StatusNoContent},
		{"h2 origin asked for h3 host", tcp, ts.h2, "h3.test", http.StatusMisdirectedRequest},
		{"h2 origin asked for its host", tcp, ts.h2, "h2.test", http.StatusNoContent},
		{"h2 origin asked for another host", tcp, ts.h2, "localhost", http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", tc.base+"/probe", nil)
			req.Host = tc.host
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	if got := metricEventually(t, ts.reg, 1, "h3rum_collector_requests_total", "origin", "h3", "proto", "h2", "code", "421"); got != 1 {
		t.Errorf("421 on h3 origin over h2 counted %v, want 1", got)
	}
}

func TestBadInput(t *testing.T) {
	ts := startServer(t, &Server{MaxHeaderBytes: 4096, MaxProbeBytes: 1000})
	h3c, _ := ts.h3Client(t, nil)
	clients := []struct {
		proto  string
		client *http.Client
	}{{"h2", ts.tcpClient(t, false, nil)}, {"h1", ts.tcpClient(t, true, nil)}, {"h3", h3c}}
	big := http.Header{"X-Big": {strings.Repeat("a", 5000)}}
	for _, tc := range []struct {
		name     string
		method   string
		path     string
		hdr      http.Header
		want     int
		inBody   string
		wantHdrs map[string]string
	}{
		{"wrong method", "DELETE", "/probe", nil, 405, "method not allowed", map[string]string{"Allow": "GET, HEAD, POST, OPTIONS"}},
		{"wrong method healthz", "POST", "/healthz", nil, 405, "method not allowed", map[string]string{"Allow": "GET, HEAD"}},
		{"bytes not a number", "GET", "/probe?bytes=abc", nil, 400, `bytes must be a non-negative integer, got "abc"`, nil},
		{"bytes negative", "GET", "/probe?bytes=-1", nil, 400, "non-negative", nil},
		{"bytes empty", "GET", "/probe?x=1&bytes=", nil, 400, "non-negative", nil},
		{"bytes over cap", "GET", "/probe?bytes=1001", nil, 400, "exceeds the maximum of 1000", nil},
		{"headers too large", "GET", "/probe", big, 431, "too large", nil},
		{"unknown path", "GET", "/nope", nil, 404, "not found", nil},
	} {
		for _, c := range clients {
			t.Run(tc.name+" "+c.proto, func(t *testing.T) {
				resp, body := do(t, c.client, tc.method, ts.h3+tc.path, tc.hdr)
				if resp.StatusCode != tc.want {
					t.Fatalf("status %d, want %d (%q)", resp.StatusCode, tc.want, body)
				}
				if !strings.Contains(body, tc.inBody) || strings.Count(body, "\n") != 1 {
					t.Errorf("body %q, want one line containing %q", body, tc.inBody)
				}
				for k, v := range tc.wantHdrs {
					if got := resp.Header.Get(k); got != v {
						t.Errorf("%s %q, want %q", k, got, v)
					}
				}
			})
		}
	}
	for _, code := range []string{"400", "404", "405", "431"} {
		want := map[string]float64{"400": 4, "404": 1, "405": 2, "431": 1}[code]
		for _, c := range clients {
			if got := metricEventually(t, ts.reg, want, "h3rum_collector_requests_total", "origin", "h3", "proto", c.proto, "code", code); got != want {
				t.Errorf("%s answers over %s counted %v, want %v", code, c.proto, got, want)
			}
		}
	}
}

func TestProbeBytes(t *testing.T) {
	ts := startServer(t, &Server{})
	h3c, _ := ts.h3Client(t, nil)
	for _, c := range []struct {
		proto  string
		client *http.Client
	}{{"h2", ts.tcpClient(t, false, nil)}, {"h3", h3c}} {
		t.Run(c.proto, func(t *testing.T) {
			resp, body := do(t, c.client, "GET", ts.h3+"/probe?r=1&bytes=100000", nil)
			if resp.StatusCode != 200 || len(body) != 100000 || resp.Header.Get("Content-Type") != "application/octet-stream" {
				t.Errorf("status %d, %d bytes, type %q; want 200, 100000, application/octet-stream",
					resp.StatusCode, len(body), resp.Header.Get("Content-Type"))
			}
			if resp.Header.Get("Server-Timing") == "" {
				t.Error("no Server-Timing")
			}
			resp, body = do(t, c.client, "HEAD", ts.h3+"/probe?bytes=5000", nil)
			if resp.StatusCode != 200 || body != "" || resp.ContentLength != 5000 {
				t.Errorf("HEAD: status %d body %d bytes length %d", resp.StatusCode, len(body), resp.ContentLength)
			}
			req, _ := http.NewRequestWithContext(t.Context(), "POST", ts.h3+"/probe", strings.NewReader(strings.Repeat("x", 50000)))
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 204 {
				t.Errorf("POST: status %d", resp.StatusCode)
			}
			resp, _ = do(t, c.client, "GET", ts.h3+"/probe?bytes=0", nil)
			if resp.StatusCode != 204 {
				t.Errorf("bytes=0: status %d, want 204", resp.StatusCode)
			}
		})
	}
}

func TestCORS(t *testing.T) {
	ts := startServer(t, &Server{AllowOrigins: []string{"https://page.example", "http://localhost:8080"}})
	c := ts.tcpClient(t, false, nil)
	for _, tc := range []struct {
		name   string
		method string
		hdr    http.Header
		want   map[string]string
	}{
		{"allowed", "GET", http.Header{"Origin": {"https://page.example"}}, map[string]string{
			"Access-Control-Allow-Origin": "https://page.example", "Timing-Allow-Origin": "https://page.example",
			"Vary": "Origin"}},
		{"allowed with port", "GET", http.Header{"Origin": {"http://localhost:8080"}}, map[string]string{
			"Access-Control-Allow-Origin": "http://localhost:8080"}},
		{"other origin", "GET", http.Header{"Origin": {"https://evil.example"}}, map[string]string{
			"Access-Control-Allow-Origin": "", "Timing-Allow-Origin": "", "Vary": "Origin"}},
		{"preflight", "OPTIONS", http.Header{"Origin": {"https://page.example"},
			"Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"content-type"}},
			map[string]string{"Access-Control-Allow-Origin": "https://page.example",
				"Access-Control-Allow-Methods": "GET, HEAD, POST, OPTIONS", "Access-Control-Allow-Headers": "content-type",
				"Access-Control-Max-Age": "86400"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := do(t, c, tc.method, ts.h2+"/probe", tc.hdr)
			if resp.StatusCode != 204 {
				t.Errorf("status %d, want 204", resp.StatusCode)
			}
			for k, v := range tc.want {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestHealthzMetricsEcho(t *testing.T) {
	ts := startServer(t, &Server{Echo: true, MetricsAddr: "127.0.0.1:0"})
	c := ts.tcpClient(t, false, nil)
	resp, body := do(t, c, "GET", ts.h2+"/healthz", nil)
	if resp.StatusCode != 200 || body != "ok\n" {
		t.Errorf("healthz: %d %q", resp.StatusCode, body)
	}
	resp, body = do(t, c, "GET", ts.h3+"/echo?x=1", http.Header{"X-Test": {"hello"}})
	if resp.StatusCode != 200 || !strings.Contains(body, "GET /echo?x=1 HTTP/2.0") || !strings.Contains(body, "X-Test: hello") {
		t.Errorf("echo: %d %q", resp.StatusCode, body)
	}
	do(t, c, "GET", ts.h3+"/probe", nil)

	metricsURL := "http://" + ts.MetricsAddrPort().String() + "/metrics"
	plain := &http.Client{Timeout: 10 * time.Second}
	resp, body = do(t, plain, "GET", metricsURL, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("metrics: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`h3rum_collector_requests_total{code="200",origin="h2",proto="h2"} 1`,
		`h3rum_collector_requests_total{code="204",origin="h3",proto="h2"} 1`,
		`h3rum_collector_connections_total{origin="h3",transport="tcp"} 1`,
		`h3rum_collector_tls_handshakes_total{origin="h2",proto="h2",resumed="false"} 1`,
		`h3rum_collector_probe_handling_seconds_count{proto="h2"} 1`,
		`h3rum_collector_open_connections{origin="h3",transport="tcp"} 1`,
		`h3rum_collector_connections_refused_total{origin="h3",reason="per_addr_cap",transport="quic"} 0`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, tc := range []struct {
		method, url string
		want        int
	}{
		{"POST", metricsURL, http.StatusMethodNotAllowed},
		{"GET", "http://" + ts.MetricsAddrPort().String() + "/healthz", http.StatusNotFound},
	} {
		if resp, _ := do(t, plain, tc.method, tc.url, nil); resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.url, resp.StatusCode, tc.want)
		}
	}

	// The origins do not serve /metrics, over any protocol.
	for _, pc := range ts.protoClients(t) {
		for _, base := range []string{ts.h3, ts.h2} {
			if pc.proto == "h3" && base == ts.h2 {
				continue // the H2 origin has no HTTP/3
			}
			if resp, _ := do(t, pc.client, "GET", base+"/metrics", nil); resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s/metrics over %s: %d, want 404", base, pc.proto, resp.StatusCode)
			}
		}
	}

	// Shutdown closes the metrics listener too.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ts.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", ts.MetricsAddrPort().String()); err == nil {
		conn.Close()
		t.Error("the metrics listener still accepts after Shutdown")
	}

	off := startServer(t, &Server{})
	resp, _ = do(t, off.tcpClient(t, false, nil), "GET", off.h3+"/echo", nil)
	if resp.StatusCode != 404 {
		t.Errorf("echo while off: %d, want 404", resp.StatusCode)
	}
	if ap := off.MetricsAddrPort(); ap.IsValid() {
		t.Errorf("metrics listening on %v without MetricsAddr", ap)
	}
	// A metrics listener needs metrics.
	noMetrics := &Server{Addr: "localhost:0", H2Addr: "localhost:0", DataDir: t.TempDir(), MetricsAddr: "127.0.0.1:0"}
	if err := noMetrics.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "no metrics to serve") {
		noMetrics.Shutdown(t.Context())
		t.Errorf("Start with MetricsAddr and no Registerer: %v", err)
	}
}

func TestDelegatedHandler(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "a")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("Flush through the wrapper: %v", err)
		}
		io.WriteString(w, "b")
	})
	mux.HandleFunc("GET /hijack", func(w http.ResponseWriter, r *http.Request) {
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("ResponseWriter is no http.Hijacker")
			return
		}
		conn, rw, err := hj.Hijack()
		if err != nil {
			t.Errorf("Hijack: %v", err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		rw.Flush()
	})
	ts := startServer(t, &Server{Handler: mux})
	h3c, _ := ts.h3Client(t, nil)
	for _, c := range []struct {
		proto  string
		client *http.Client
	}{{"h1", ts.tcpClient(t, true, nil)}, {"h2", ts.tcpClient(t, false, nil)}, {"h3", h3c}} {
		resp, body := do(t, c.client, "GET", ts.h3+"/stream", nil)
		if resp.StatusCode != 202 || body != "ab" {
			t.Errorf("%s: stream: %d %q", c.proto, resp.StatusCode, body)
		}
		if got := metricEventually(t, ts.reg, 1, "h3rum_collector_requests_total", "origin", "h3", "proto", c.proto, "code", "202"); got != 1 {
			t.Errorf("%s: 202 counted %v, want 1", c.proto, got)
		}
	}
	resp, body := do(t, ts.tcpClient(t, true, nil), "GET", ts.h3+"/hijack", nil)
	if resp.StatusCode != 200 || body != "hijacked" {
		t.Errorf("hijack: %d %q", resp.StatusCode, body)
	}
	if got := metricEventually(t, ts.reg, 1, "h3rum_collector_requests_total", "origin", "h3", "proto", "h1", "code", "101"); got != 1 {
		t.Errorf("hijacked connection counted %v, want 1 as 101", got)
	}
}

func TestGracefulShutdown(t *testing.T) {
	for _, proto := range []string{"h2", "h3"} {
		t.Run(proto, func(t *testing.T) {
			started := make(chan struct{})
			release := make(chan struct{})
			s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				<-release
				io.WriteString(w, "finished")
			})}
			ts := startServer(t, s)
			var c *http.Client
			var h3tr *http3.Transport
			if proto == "h3" {
				c, h3tr = ts.h3Client(t, nil)
			} else {
				c = ts.tcpClient(t, false, nil)
			}
			type result struct {
				body string
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := c.Get(ts.h3 + "/slow")
				if err != nil {
					done <- result{err: err}
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if h3tr != nil {
					h3tr.Close() // what a client does once its requests are done
				}
				done <- result{string(b), err}
			}()
			<-started

			shut := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				shut <- s.Shutdown(ctx)
			}()
			// Wait until the server stops accepting: new TCP connections to
			// the H3 origin are refused.
			h3, _ := ts.Addrs()
			for i := 0; ; i++ {
				conn, err := net.Dial("tcp", h3.String())
				if err != nil {
					break
				}
				conn.Close()
				if i > 2000 {
					t.Fatal("listener still accepting after Shutdown")
				}
				time.Sleep(time.Millisecond)
			}
			select {
			case err := <-shut:
				t.Fatalf("Shutdown returned before the in-flight request finished: %v", err)
			default:
			}
			close(release)
			r := <-done
			if r.err != nil || r.body != "finished" {
				t.Errorf("in-flight request: %q, %v; want it to finish", r.body, r.err)
			}
			if err := <-shut; err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if err := s.Wait(); err != nil {
				t.Errorf("Wait: %v", err)
			}
		})
	}
}

// A QUIC client that vanishes without closing its connection (a killed
// browser) must not hold Shutdown until its deadline: once nothing is in
// flight, the idle connections are closed.
func TestShutdownDoesNotWaitForVanishedQUICClient(t *testing.T) {
	s := &Server{}
	ts := startServer(t, s)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	qt := &quic.Transport{Conn: pc}
	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ts.pool},
		Dial: func(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
			ua, err := net.ResolveUDPAddr("udp", addr)
			if err != nil {
				return nil, err
			}
			return qt.DialEarly(ctx, ua, tlsCfg, cfg)
		},
	}
	resp, body := do(t, &http.Client{Transport: tr, Timeout: 10 * time.Second}, "GET", ts.h3+"/probe", nil)
	if resp.StatusCode != http.StatusNoContent || resp.ProtoMajor != 3 {
		t.Fatalf("probe over HTTP/3: %d %s %q", resp.StatusCode, resp.Proto, body)
	}
	// The client disappears: its socket closes, no CONNECTION_CLOSE is sent.
	pc.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Shutdown waited for its deadline")
	}
}

// probeClient is a client of one protocol and the /probe URL it loads:
// HTTP/2 on the H2 origin, HTTP/3 on the H3 origin, as the beacon does.
type probeClient struct {
	name string
	c    *http.Client
	url  string
}

func (ts *testServer) probeClients(t *testing.T) []probeClient {
	c3, _ := ts.h3Client(t, nil)
	return []probeClient{{"h2", ts.tcpClient(t, false, nil), ts.h2 + "/probe"}, {"h3", c3, ts.h3 + "/probe"}}
}

// With a collector id, every connection id in Server-Timing names the
// collector, over TCP and QUIC, and the report reads it back.
func TestCollectorIDInConnectionIDs(t *testing.T) {
	ts := startServer(t, &Server{CollectorID: "fra-1"})
	for _, tc := range ts.probeClients(t) {
		resp, _ := do(t, tc.c, "GET", tc.url, nil)
		cid := parseServerTiming(t, resp.Header.Get("Server-Timing"))["cid"]
		if !strings.HasPrefix(cid, "fra-1.") || beacon.CollectorOf(cid) != "fra-1" {
			t.Errorf("%s: cid %q does not name the collector", tc.name, cid)
		}
	}
	if err := (&Server{CollectorID: "Frankfurt 1"}).Validate(); err == nil || !strings.Contains(err.Error(), "collector id") {
		t.Errorf("bad collector id: %v", err)
	}
}

// Server-Timing's age is the time since the connection was accepted: it
// grows on a kept-alive connection, over TCP and QUIC.
func TestConnectionAge(t *testing.T) {
	ts := startServer(t, &Server{})
	for _, tc := range ts.probeClients(t) {
		age := func() float64 {
			resp, _ := do(t, tc.c, "GET", tc.url, nil)
			st := parseServerTiming(t, resp.Header.Get("Server-Timing"))
			v, err := strconv.ParseFloat(st["age"], 64)
			if err != nil {
				t.Fatalf("%s: age %q: %v", tc.name, st["age"], err)
			}
			return v
		}
		first := age()
		time.Sleep(100 * time.Millisecond)
		if second := age(); first < 0 || second < first+90 {
			t.Errorf("%s: age %v ms, then %v ms 100 ms later on the same connection", tc.name, first, second)
		}
	}
}
