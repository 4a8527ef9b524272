package origin

import (
	"context"
	"errors"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"

	"github.com/h3rum/h3rum/ingest/access"
)

// connLimiter caps the connections open at once, over every listener of
// the server: from one client address, from one IPv6 /48, and in all (see
// Server.MaxConnsPerAddr and Server.MaxConns). It keeps the count of each
// address's requests in flight and QUIC handshakes not validated yet.
type connLimiter struct {
	max      int // per address; < 0: no cap, nor per /48
	max48    int // per IPv6 /48, over all its addresses
	maxTotal int // in all, trusted proxies' included; < 0: no cap
	trusted  access.Prefixes

	mu     sync.Mutex
	open   map[netip.Addr]*addrState // by key; deleted with their last connection
	open48 map[netip.Addr]int        // by /48; deleted at zero
	total  int
}

// per48 is how many times an address's cap one IPv6 /48 may hold over all
// its /64s (see Server.MaxConnsPerAddr).
const per48 = 8

// addrState is what the limiter keeps about one client address while it
// has connections open.
type addrState struct {
	conns      int          // guarded by connLimiter.mu
	reqs       atomic.Int64 // requests being handled, over all its connections
	handshakes atomic.Int64 // QUIC handshakes in progress from it, address not validated yet
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

// newConnLimiter returns a limiter with max connections per address (< 0:
// no cap) and maxTotal in all (< 0: no cap); trusted proxies count only
// towards maxTotal.
func newConnLimiter(max, maxTotal int, trusted []netip.Prefix) *connLimiter {
	return &connLimiter{max: max, max48: per48 * min(max, math.MaxInt/per48), maxTotal: maxTotal, trusted: trusted,
		open: make(map[netip.Addr]*addrState), open48: make(map[netip.Addr]int)}
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

// prefix48 returns the /48 of the IPv6 key k.
func prefix48(k netip.Addr) netip.Addr {
	p, _ := k.Prefix(48)
	return p.Addr()
}

// A connCap is one of the caps acquire applies, in the order it checks
// them.
type connCap int

const (
	capAddr  connCap = iota // per address
	cap48                   // per IPv6 /48
	capTotal                // in all
	numCaps
)

// Why a connection over each cap is refused (QUIC), and the reason it is
// counted under.
var (
	capErrors = [numCaps]error{
		errors.New("too many connections from this address"),
		errors.New("too many connections from this IPv6 /48"),
		errors.New("too many connections open"),
	}
	capReasons = [numCaps]string{reasonPerAddrCap, reasonPer48Cap, reasonTotalCap}
)

// place is one connection's place in the limiter, which release gives
// back.
type place struct {
	key  netip.Addr // valid when counted per address
	addr *addrState // the address's state; nil when not counted per address
}

// acquire counts one more connection from peer, unless one of the caps
// would be passed, which it returns.
func (l *connLimiter) acquire(peer netip.Addr) (place, connCap, bool) {
	k, counted := l.key(peer)
	l.mu.Lock()
	defer l.mu.Unlock()
	var a *addrState
	if counted {
		a = l.open[k]
		if a != nil && a.conns >= l.max {
			return place{}, capAddr, false
		}
		if k.Is6() && l.open48[prefix48(k)] >= l.max48 {
			return place{}, cap48, false
		}
	}
	if l.maxTotal >= 0 && l.total >= l.maxTotal {
		return place{}, capTotal, false
	}
	l.total++
	if !counted {
		return place{}, 0, true
	}
	if a == nil {
		a = &addrState{}
		l.open[k] = a
	}
	a.conns++
	if k.Is6() {
		l.open48[prefix48(k)]++
	}
	return place{key: k, addr: a}, 0, true
}

// release gives back a place acquire gave.
func (l *connLimiter) release(p place) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if p.addr == nil {
		return
	}
	if p.addr.conns > 1 {
		p.addr.conns--
	} else {
		delete(l.open, p.key)
	}
	if p.key.Is6() {
		k48 := prefix48(p.key)
		if n := l.open48[k48]; n > 1 {
			l.open48[k48] = n - 1
		} else {
			delete(l.open48, k48)
		}
	}
}

// load returns how many connections k holds and how many of its QUIC
// handshakes are in progress from an address not validated yet.
func (l *connLimiter) load(k netip.Addr) (conns int, handshakes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.open[k]; a != nil {
		return a.conns, a.handshakes.Load()
	}
	return 0, 0
}

// limitListener is a TCP listener that resets connections over the
// per-address cap as soon as they are accepted, before any TLS, and sets
// TCP_USER_TIMEOUT on the others.
type limitListener struct {
	net.Listener
	lim         *connLimiter
	userTimeout time.Duration
	refused     [numCaps]prometheus.Counter
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
		p, over, ok := l.lim.acquire(addr)
		if !ok {
			// A reset rather than a close: no TIME_WAIT left behind by
			// a client that keeps trying.
			tc.SetLinger(0)
			tc.Close()
			l.refused[over].Inc()
			continue
		}
		setUserTimeout(tc, l.userTimeout)
		return &limitedConn{TCPConn: tc, lim: l.lim, place: p}, nil
	}
}

// limitedConn is a counted TCP connection: closing it releases its place.
// It embeds *net.TCPConn so that the socket stays reachable (TCP_INFO for
// Server-Timing) through syscall.Conn.
type limitedConn struct {
	*net.TCPConn
	lim    *connLimiter
	place  place
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.lim.release(c.place)
	}
	return c.TCPConn.Close()
}

// errHandshakeCap refuses a QUIC connection attempt past the caps on
// unvalidated handshakes.
var errHandshakeCap = errors.New("too many handshakes from unvalidated addresses in progress")

// quicGate applies the connection caps and the caps on unvalidated
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
//
// One client address may hold only a small share of those handshakes
// (maxUnvalidatedPerAddr): past it, its own new attempts answer a Retry.
// Otherwise a client that does not forge its source, and so can only ever
// use its own address, could start maxUnvalidated handshakes and make
// every other client pay a Retry.
type quicGate struct {
	lim                   *connLimiter
	maxUnvalidated        int64
	maxUnvalidatedPerAddr int64
	unvalidated           atomic.Int64 // handshakes in progress from unvalidated addresses

	refused                                          [numCaps]prometheus.Counter
	refusedHandshakes                                prometheus.Counter
	retriesCrowded, retriesLoaded, retriesAddrLoaded prometheus.Counter

	// A client's first flight is often two Initial packets (a ClientHello
	// with a post-quantum key share does not fit in one), and each is
	// refused on its own: the last few refused sources are remembered
	// so that one attempt is counted once.
	mu     sync.Mutex
	recent [16]refusal
	next   int

	// The sources a Retry was sent to lately: a connection from one of
	// them that comes with a valid token paid a Retry's round trip, which
	// its Server-Timing says (retriedKey). Bounded; a flood of forged
	// Initials only makes marks missing, never wrong.
	retryMu   sync.Mutex
	retried   [1024]refusal
	retryNext int
}

// retryMemory is how long a Retry's destination is remembered: longer
// than a client takes to answer it, and than quic-go accepts its token.
const retryMemory = 10 * time.Second

// rememberRetry records that a Retry was sent to a.
func (g *quicGate) rememberRetry(a netip.AddrPort) {
	g.retryMu.Lock()
	g.retried[g.retryNext] = refusal{from: a, at: time.Now()}
	g.retryNext = (g.retryNext + 1) % len(g.retried)
	g.retryMu.Unlock()
}

// paidRetry reports whether a Retry was sent to a lately.
func (g *quicGate) paidRetry(a netip.AddrPort) bool {
	now := time.Now()
	g.retryMu.Lock()
	defer g.retryMu.Unlock()
	for _, r := range g.retried {
		if r.from == a && now.Sub(r.at) < retryMemory {
			return true
		}
	}
	return false
}

// retriedKey marks the context of a connection that paid a Retry.
type retriedKey struct{}

func retriedFrom(ctx context.Context) bool {
	r, _ := ctx.Value(retriedKey{}).(bool)
	return r
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

// unvalidatedShare: one client address may have a sixteenth of
// MaxUnvalidatedHandshakes in progress (see there).
const unvalidatedShare = 16

// pendingHandshake is an unvalidated handshake counted by quicGate, found
// again through the connection's context once quic-go hands the connection
// over (see Server.quicConnContext).
type pendingHandshake struct {
	gate *quicGate
	addr *addrState // nil when its address is not counted
	once sync.Once
}

type pendingHandshakeKey struct{}

// startHandshake counts an unvalidated handshake from a (nil: an address
// not counted), unless that would pass one of the caps.
func (g *quicGate) startHandshake(a *addrState) (*pendingHandshake, bool) {
	if g.unvalidated.Add(1) > g.maxUnvalidated {
		g.unvalidated.Add(-1)
		return nil, false
	}
	if a != nil && a.handshakes.Add(1) > g.maxUnvalidatedPerAddr {
		a.handshakes.Add(-1)
		g.unvalidated.Add(-1)
		return nil, false
	}
	return &pendingHandshake{gate: g, addr: a}, true
}

// done uncounts the handshake: it completed (the address is validated by
// then) or the connection ended.
func (p *pendingHandshake) done() {
	p.once.Do(func() {
		p.gate.unvalidated.Add(-1)
		if p.addr != nil {
			p.addr.handshakes.Add(-1)
		}
	})
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
	p, over, ok := g.lim.acquire(from.Addr())
	if !ok {
		g.countRefusal(g.refused[over], from)
		return nil, capErrors[over]
	}
	context.AfterFunc(ctx, func() { g.lim.release(p) })
	if ci.AddrVerified && g.paidRetry(from) {
		ctx = context.WithValue(ctx, retriedKey{}, true)
	}
	if !ci.AddrVerified {
		h, ok := g.startHandshake(p.addr)
		if !ok {
			g.countRefusal(g.refusedHandshakes, from)
			return nil, errHandshakeCap // quic-go cancels ctx, which releases the place
		}
		context.AfterFunc(ctx, h.done)
		ctx = context.WithValue(ctx, pendingHandshakeKey{}, h)
	}
	if p.addr == nil {
		return ctx, nil
	}
	return context.WithValue(ctx, addrStateKey{}, p.addr), nil
}

// verifySourceAddress is the quic.Transport.VerifySourceAddress, asked of
// every new connection attempt that carries no valid token. It asks for a
// Retry when maxUnvalidated handshakes are in progress, or the address has
// its share of them (see quicGate), or when the address holds half its
// cap: packets with a forged source cannot answer a Retry, so they can use
// up only half of a real address's places, and clients below half their
// cap keep their 0-RTT and their round trip. (Forged sources hold at most
// maxUnvalidated places in all, far fewer than a /48's or the server's.)
func (g *quicGate) verifySourceAddress(a net.Addr) bool {
	if g.retry(a) {
		g.rememberRetry(udpAddrPort(a))
		return true
	}
	return false
}

// retry is verifySourceAddress's decision, counted by reason.
func (g *quicGate) retry(a net.Addr) bool {
	if g.unvalidated.Load() >= g.maxUnvalidated {
		g.retriesLoaded.Inc()
		return true
	}
	k, counted := g.lim.key(udpAddrPort(a).Addr())
	if !counted {
		return false
	}
	switch conns, handshakes := g.lim.load(k); {
	case 2*conns >= g.lim.max:
		g.retriesCrowded.Inc()
		return true
	case handshakes >= g.maxUnvalidatedPerAddr:
		g.retriesAddrLoaded.Inc()
		return true
	}
	return false
}

func udpAddrPort(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	return netip.AddrPort{}
}
