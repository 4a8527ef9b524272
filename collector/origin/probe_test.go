package origin

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProbeBytesParse(t *testing.T) {
	for _, tc := range []struct {
		q      string
		n      int
		reason string
	}{
		{"", 0, ""},
		{"r=123", 0, ""},
		{"bytes=0", 0, ""},
		{"r=1&bytes=1000", 1000, ""},
		{"bytes=1000&bytes=5", 1000, ""},
		{"bytes=1001", 0, "bytes 1001 exceeds the maximum of 1000"},
		{"bytes=1e3", 0, `bytes must be a non-negative integer, got "1e3"`},
		{"bytes=+1", 0, `got "+1"`},
		{"bytes", 0, "empty value"},
		{"bytes=99999999999999999999", 0, "at most 12 digits"},
	} {
		n, reason := probeBytes(tc.q, 1000)
		if n != tc.n || (tc.reason == "") != (reason == "") || (tc.reason != "" && !strings.Contains(reason, tc.reason)) {
			t.Errorf("probeBytes(%q) = %d, %q; want %d, %q", tc.q, n, reason, tc.n, tc.reason)
		}
	}
}

func TestAppendMS(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0"},
		{400 * time.Nanosecond, "0"},
		{600 * time.Nanosecond, "0.001"},
		{30 * time.Microsecond, "0.03"},
		{1500 * time.Microsecond, "1.5"},
		{12345678 * time.Nanosecond, "12.346"},
		{2 * time.Second, "2000"},
	} {
		if got := string(appendMS(nil, tc.d)); got != tc.want {
			t.Errorf("appendMS(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestHostOnly(t *testing.T) {
	for in, want := range map[string]string{
		"h3.example.com": "h3.example.com", "h3.example.com:443": "h3.example.com",
		"[::1]:8443": "::1", "[::1]": "::1", "::1": "::1", "127.0.0.1:1": "127.0.0.1",
	} {
		if got := hostOnly(in); got != want {
			t.Errorf("hostOnly(%q) = %q, want %q", in, got, want)
		}
	}
}

// benchWriter is the least a ResponseWriter can do, so that the benchmark
// measures the handler.
type benchWriter struct {
	h    http.Header
	code int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *benchWriter) WriteHeader(code int)        { w.code = code }

// benchRequest returns an HTTP/2 GET /probe on a real loopback TCP
// connection, so that the TCP_INFO read is included.
func benchRequest(b *testing.B, s *Server) *http.Request {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	raw, _ := c.(syscall.Conn).SyscallConn()
	ci := &connInfo{id: s.newConnID(), tcp: newTCPInfo(raw)}
	r := httptest.NewRequest("GET", "https://localhost/probe?r=12345", nil)
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/2.0", 2, 0
	r.TLS = &tls.ConnectionState{HandshakeComplete: true, Version: tls.VersionTLS13, NegotiatedProtocol: "h2"}
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Safari/537.36")
	r.Header.Set("Accept", "*/*")
	r.Header.Set("Origin", "https://www.example.com")
	r.Header.Set("Referer", "https://www.example.com/")
	r.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
	r.Header.Set("Accept-Language", "en-GB,en;q=0.9")
	return r.WithContext(context.WithValue(r.Context(), connInfoKey{}, ci))
}

// BenchmarkProbeHandler measures /probe's handler on its own, against a
// bare handler that answers 204 with no headers, both with the header map
// a server allocates per response. The difference is what h3rum adds per
// request on top of the protocol stack.
func BenchmarkProbeHandler(b *testing.B) {
	ts := startServer(b, &Server{})
	r := benchRequest(b, ts.Server)
	b.Run("h3rum", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := &benchWriter{h: make(http.Header)}
			ts.h3Origin.ServeHTTP(w, r)
			if w.code != http.StatusNoContent {
				b.Fatal(w.code)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
		for b.Loop() {
			w := &benchWriter{h: make(http.Header)}
			bare.ServeHTTP(w, r)
		}
	})
}

func BenchmarkServerTiming(b *testing.B) {
	ts := startServer(b, &Server{})
	r := benchRequest(b, ts.Server)
	ci := connInfoFrom(r.Context())
	b.ReportAllocs()
	for b.Loop() {
		serverTiming(protoH2, 12*time.Microsecond, connStats{rtt: 50 * time.Microsecond, minRTT: 9 * time.Microsecond, rttVar: 30 * time.Microsecond, lostKnown: true}, ci, 3, r)
	}
}

func BenchmarkTCPInfo(b *testing.B) {
	ts := startServer(b, &Server{})
	ci := connInfoFrom(benchRequest(b, ts.Server).Context())
	b.ReportAllocs()
	now := time.Now()
	for b.Loop() {
		now = now.Add(time.Second) // always too old: every call reads
		ci.stats(now)
	}
}
