package origin

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"

	"github.com/h3rum/h3rum/ingest/access"
)

// connLimiter caps the connections open at once from one client address,
// over every listener of the server (see Server.MaxConnsPerAddr), and
// keeps the count of its requests in flight over them.
type connLimiter struct {
	max     int // < 0: no cap
	trusted access.Prefixes

	mu   sync.Mutex
	open map[netip.Addr]*addrState // by key; deleted with their last connection
}

// addrState is what the limiter keeps about one client address while it
// has connections open.
type addrState struct {
	conns int          // guarded by connLimiter.mu
	reqs  atomic.Int64 // requests being handled, over all its connections
}

// enter counts one more request in flight, unless max (> 0) are already.
func (a *addrState) enter(max int64) bool {
	if a.reqs.Add(1) > max {
		a.reqs.Add(-1)
		return false
	}
	return true
}

// leave uncounts a request enter counted.
func (a *addrState) leave() { a.reqs.Add(-1) }

type addrStateKey struct{}

func addrStateFrom(ctx context.Context) *addrState {
	a, _ := ctx.Value(addrStateKey{}).(*addrState)
	return a
}

func newConnLimiter(max int, trusted []netip.Prefix) *connLimiter {
	return &connLimiter{max: max, trusted: trusted, open: make(map[netip.Addr]*addrState)}
}

// key returns what a peer's connections are counted under: its IPv4
// address, or the /64 of its IPv6 address, which is what one subscriber
// gets. counted is false when connections are not capped or the peer is a
// trusted proxy.
func (l *connLimiter) key(a netip.Addr) (k netip.Addr, counted bool) {
	if l.max < 0 || !a.IsValid() {
		return netip.Addr{}, false
	}
	a = a.Unmap().WithZone("")
	if l.trusted.Contains(a) {
		return netip.Addr{}, false
	}
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr(), true
	}
	return a, true
}

// acquire counts one more connection under k, unless k is at the cap, and
// returns k's state.
func (l *connLimiter) acquire(k netip.Addr) (*addrState, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.open[k]
	if a != nil && a.conns >= l.max {
		return nil, false
	}
	if a == nil {
		a = &addrState{}
		l.open[k] = a
	}
	a.conns++
	return a, true
}

// release uncounts a connection acquire counted.
func (l *connLimiter) release(k netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.open[k]; a != nil && a.conns > 1 {
		a.conns--
	} else {
		delete(l.open, k)
	}
}

// crowded reports whether k holds at least half its cap.
func (l *connLimiter) crowded(k netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.open[k]
	return a != nil && 2*a.conns >= l.max
}

// limitListener is a TCP listener that resets connections over the
// per-address cap as soon as they are accepted, before any TLS, and sets
// TCP_USER_TIMEOUT on the others.
type limitListener struct {
	net.Listener
	lim         *connLimiter
	userTimeout time.Duration
	refused     prometheus.Counter
}

// Accept returns the next connection within the cap. It waits for
// another one after a refusal rather than returning an error, which would
// make http.Server pause accepting for everyone.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			return c, nil
		}
		var addr netip.Addr
		if ta, ok := tc.RemoteAddr().(*net.TCPAddr); ok {
			addr = ta.AddrPort().Addr()
		}
		k, counted := l.lim.key(addr)
		if !counted {
			setUserTimeout(tc, l.userTimeout)
			return tc, nil
		}
		a, ok := l.lim.acquire(k)
		if !ok {
			// A reset rather than a close: no TIME_WAIT left behind by
			// a client that keeps trying.
			tc.SetLinger(0)
			tc.Close()
			l.refused.Inc()
			continue
		}
		setUserTimeout(tc, l.userTimeout)
		return &limitedConn{TCPConn: tc, lim: l.lim, key: k, addr: a}, nil
	}
}

// limitedConn is a counted TCP connection: closing it releases its place.
// It embeds *net.TCPConn so that the socket stays reachable (TCP_INFO for
// Server-Timing) through syscall.Conn.
type limitedConn struct {
	*net.TCPConn
	lim    *connLimiter
	key    netip.Addr
	addr   *addrState
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.lim.release(c.key)
	}
	return c.TCPConn.Close()
}

// Reasons a QUIC connection attempt is refused before any TLS.
var (
	errPerAddrCap   = errors.New("too many connections from this address")
	errHandshakeCap = errors.New("too many handshakes from unvalidated addresses in progress")
)

// quicGate applies the per-address cap and the cap on unvalidated
// handshakes to the QUIC connections of the H3 origin, through the hooks of
// their quic.Transports (one gate is shared by all of them).
//
// A QUIC Initial's source address is not proven: anyone can send Initials
// that claim to come from many addresses, and each would get a full TLS
// handshake and about 100 KB of state until the handshake timeout, with
// the server's first flight sent to the address it claims. So the gate
// counts handshakes in progress whose address is not validated yet (no
// Retry or resumption token, no Handshake packet received): from
// maxUnvalidated of them on, every new attempt without a token must first
// answer a Retry, which costs nothing to send and keeps no state, and
// which a forged source never receives. An attempt that gets past the
// Retry check anyway (the transports check one after the other) is
// refused. Real clients pay one round trip while that lasts, counted in
// the retries metric.
type quicGate struct {
	lim            *connLimiter
	maxUnvalidated int64
	unvalidated    atomic.Int64 // handshakes in progress from unvalidated addresses

	refused, refusedHandshakes    prometheus.Counter
	retriesCrowded, retriesLoaded prometheus.Counter

	// A client's first flight is often two Initial packets (a ClientHello
	// with a post-quantum key share does not fit in one), and each is
	// refused on its own: the last few refused sources are remembered
	// so that one attempt is counted once.
	mu     sync.Mutex
	recent [16]refusal
	next   int
}

type refusal struct {
	from netip.AddrPort
	at   time.Time
}

// refusalMemory is how long a refused source stays in quicGate.recent.
const refusalMemory = time.Second

// countRefusal counts a refused connection attempt from a in c, unless it
// was already counted.
func (g *quicGate) countRefusal(c prometheus.Counter, a netip.AddrPort) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.recent {
		if r.from == a && now.Sub(r.at) < refusalMemory {
			return
		}
	}
	g.recent[g.next] = refusal{from: a, at: now}
	g.next = (g.next + 1) % len(g.recent)
	c.Inc()
}

// pendingHandshake is an unvalidated handshake counted by quicGate, found
// again through the connection's context once quic-go hands the connection
// over (see Server.quicConnContext).
type pendingHandshake struct {
	gate *quicGate
	once sync.Once
}

type pendingHandshakeKey struct{}

// done uncounts the handshake: it completed (the address is validated by
// then) or the connection ended.
func (p *pendingHandshake) done() {
	p.once.Do(func() { p.gate.unvalidated.Add(-1) })
}

// watch uncounts p once c's handshake completes or c ends.
func (p *pendingHandshake) watch(c *quic.Conn) {
	go func() {
		select {
		case <-c.HandshakeComplete():
		case <-c.Context().Done():
		}
		p.done()
	}()
}

func pendingHandshakeFrom(ctx context.Context) *pendingHandshake {
	p, _ := ctx.Value(pendingHandshakeKey{}).(*pendingHandshake)
	return p
}

// connContext is the quic.Transport.ConnContext: it runs at the first
// packet of every new connection, and an error refuses the connection
// with CONNECTION_REFUSED before any TLS. quic-go ends the context it is
// handed when the connection closes or its handshake fails for any
// reason, which is what releases the connection's places.
func (g *quicGate) connContext(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
	from := udpAddrPort(ci.RemoteAddr)
	if !ci.AddrVerified {
		if g.unvalidated.Add(1) > g.maxUnvalidated {
			g.unvalidated.Add(-1)
			g.countRefusal(g.refusedHandshakes, from)
			return nil, errHandshakeCap
		}
		p := &pendingHandshake{gate: g}
		context.AfterFunc(ctx, p.done)
		ctx = context.WithValue(ctx, pendingHandshakeKey{}, p)
	}
	k, counted := g.lim.key(from.Addr())
	if !counted {
		return ctx, nil
	}
	a, ok := g.lim.acquire(k)
	if !ok {
		g.countRefusal(g.refused, from)
		return nil, errPerAddrCap // quic-go cancels ctx, which uncounts the handshake
	}
	context.AfterFunc(ctx, func() { g.lim.release(k) })
	return context.WithValue(ctx, addrStateKey{}, a), nil
}

// verifySourceAddress is the quic.Transport.VerifySourceAddress, asked of
// every new connection attempt that carries no valid token. It asks for a
// Retry when maxUnvalidated handshakes are in progress (see quicGate), or
// when the address holds half its cap: packets with a forged source cannot
// answer a Retry, so they can use up only half of a real address's places,
// and clients below half their cap keep their 0-RTT and their round trip.
func (g *quicGate) verifySourceAddress(a net.Addr) bool {
	if g.unvalidated.Load() >= g.maxUnvalidated {
		g.retriesLoaded.Inc()
		return true
	}
	k, counted := g.lim.key(udpAddrPort(a).Addr())
	if !counted || !g.lim.crowded(k) {
		return false
	}
	g.retriesCrowded.Inc()
	return true
}

func udpAddrPort(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	return netip.AddrPort{}
}
