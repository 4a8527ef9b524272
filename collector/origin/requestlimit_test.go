package origin

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"syscall"

	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// clientFrom returns an HTTP client whose connections to the server come
// from the loopback address src: HTTP/3 when h3, else HTTP/2 (or HTTP/1.1
// with h1). Each client has connections of its own.
func (ts *testServer) clientFrom(t *testing.T, src string, h3, h1 bool) *http.Client {
	t.Helper()
	conf := &tls.Config{RootCAs: ts.pool, ServerName: "localhost"}
	if h3 {
		pc, err := net.ListenPacket("udp4", src+":0")
		if err != nil {
			t.Fatal(err)
		}
		qt := &quic.Transport{Conn: pc}
		t.Cleanup(func() { qt.Close() })
		h3Port, _ := ts.Addrs()
		tr := &http3.Transport{TLSClientConfig: conf, Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			return qt.DialEarly(ctx, net.UDPAddrFromAddrPort(loopback127(h3Port)), tc, qc)
		}}
		t.Cleanup(func() { tr.Close() })
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	tr := &http.Transport{TLSClientConfig: conf, ForceAttemptHTTP2: !h1,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return d.DialContext(ctx, "tcp4", "127.0.0.1:"+port)
		}}
	if h1 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestMaxRequestsPerAddr holds slow POST /probe uploads open from one
// address over several connections and protocols, as one client can pile
// up requests rather than connections: past MaxRequestsPerAddr in flight
// its requests are answered 429 at once, whatever the connection or
// protocol, while other addresses are served as usual.
func TestMaxRequestsPerAddr(t *testing.T) {
	const max = 8
	ts := startServer(t, &Server{MaxRequestsPerAddr: max})

	// Slow uploads: each sends a few bytes of its body, then stalls until
	// released.
	type upload struct {
		w    *io.PipeWriter
		done chan int // the status, or 0 on error
	}
	start := func(c *http.Client, url string) upload {
		pr, pw := io.Pipe()
		u := upload{w: pw, done: make(chan int, 1)}
		go func() {
			req, _ := http.NewRequest(http.MethodPost, url+"/probe", pr)
			req.ContentLength = 1000
			resp, err := c.Do(req)
			if err != nil {
				u.done <- 0
				return
			}
			resp.Body.Close()
			u.done <- resp.StatusCode
		}()
		go pw.Write(bytes.Repeat([]byte("x"), 10))
		return u
	}
	var held []upload
	release := func() {
		for _, u := range held {
			u.w.Write(bytes.Repeat([]byte("x"), 990))
			u.w.Close()
		}
		held = nil
	}
	defer release()
	// Two HTTP/2 connections, one HTTP/1.1 and one HTTP/3 one, from
	// 127.0.0.1, fill the cap between them.
	clients := []*http.Client{ts.clientFrom(t, "127.0.0.1", false, false), ts.clientFrom(t, "127.0.0.1", false, false),
		ts.clientFrom(t, "127.0.0.1", false, true), ts.clientFrom(t, "127.0.0.1", true, false)}
	for i := range max {
		held = append(held, start(clients[i%len(clients)], ts.h3))
	}
	inFlight := func() int64 {
		ts.limiter.mu.Lock()
		defer ts.limiter.mu.Unlock()
		a := ts.limiter.open[netip.MustParseAddr("127.0.0.1")]
		if a == nil {
			return 0
		}
		return a.reqs.Load()
	}
	deadline := time.Now().Add(5 * time.Second)
	for inFlight() < max && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := inFlight(); n != max {
		t.Fatalf("%d uploads in flight from 127.0.0.1, want %d", n, max)
	}

	// One more from the same address is refused at once, over each
	// connection and protocol, the H2 origin included.
	for i, c := range clients {
		for _, origin := range []string{ts.h3, ts.h2} {
			if i == 3 && origin == ts.h2 {
				continue // HTTP/3 only reaches the H3 origin
			}
			u := start(c, origin)
			select {
			case code := <-u.done:
				if code != http.StatusTooManyRequests {
					t.Errorf("client %d, %s: a request over the cap got %d, want 429", i, origin, code)
				}
			case <-time.After(3 * time.Second):
				t.Errorf("client %d, %s: a request over the cap was not answered within 3 s", i, origin)
				held = append(held, u)
			}
			u.w.Close()
		}
	}
	if got := metric(t, ts.reg, "h3rum_collector_requests_refused_total", "reason", "per_addr_requests"); got != 7 {
		t.Errorf("refused requests counted %v, want 7", got)
	}

	// Other addresses are served meanwhile, over HTTP/2 and HTTP/3.
	for _, tc := range []struct {
		src string
		h3  bool
	}{{"127.0.0.2", false}, {"127.0.0.3", true}} {
		begin := time.Now()
		resp, _ := do(t, ts.clientFrom(t, tc.src, tc.h3, false), http.MethodGet, ts.h3+"/probe", nil)
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("%s (h3 %v): status %d while 127.0.0.1 is at its cap, want 204", tc.src, tc.h3, resp.StatusCode)
		}
		if d := time.Since(begin); d > 2*time.Second {
			t.Errorf("%s (h3 %v): served in %v", tc.src, tc.h3, d)
		}
	}

	// Once the uploads finish, the address is served again.
	for _, u := range held {
		u.w.Write(bytes.Repeat([]byte("x"), 990))
		u.w.Close()
	}
	for i, u := range held {
		if code := <-u.done; code != http.StatusNoContent {
			t.Errorf("upload %d: status %d, want 204", i, code)
		}
	}
	held = nil
	if resp, _ := do(t, clients[0], http.MethodGet, ts.h3+"/probe", nil); resp.StatusCode != http.StatusNoContent {
		t.Errorf("after the uploads: status %d, want 204", resp.StatusCode)
	}
}

// TestHTTP2HeaderDeadline opens an HTTP/2 stream with a header block it
// never finishes: the connection is cut within the header timeout, rather
// than held until IdleTimeout, while an idle connection that answers PINGs
// stays open.
func TestHTTP2HeaderDeadline(t *testing.T) {
	const timeout = time.Second
	ts := startServer(t, &Server{testHeaderTimeout: timeout})
	_, h2 := ts.Addrs()

	t.Run("unfinished header block", func(t *testing.T) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", loopback127(h2).String(),
			&tls.Config{RootCAs: ts.pool, ServerName: "localhost", NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * timeout))
		if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
			t.Fatal(err)
		}
		fr := http2.NewFramer(conn, conn)
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		var block bytes.Buffer
		enc := hpack.NewEncoder(&block)
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "localhost"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		begin := time.Now()
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: false}); err != nil {
			t.Fatal(err)
		}
		var pings int
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
					break
				}
				t.Fatalf("after %v: %v; want the server to close the connection", time.Since(begin).Round(time.Millisecond), err)
			}
			if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
				pings++ // answering would break the header block
			}
		}
		d := time.Since(begin)
		t.Logf("closed after %v, %d PINGs", d.Round(time.Millisecond), pings)
		if d > timeout+timeout/2 {
			t.Errorf("an unfinished header block held its connection %v, want at most about %v", d, timeout)
		}
	})

	t.Run("idle connection answering PINGs", func(t *testing.T) {
		c := ts.clientFrom(t, "127.0.0.1", false, false)
		var conns []string
		for i := range 2 {
			if i > 0 {
				time.Sleep(3 * timeout)
			}
			var local string
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { local = i.Conn.LocalAddr().String() }}
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodGet, ts.h2+"/probe", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			conns = append(conns, local)
		}
		if conns[0] != conns[1] {
			t.Errorf("an idle connection was closed after %v: requests came from %v", 3*timeout, conns)
		}
	})
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// TestHTTP3HeaderDeadline opens HTTP/3 request streams whose HEADERS frame
// never completes: each is reset with H3_REQUEST_INCOMPLETE within the
// header timeout instead of being held while the connection lives, and
// the connection goes on serving requests.
func TestHTTP3HeaderDeadline(t *testing.T) {
	const timeout = time.Second
	ts := startServer(t, &Server{testHeaderTimeout: timeout})
	conn, err := ts.quicDial(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseWithError(0, "")
	begin := time.Now()
	var streams []*quic.Stream
	for range 3 {
		str, err := conn.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		// A HEADERS frame (type 0x01) announcing 100 bytes, of which 3
		// are sent.
		if _, err := str.Write([]byte{0x01, 0x40, 100, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		streams = append(streams, str)
	}
	for i, str := range streams {
		str.SetReadDeadline(time.Now().Add(5 * timeout))
		_, err := str.Read(make([]byte, 1))
		d := time.Since(begin)
		se, ok := errors.AsType[*quic.StreamError](err)
		if !ok || se.ErrorCode != quic.StreamErrorCode(http3.ErrCodeRequestIncomplete) {
			t.Fatalf("stream %d after %v: %v, want H3_REQUEST_INCOMPLETE", i, d.Round(time.Millisecond), err)
		}
		if d > timeout+timeout/2 {
			t.Errorf("stream %d: an unfinished HEADERS frame held its stream %v, want at most about %v", i, d, timeout)
		}
	}
	// The connection itself serves on: a request over it (HTTP/3 on a
	// client that reuses conn) is answered.
	tr := &http3.Transport{}
	cc := tr.NewClientConn(conn)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.h3+"/probe", nil)
	resp, err := cc.RoundTrip(req)
	if err != nil {
		t.Fatalf("a request after the resets: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("a request after the resets: status %d, want 204", resp.StatusCode)
	}
}
