package origin

import (
	"context"
	"crypto/tls"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
)

// EarlyData reports whether r arrived as TLS 0-RTT early data, i.e. before
// the handshake completed. Such a request may be a replay (RFC 8470): a
// handler with side effects that must not repeat should answer 425 Too
// Early. Only HTTP/3 requests can be early here; net/http does not accept
// early data over TCP. The rule is r.TLS != nil && !r.TLS.HandshakeComplete,
// since quic-go hands each request a snapshot of the TLS state taken when
// it arrived.
func EarlyData(r *http.Request) bool {
	return r.TLS != nil && !r.TLS.HandshakeComplete
}

// connInfo is what the server keeps about one connection: its id, how many
// requests it has carried, and a handle to ask the kernel or quic-go about
// its RTT. One is made per connection (in ConnContext) and found again
// through the request context.
type connInfo struct {
	id    string
	start time.Time // when the connection was accepted: Server-Timing's age
	reqs  atomic.Uint64
	quic  *quic.Conn // QUIC connections
	tcp   *tcpInfo   // TCP connections; nil if the socket is not reachable
	addr  *addrState // the client address's counts; nil when not counted (trusted proxies, no cap)
	// retried: the connection paid a QUIC Retry's round trip before its
	// handshake, which Server-Timing tells the page.
	retried bool
}

type connInfoKey struct{}

func connInfoFrom(ctx context.Context) *connInfo {
	ci, _ := ctx.Value(connInfoKey{}).(*connInfo)
	return ci
}

// connStats are the RTT figures of a connection. Zero means unknown.
type connStats struct {
	rtt, minRTT, rttVar time.Duration
	lost                uint64
	lostKnown           bool
}

// stats returns the connection's figures as of now.
func (ci *connInfo) stats(now time.Time) connStats {
	switch {
	case ci.quic != nil:
		return quicStats(ci.quic)
	case ci.tcp != nil:
		return ci.tcp.stats(now)
	}
	return connStats{}
}

// quicStats is kept out of line: ConnectionStats returns a large struct,
// and the probe path keeps its stack frames small (see origin.ServeHTTP).
//
//go:noinline
func quicStats(c *quic.Conn) connStats {
	s := c.ConnectionStats()
	st := connStats{rtt: s.SmoothedRTT, minRTT: s.MinRTT, lost: s.PacketsLost, lostKnown: true}
	if s.SmoothedRTT > 0 {
		st.rttVar = s.MeanDeviation
	}
	return st
}

// newConnID returns the id of a new connection: the per-process prefix
// (CollectorID and a random part) and 64 random bits. A counter would
// tell every client how many connections the server had accepted before
// its own, and so its traffic; two ids of one process collide with a
// chance of n²/2⁶⁵ for n connections.
func (s *Server) newConnID() string {
	b := make([]byte, 0, len(s.connPrefix)+1+13)
	b = append(b, s.connPrefix...)
	b = append(b, '-')
	b = strconv.AppendUint(b, rand.Uint64(), 36)
	return string(b)
}

// tcpConnContext is the http.Server.ConnContext of an origin's TCP server.
func (o *testOrigin) tcpConnContext(ctx context.Context, c net.Conn) context.Context {
	ci := &connInfo{id: o.srv.newConnID(), start: time.Now()}
	nc := c
	if tc, ok := c.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	if lc, ok := nc.(*limitedConn); ok {
		ci.addr = lc.place.addr
	}
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			ci.tcp = newTCPInfo(raw)
		}
	}
	o.srv.metrics.conns.WithLabelValues(o.label, transportTCP).Inc()
	return context.WithValue(ctx, connInfoKey{}, ci)
}

// tcpConnState is the http.Server.ConnState of an origin's TCP server.
func (o *testOrigin) tcpConnState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		o.openTCP.Inc()
	case http.StateClosed, http.StateHijacked:
		o.openTCP.Dec()
	}
}

// quicConnContext is the http3.Server.ConnContext. It runs when quic-go
// hands the connection to HTTP/3, which for a 0-RTT connection is before
// the handshake completes.
func (o *testOrigin) quicConnContext(ctx context.Context, c *quic.Conn) context.Context {
	ci := &connInfo{id: o.srv.newConnID(), quic: c, start: time.Now(), addr: addrStateFrom(ctx), retried: retriedFrom(ctx)}
	o.srv.metrics.conns.WithLabelValues(o.label, transportQUIC).Inc()
	if p := pendingHandshakeFrom(ctx); p != nil {
		p.watch(c)
	}
	open := o.openQUIC
	open.Inc()
	context.AfterFunc(c.Context(), open.Dec)
	return context.WithValue(ctx, connInfoKey{}, ci)
}

// verifyConnection is the tls.Config.VerifyConnection of every listener:
// crypto/tls calls it on the server at the end of each handshake, full or
// resumed, which makes it the one place to count handshakes.
func (o *testOrigin) verifyConnection(cs tls.ConnectionState) error {
	if p, ok := alpnProto(cs.NegotiatedProtocol); ok {
		resumed := "false"
		if cs.DidResume {
			resumed = "true"
		}
		o.srv.metrics.handshakes.WithLabelValues(o.label, p, resumed).Inc()
	}
	return nil
}
