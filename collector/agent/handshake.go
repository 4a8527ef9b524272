package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/h3rum/h3rum/beacon"
)

// handshakeStep is one connection set-up the agent times.
type handshakeStep struct {
	proto  beacon.Proto
	name   string // for logs
	method string
	// prime: the connection serves a second, unmeasured request and
	// stays open until the server's session ticket has arrived, so that
	// the next steps can resume.
	prime bool
}

// handshakeSteps are the set-ups in the order of Result.Handshakes. Each
// protocol's steps share one session cache, which its full handshake
// primes. Over TCP there is no 0-RTT step: Go's crypto/tls does not send
// TLS 1.3 early data (nor do browsers over TCP), so the TCP counterpart of
// a 0-RTT request is a resumed handshake, which still costs the TCP round
// trip and TLS's one.
var handshakeSteps = []handshakeStep{
	{beacon.ProtoH3, "h3 full", http.MethodGet, true},
	{beacon.ProtoH3, "h3 resumed", http.MethodGet, false},
	{beacon.ProtoH3, "h3 0-rtt", http3.MethodGet0RTT, false},
	{beacon.ProtoH2, "h2 full", http.MethodGet, true},
	{beacon.ProtoH2, "h2 resumed", http.MethodGet, false},
}

// handshakes times handshakeSteps, each the first request on a new
// connection of a new client (its own UDP socket for HTTP/3), closed
// before the next step starts; the resumed and 0-RTT steps only when the
// full handshake before them left a ticket (their seq numbers stay the
// steps' indexes). On a path with round trip R one expects
// about: QUIC full handshake + request 2R, QUIC 0-RTT 1R, TCP + TLS 1.3
// (full or resumed) + request 3R, plus the server's and the crypto's time.
//
// Each step after a full handshake resumes from its own copy of the ticket
// that handshake received: quic-go marks a cached session unfit for 0-RTT
// when a connection resumes it without 0-RTT, and a resumed connection's
// own ticket can arrive after it has closed, so sharing one cache would
// make the 0-RTT step depend on the resumed step's timing.
func (r *run) handshakes(ctx context.Context) ([]beacon.Sample, []tls.CurveID, error) {
	var (
		samples []beacon.Sample
		curves  []tls.CurveID
		primed  *ticket // the last full handshake's
	)
	for i, step := range handshakeSteps {
		cache := newTicketCache()
		if !step.prime {
			if primed == nil {
				// Without a ticket (the full handshake failed or sent
				// none) a resumed or 0-RTT step would be another full
				// handshake, or another wait where the path is blocked:
				// it is left out rather than reported as what it is not.
				continue
			}
			primed.seed(cache)
		}
		m, err := r.connect(ctx, step, cache, i)
		if err != nil {
			return nil, nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("agent: run %s interrupted: %w", r.idHex, err)
		}
		if step.prime {
			primed = cache.ticket()
		}
		s := m.handshake(r, i)
		m.t.mu.Lock()
		st := m.t.tlsState
		m.t.mu.Unlock()
		r.log.Debug("handshake", "run", r.idHex, "step", step.name, "connect_ms", s.Connect, "duration_ms", s.Duration,
			"key_exchange", st.CurveID.String(), "client_resumed", st.DidResume, "server_resumed", s.Server.Resumed,
			"early", s.Server.EarlyData, "err", s.Error)
		samples = append(samples, s)
		curves = append(curves, st.CurveID)
	}
	return samples, curves, nil
}

// connect performs one step on a new client and closes it.
func (r *run) connect(ctx context.Context, step handshakeStep, cache *ticketCache, seq int) (*measurement, error) {
	cl, err := r.newClient(step.proto, cache, step.method == http3.MethodGet0RTT)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	tag := "h" + strconv.Itoa(seq)
	m := r.request(ctx, cl, step.method, tag)
	if !step.prime || m.errCode != "" {
		return m, nil
	}
	// A TLS 1.3 session ticket arrives after the handshake, in a message
	// of its own; a second request lets it come, and the wait makes sure
	// it has before the connection closes.
	r.request(ctx, cl, http.MethodGet, tag+".2")
	wait := time.NewTimer(r.timeout)
	defer wait.Stop()
	select {
	case <-cache.stored:
	case <-wait.C:
		r.log.Warn("no TLS session ticket from the origin: the resumed and 0-RTT handshakes will be full ones",
			"run", r.idHex, "step", step.name, "origin", cl.origin)
	case <-ctx.Done():
	}
	return m, nil
}

// ticketCache is a session cache that says when it has received a ticket.
type ticketCache struct {
	tls.ClientSessionCache
	once   sync.Once
	stored chan struct{} // closed at the first ticket

	mu    sync.Mutex
	key   string
	first *tls.ClientSessionState
}

func newTicketCache() *ticketCache {
	return &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4), stored: make(chan struct{})}
}

func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs == nil {
		return
	}
	c.once.Do(func() {
		c.mu.Lock()
		c.key, c.first = key, cs
		c.mu.Unlock()
		close(c.stored)
	})
}

// ticket is a session ticket kept apart from any cache, as bytes.
type ticket struct {
	key, label string
	state      []byte
}

// ticket returns a copy of the first ticket c received, nil if none.
func (c *ticketCache) ticket() *ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first == nil {
		return nil
	}
	label, st, err := c.first.ResumptionState()
	if err != nil || st == nil {
		return nil
	}
	b, err := st.Bytes()
	if err != nil {
		return nil
	}
	return &ticket{key: c.key, label: string(label), state: b}
}

// seed puts a fresh copy of t into c; a nil t puts nothing.
func (t *ticket) seed(c *ticketCache) {
	if t == nil {
		return
	}
	st, err := tls.ParseSessionState(t.state)
	if err != nil {
		return
	}
	cs, err := tls.NewResumptionState([]byte(t.label), st)
	if err != nil {
		return
	}
	c.ClientSessionCache.Put(t.key, cs) // not c.Put: c waits for its own ticket
}
