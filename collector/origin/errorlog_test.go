package origin

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http: TLS handshake error from 192.0.2.1:50000: EOF",
			"http: TLS handshake error from <addr>: EOF"},
		{"http: TLS handshake error from [2001:db8::1]:50000: read tcp [2001:db8::2]:443->[2001:db8::1]:50000: read: connection reset by peer",
			"http: TLS handshake error from <addr>: read tcp <addr>-><addr>: read: connection reset by peer"},
		{"http: TLS handshake error from [::ffff:192.0.2.1]:1: remote error: tls: bad certificate",
			"http: TLS handshake error from <addr>: remote error: tls: bad certificate"},
		{"http2: server: error reading preface from client 192.0.2.1:7: bogus greeting \"GET / HTTP/1.1\\r\\nHost: \\\"x\\\"\"",
			"http2: server: error reading preface from client <addr>: bogus greeting \"<redacted>\""},
		{`http: TLS handshake error from 192.0.2.1:50000: acme/autocert: host "tracker-1234.example" not configured in HostWhitelist`,
			`http: TLS handshake error from <addr>: acme/autocert: host "<redacted>" not configured in HostWhitelist`},
		{"address fe80::1%eth0 and 2001:db8:: and 192.0.2.7.",
			"address <addr> and <addr> and <addr>."},
		{`unterminated "quote`, `unterminated "<redacted>"`},
		{"http: Accept error: too many open files; retrying in 5ms",
			"http: Accept error: too many open files; retrying in 5ms"},
		{"tls: client offered only unsupported versions: [301 302]",
			"tls: client offered only unsupported versions: [301 302]"},
		{"at 12:34:56 on server.go:123 with 0xc000123456 and version 1.2",
			"at 12:34:56 on server.go:123 with 0xc000123456 and version 1.2"},
	} {
		if got := redact(tc.in); got != tc.want {
			t.Errorf("redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// The failed TLS handshakes net/http logs carry neither the client's
// address nor what it asked for.
func TestErrorLogHasNoClientData(t *testing.T) {
	var logs syncBuffer
	ts := startServer(t, &Server{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	_, h2 := ts.Addrs()
	addr := loopback127(h2).String()

	// Not TLS at all.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	clientPort := strconv.Itoa(c.LocalAddr().(*net.TCPAddr).Port)
	c.Write([]byte("GET / HTTP/1.1\r\nHost: tracker.example\r\n\r\n"))
	c.Close()
	// A protocol the server does not speak, which it quotes.
	tc, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ts.pool, ServerName: "localhost", NextProtos: []string{"secret-proto"}})
	if err == nil {
		tc.Close()
		t.Fatal("handshake with an unknown protocol succeeded")
	}

	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(logs.String(), "TLS handshake error") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var errLines []string // the start-up lines hold the server's own addresses
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=DEBUG") {
			errLines = append(errLines, l)
		}
	}
	out := strings.Join(errLines, "\n")
	if n := strings.Count(out, "TLS handshake error from <addr>: "); n != 2 {
		t.Fatalf("%d handshake errors logged with a redacted address, want 2:\n%s", n, logs.String())
	}
	for _, leak := range []string{"127.0.0.1", ":" + clientPort, "secret-proto", "tracker.example"} {
		if strings.Contains(out, leak) {
			t.Errorf("the log holds %q:\n%s", leak, out)
		}
	}
}
