package origin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

func TestConnLimiterKey(t *testing.T) {
	l := newConnLimiter(2, -1, []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("::ffff:172.16.0.0/108"), // 172.16.0.0/12, written mapped
		netip.MustParsePrefix("2001:db8:ffff::/48"),
	})
	for _, tc := range []struct {
		addr    string
		key     string // "" = not counted
		comment string
	}{
		{"192.0.2.1", "192.0.2.1", "IPv4 as is"},
		{"::ffff:192.0.2.1", "192.0.2.1", "IPv4-mapped, as a dual-stack socket reports it"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::", "IPv6 by its /64"},
		{"2001:db8:1:2::9%eth0", "2001:db8:1:2::", "zone dropped"},
		{"10.1.2.3", "", "trusted"},
		{"::ffff:10.1.2.3", "", "trusted, mapped"},
		{"172.20.0.1", "", "trusted through a mapped prefix"},
		{"2001:db8:ffff:1::1", "", "trusted IPv6"},
	} {
		k, counted := l.key(netip.MustParseAddr(tc.addr))
		got := ""
		if counted {
			got = k.String()
		}
		if got != tc.key {
			t.Errorf("%s (%s): key %q, want %q", tc.addr, tc.comment, got, tc.key)
		}
	}

	var held []place
	acquired := func(peer string) bool {
		p, _, ok := l.acquire(netip.MustParseAddr(peer))
		if ok {
			held = append(held, p)
		}
		return ok
	}
	a, b := "2001:db8:1:2::1", "2001:db8:1:2:ffff::1"
	if !acquired(a) || !acquired(b) || acquired(a) {
		t.Error("two addresses of one /64 did not share its cap of 2")
	}
	if conns, _ := l.load(held[0].key); conns != 2 {
		t.Errorf("a /64 at its cap of 2 holds %d", conns)
	}
	l.release(held[0])
	held = held[1:]
	if !acquired(b) {
		t.Error("a released place was not given again")
	}
	if !acquired("10.1.2.3") || held[len(held)-1].addr != nil {
		t.Error("a trusted proxy's connection was not admitted uncounted")
	}
	for _, p := range held {
		l.release(p)
	}
	if len(l.open) != 0 || len(l.open48) != 0 || l.total != 0 {
		t.Errorf("all released, but the limiter still holds %v, %v and %d in all", l.open, l.open48, l.total)
	}

	if _, counted := newConnLimiter(-1, -1, nil).key(netip.MustParseAddr("192.0.2.1")); counted {
		t.Error("a negative cap counts connections")
	}
}

// TestConnLimiterPrefix48 spreads connections over the /64s of one IPv6
// /48, as a client given a /48 (a tunnel broker hands them out) can: each
// /64 stays within its own cap, but the /48 is refused past 8 times that,
// while another /48 and IPv4 addresses are served on. It builds keys only:
// loopback has no /48 to spread over.
func TestConnLimiterPrefix48(t *testing.T) {
	const max, subnets = 4, 64
	l := newConnLimiter(max, -1, nil)
	addr := func(net48 byte, subnet int) netip.Addr {
		return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, net48, byte(subnet >> 8), byte(subnet), 15: 1})
	}
	var admitted int
	var refused [numCaps]int
	for i := range subnets {
		for range max {
			if _, over, ok := l.acquire(addr(1, i)); ok {
				admitted++
			} else {
				refused[over]++
			}
		}
	}
	t.Logf("%d /64s of one /48, %d connections each: %d admitted, refused %v (per address, per /48, in all)",
		subnets, max, admitted, refused)
	if admitted != per48*max || refused[cap48] != subnets*max-per48*max || refused[capAddr] != 0 {
		t.Errorf("one /48 spread over %d /64s: %d connections admitted, refused %v; want %d admitted, the rest refused per /48",
			subnets, admitted, refused, per48*max)
	}
	for _, peer := range []netip.Addr{addr(2, 0), netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("::ffff:192.0.2.2")} {
		if _, over, ok := l.acquire(peer); !ok {
			t.Errorf("%v refused (%s) while another /48 is at its cap", peer, capReasons[over])
		}
	}
}

// tlsDial completes a TLS handshake with an origin over TCP.
func (ts *testServer) tlsDial(addr netip.AddrPort) (*tls.Conn, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second},
		Config: &tls.Config{RootCAs: ts.pool, ServerName: "localhost", NextProtos: []string{"h2"}}}
	c, err := d.Dial("tcp", addr.String())
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

// tlsDialFrom completes a TLS handshake with an origin over TCP from the
// loopback address src.
func (ts *testServer) tlsDialFrom(src string, addr netip.AddrPort) (*tls.Conn, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}},
		Config: &tls.Config{RootCAs: ts.pool, ServerName: "localhost", NextProtos: []string{"h2"}}}
	c, err := d.Dial("tcp", loopback127(addr).String())
	if err != nil {
		return nil, err
	}
	return c.(*tls.Conn), nil
}

// quicDialFrom completes a QUIC handshake with the H3 origin from the
// loopback address src.
func (ts *testServer) quicDialFrom(t *testing.T, src string) (*quic.Conn, error) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", src+":0")
	if err != nil {
		t.Fatal(err)
	}
	tr := &quic.Transport{Conn: pc}
	t.Cleanup(func() { tr.Close() })
	h3, _ := ts.Addrs()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	return tr.Dial(ctx, net.UDPAddrFromAddrPort(loopback127(h3)),
		&tls.Config{RootCAs: ts.pool, ServerName: "localhost", NextProtos: []string{http3.NextProtoH3}}, nil)
}

// quicDial completes a QUIC handshake with the H3 origin.
func (ts *testServer) quicDial(t *testing.T, conf *tls.Config) (*quic.Conn, error) {
	t.Helper()
	if conf == nil {
		conf = &tls.Config{RootCAs: ts.pool}
	}
	conf.ServerName = "localhost"
	if conf.NextProtos == nil {
		conf.NextProtos = []string{http3.NextProtoH3}
	}
	h3, _ := ts.Addrs()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	return quic.DialAddr(ctx, fmt.Sprintf("127.0.0.1:%d", h3.Port()), conf, nil)
}

// eventually retries f for up to 5 seconds, until it succeeds.
func eventually(f func() error) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isConnectionRefused(err error) bool {
	te, ok := errors.AsType[*quic.TransportError](err)
	return ok && te.ErrorCode == quic.ConnectionRefused
}

// loopback127 is where the tests connect from and to: 127.0.0.1.
func loopback127(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port())
}

func TestMaxConnsPerAddr(t *testing.T) {
	const max = 3
	refused := func(ts *testServer, origin, transport string) float64 {
		return metric(t, ts.reg, "h3rum_collector_connections_refused_total",
			"origin", origin, "transport", transport, "reason", "per_addr_cap")
	}

	t.Run("tcp", func(t *testing.T) {
		ts := startServer(t, &Server{MaxConnsPerAddr: max})
		h3, h2 := ts.Addrs()
		h3, h2 = loopback127(h3), loopback127(h2)
		var open []*tls.Conn
		t.Cleanup(func() {
			for _, c := range open {
				c.Close()
			}
		})
		// The cap covers both origins.
		for _, a := range []netip.AddrPort{h2, h2, h3} {
			c, err := ts.tlsDial(a)
			if err != nil {
				t.Fatalf("connection %d: %v", len(open)+1, err)
			}
			open = append(open, c)
		}
		if c, err := ts.tlsDial(h2); err == nil {
			c.Close()
			t.Fatalf("connection %d over a cap of %d was accepted", max+1, max)
		}
		if got := metricEventually(t, ts.reg, 1, "h3rum_collector_connections_refused_total",
			"origin", "h2", "transport", "tcp", "reason", "per_addr_cap"); got != 1 {
			t.Errorf("refused TCP connections counted %v, want 1", got)
		}
		// …and QUIC.
		if c, err := ts.quicDial(t, nil); !isConnectionRefused(err) {
			if c != nil {
				c.CloseWithError(0, "")
			}
			t.Errorf("QUIC connection over a cap filled by TCP: %v, want CONNECTION_REFUSED", err)
		}
		if got := refused(ts, "h3", "quic"); got != 1 {
			t.Errorf("refused QUIC connections counted %v, want 1", got)
		}
		if got := metric(t, ts.reg, "h3rum_collector_connections_total", "origin", "h2", "transport", "tcp"); got != 2 {
			t.Errorf("connections accepted by the H2 origin: %v, want the 2 admitted", got)
		}

		open[0].Close()
		open = open[1:]
		err := eventually(func() error {
			c, err := ts.tlsDial(h2)
			if err == nil {
				open = append(open, c)
			}
			return err
		})
		if err != nil {
			t.Errorf("a new connection once one closed: %v", err)
		}
	})

	t.Run("quic", func(t *testing.T) {
		ts := startServer(t, &Server{MaxConnsPerAddr: max})
		var open []*quic.Conn
		t.Cleanup(func() {
			for _, c := range open {
				c.CloseWithError(0, "")
			}
		})
		for range max {
			c, err := ts.quicDial(t, nil)
			if err != nil {
				t.Fatalf("connection %d: %v", len(open)+1, err)
			}
			open = append(open, c)
		}
		if c, err := ts.quicDial(t, nil); !isConnectionRefused(err) {
			if c != nil {
				c.CloseWithError(0, "")
			}
			t.Fatalf("connection %d over a cap of %d: %v, want CONNECTION_REFUSED", max+1, max, err)
		}
		if got := refused(ts, "h3", "quic"); got != 1 {
			t.Errorf("refused QUIC connections counted %v, want 1", got)
		}
		// From half the cap on, new connections went through a Retry.
		if got := metric(t, ts.reg, "h3rum_collector_quic_retries_total", "origin", "h3", "reason", "crowded_addr"); got < 1 {
			t.Errorf("Retries counted %v, want at least 1", got)
		}
		// TCP shares the cap.
		h3, _ := ts.Addrs()
		if c, err := ts.tlsDial(loopback127(h3)); err == nil {
			c.Close()
			t.Error("a TCP connection over a cap filled by QUIC was accepted")
		}

		open[0].CloseWithError(0, "")
		open = open[1:]
		err := eventually(func() error {
			c, err := ts.quicDial(t, nil)
			if err == nil {
				open = append(open, c)
			}
			return err
		})
		if err != nil {
			t.Errorf("a new connection once one closed: %v", err)
		}
	})

	t.Run("quic failed handshakes", func(t *testing.T) {
		ts := startServer(t, &Server{MaxConnsPerAddr: 1})
		for _, tc := range []struct {
			name string
			conf *tls.Config
		}{
			{"client does not trust the certificate", &tls.Config{}},
			{"no common application protocol", &tls.Config{RootCAs: ts.pool, NextProtos: []string{"h3-nope"}}},
			{"client does not trust the certificate again", &tls.Config{}},
		} {
			// The previous good connection's place may take a moment to
			// come back after it closed: dial until not refused.
			var dialErr error
			eventually(func() error {
				var c *quic.Conn
				c, dialErr = ts.quicDial(t, tc.conf.Clone())
				if c != nil {
					c.CloseWithError(0, "")
				}
				if isConnectionRefused(dialErr) {
					return dialErr
				}
				return nil
			})
			if dialErr == nil || isConnectionRefused(dialErr) {
				t.Fatalf("%s: %v, want a failed handshake", tc.name, dialErr)
			}
			// The failed connection's place is given back: with a cap of
			// 1, a good connection gets in.
			var good *quic.Conn
			err := eventually(func() (err error) {
				good, err = ts.quicDial(t, nil)
				return err
			})
			if err != nil {
				t.Fatalf("after %s: %v", tc.name, err)
			}
			good.CloseWithError(0, "")
		}
	})

	t.Run("quic client vanished during the handshake", func(t *testing.T) {
		ts := startServer(t, &Server{MaxConnsPerAddr: 1})
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		// The client hears nothing back, gives up and closes nothing: the
		// server is left with a handshake that never completes.
		t.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true") // not a *net.UDPConn
		tr := &quic.Transport{Conn: deafConn{pc}}
		defer tr.Close()
		h3, _ := ts.Addrs()
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		if c, err := tr.Dial(ctx, net.UDPAddrFromAddrPort(loopback127(h3)),
			&tls.Config{RootCAs: ts.pool, ServerName: "localhost", NextProtos: []string{http3.NextProtoH3}}, nil); err == nil {
			c.CloseWithError(0, "")
			t.Fatal("a client that hears nothing completed its handshake")
		}
		if c, err := ts.quicDial(t, nil); !isConnectionRefused(err) {
			if c != nil {
				c.CloseWithError(0, "")
			}
			t.Fatalf("connection while a handshake holds the only place: %v, want CONNECTION_REFUSED", err)
		}
		// The place comes back when the handshake times out: quic-go ends
		// a handshake that heard nothing for the handshake timeout, and
		// any that has not completed in twice that.
		start := time.Now()
		for {
			c, err := ts.quicDial(t, nil)
			if err == nil {
				c.CloseWithError(0, "")
				break
			}
			if time.Since(start) > 2*quicHandshakeTimeout+5*time.Second {
				t.Fatalf("still refused %v after the handshake timeout: %v", time.Since(start), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("trusted proxies", func(t *testing.T) {
		ts := startServer(t, &Server{MaxConnsPerAddr: 1, TrustedProxies: []netip.Prefix{
			netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
		_, h2 := ts.Addrs()
		for i := range 3 {
			c, err := ts.tlsDial(loopback127(h2))
			if err != nil {
				t.Fatalf("TCP connection %d from a trusted proxy: %v", i+1, err)
			}
			defer c.Close()
			q, err := ts.quicDial(t, nil)
			if err != nil {
				t.Fatalf("QUIC connection %d from a trusted proxy: %v", i+1, err)
			}
			defer q.CloseWithError(0, "")
		}
		if got := refused(ts, "h2", "tcp") + refused(ts, "h3", "quic"); got != 0 {
			t.Errorf("refused %v connections of a trusted proxy", got)
		}
	})
}

// TestMaxConns opens connections from several addresses, each far below
// its own cap, as many clients (or one with many addresses) can: past
// MaxConns in all, TCP and QUIC connections are refused and counted,
// trusted proxies' too, and a closed connection's place is given again.
func TestMaxConns(t *testing.T) {
	const max = 3
	for _, tc := range []struct {
		name    string
		trusted []netip.Prefix
	}{
		{"clients", nil},
		{"trusted proxies", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, &Server{MaxConns: max, TrustedProxies: tc.trusted})
			h3, h2 := ts.Addrs()
			var open []io.Closer
			t.Cleanup(func() {
				for _, c := range open {
					c.Close()
				}
			})
			for i, a := range []netip.AddrPort{h2, h3} {
				c, err := ts.tlsDialFrom(fmt.Sprintf("127.0.0.%d", 2+i), a)
				if err != nil {
					t.Fatalf("TCP connection %d: %v", i+1, err)
				}
				open = append(open, c)
			}
			q, err := ts.quicDialFrom(t, "127.0.0.4")
			if err != nil {
				t.Fatalf("QUIC connection: %v", err)
			}
			open = append(open, closerFunc(func() error { return q.CloseWithError(0, "") }))

			if c, err := ts.tlsDialFrom("127.0.0.5", h2); err == nil {
				c.Close()
				t.Errorf("TCP connection %d over a cap of %d in all was accepted", max+1, max)
			}
			if c, err := ts.quicDialFrom(t, "127.0.0.6"); !isConnectionRefused(err) {
				if c != nil {
					c.CloseWithError(0, "")
				}
				t.Errorf("QUIC connection %d over a cap of %d in all: %v, want CONNECTION_REFUSED", max+1, max, err)
			}
			for _, l := range [][2]string{{"h2", "tcp"}, {"h3", "quic"}} {
				if got := metricEventually(t, ts.reg, 1, "h3rum_collector_connections_refused_total",
					"origin", l[0], "transport", l[1], "reason", "total_cap"); got != 1 {
					t.Errorf("%s connections to the %s origin refused at the cap in all: counted %v, want 1", l[1], l[0], got)
				}
			}

			open[0].Close()
			open = open[1:]
			err = eventually(func() error {
				c, err := ts.quicDialFrom(t, "127.0.0.6")
				if err == nil {
					open = append(open, closerFunc(func() error { return c.CloseWithError(0, "") }))
				}
				return err
			})
			if err != nil {
				t.Errorf("a new connection once one closed: %v", err)
			}
		})
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// deafConn is a client socket that drops everything it receives.
type deafConn struct{ net.PacketConn }

func (c deafConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		if _, _, err := c.PacketConn.ReadFrom(p); err != nil {
			return 0, nil, err // closed
		}
	}
}

// TestConnIDsRandom: connection ids do not count connections, so that a
// client cannot read the server's traffic off the ids it is given.
func TestConnIDsRandom(t *testing.T) {
	s := &Server{connPrefix: "fra-1.0a1b2c3d"}
	seen := map[string]bool{}
	var prev uint64
	for i := range 1000 {
		id := s.newConnID()
		if seen[id] {
			t.Fatalf("id %q given twice", id)
		}
		seen[id] = true
		rest, ok := strings.CutPrefix(id, "fra-1.0a1b2c3d-")
		if !ok {
			t.Fatalf("id %q lost its prefix", id)
		}
		n, err := strconv.ParseUint(rest, 36, 64)
		if err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		if i > 0 && (n == prev+1 || n < 1<<32) {
			t.Fatalf("id %q follows %d: a counter, not 64 random bits", id, prev)
		}
		prev = n
	}
}

// TestMetricsHost: the metrics listener answers only Hosts that no web
// page can have, so a page that points its own name at 127.0.0.1 (DNS
// rebinding) cannot read /metrics through a visitor's browser.
func TestMetricsHost(t *testing.T) {
	ts := startServer(t, &Server{MetricsAddr: "127.0.0.1:0", MetricsHosts: []string{"metrics.example.com"}})
	addr := ts.MetricsAddrPort().String()
	for _, tc := range []struct {
		host string
		want int
	}{
		{addr, http.StatusOK},
		{"localhost:9464", http.StatusOK},
		{"[::1]:9464", http.StatusOK},
		{"collector:9464", http.StatusOK}, // a Compose service
		{"h3rum-0.h3rum-metrics.default.svc.cluster.local:9464", http.StatusOK},
		{"prometheus.internal", http.StatusOK},
		{"METRICS.example.com:9464", http.StatusOK}, // MetricsHosts
		{"rebound.attacker.example:9464", http.StatusMisdirectedRequest},
		{"localhost.attacker.example", http.StatusMisdirectedRequest},
		{"127.0.0.1.nip.io", http.StatusMisdirectedRequest},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/metrics", nil)
		req.Host = tc.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Host %q: %d, want %d (%s)", tc.host, resp.StatusCode, tc.want, firstLine(string(body)))
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
