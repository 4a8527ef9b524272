package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/h3rum/h3rum/beacon"
)

// userAgent is sent on every probe over both protocols, so that the two
// request header sections are the same.
const userAgent = "h3rum-agent/" + BeaconVersion

// client is an HTTP client for one origin over one protocol: HTTP/3 on a
// UDP socket of its own, or HTTP/2 over TLS on TCP. A new client opens new
// connections; Close closes them and its socket.
type client struct {
	proto  beacon.Proto
	origin string
	rt     http.RoundTripper
	close  func()
}

func (cl *client) Close() { cl.close() }

// tlsConfig is the TLS configuration of every connection: TLS 1.3 only
// (QUIC requires it; over TCP it keeps the comparison like for like), and
// cache for session tickets (nil: no resumption). Both protocols offer the
// same key exchange, named here whatever either library's default: the
// hybrid post-quantum group browsers use, then X25519. Two different
// groups would bias a handshake comparison: the hybrid group costs more
// computation per handshake and makes the ClientHello span two QUIC packets.
func (r *run) tlsConfig(cache tls.ClientSessionCache) *tls.Config {
	return &tls.Config{RootCAs: r.c.Roots, MinVersion: tls.VersionTLS13, ClientSessionCache: cache,
		CurvePreferences: []tls.CurveID{tls.X25519MLKEM768, tls.X25519}}
}

// newClient returns a client of the origin that proto is measured on.
// With early, an HTTP/3 client's connections may carry 0-RTT requests
// (quic.Transport.DialEarly); else they are handed to HTTP/3 only once the
// handshake has completed (Dial), so that a resumed session sends nothing
// early and only the 0-RTT step exercises quic-go's 0-RTT path, which
// races with the handshake inside quic-go (quic-go#4303).
func (r *run) newClient(proto beacon.Proto, cache tls.ClientSessionCache, early bool) (*client, error) {
	if proto == beacon.ProtoH3 {
		udp, err := net.ListenUDP("udp", nil)
		if err != nil {
			return nil, fmt.Errorf("agent: opening a UDP socket for HTTP/3: %w", err)
		}
		qt := &quic.Transport{Conn: udp}
		rt := &http3.Transport{TLSClientConfig: r.tlsConfig(cache), Dial: r.dialQUIC(qt, early), DisableCompression: true}
		return &client{proto: proto, origin: r.c.H3Origin, rt: rt, close: func() {
			rt.Close() // closes the connections (CONNECTION_CLOSE)
			qt.Close()
			udp.Close()
		}}, nil
	}
	tr := &http.Transport{
		DialContext:         r.dialTCP,
		TLSClientConfig:     r.tlsConfig(cache),
		ForceAttemptHTTP2:   true,
		TLSHandshakeTimeout: r.timeout,
		DisableCompression:  true,
		MaxIdleConnsPerHost: beacon.MaxParallel,
		IdleConnTimeout:     time.Minute,
	}
	return &client{proto: proto, origin: r.c.H2Origin, rt: tr, close: tr.CloseIdleConnections}, nil
}

// dialTCP dials addr, or the address Resolve maps its host to. net.Dialer
// reports the DNS lookup and the TCP connect to the request's
// httptrace.ClientTrace.
func (r *run) dialTCP(ctx context.Context, network, addr string) (net.Conn, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip, ok := r.c.Resolve[host]; ok {
			addr = net.JoinHostPort(ip, port)
		}
	}
	d := net.Dialer{Timeout: r.timeout}
	return d.DialContext(ctx, network, addr)
}

// dialQUIC returns the http3.Transport's Dial: it resolves the host (or
// takes Resolve's address), dials on qt, and reports what net/http reports
// for TCP to the request's httptrace.ClientTrace — DNSStart/Done,
// ConnectStart, TLSHandshakeStart, and ConnectDone with TLSHandshakeDone
// when the QUIC handshake completes. With early, quic-go's DialEarly
// returns before that, so that a 0-RTT request can be sent at once; the
// completion is awaited in a goroutine that ends with the handshake or the
// connection. http3.Transport dials with the context of the request that
// caused the dial, so the trace is that request's.
func (r *run) dialQUIC(qt *quic.Transport, early bool) func(context.Context, string, *tls.Config, *quic.Config) (*quic.Conn, error) {
	return func(ctx context.Context, addr string, tlsConf *tls.Config, qc *quic.Config) (*quic.Conn, error) {
		trace := httptrace.ContextClientTrace(ctx)
		if trace == nil {
			trace = &httptrace.ClientTrace{}
		}
		host, portStr, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		port, err := strconv.ParseUint(portStr, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("port %q: %w", portStr, err)
		}
		ip, err := r.lookup(ctx, host, trace)
		if err != nil {
			return nil, err
		}
		ua := net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(port)))
		if trace.ConnectStart != nil {
			trace.ConnectStart("udp", ua.String())
		}
		if trace.TLSHandshakeStart != nil {
			trace.TLSHandshakeStart()
		}
		done := func(st tls.ConnectionState, err error) {
			if trace.TLSHandshakeDone != nil {
				trace.TLSHandshakeDone(st, err)
			}
			if trace.ConnectDone != nil {
				trace.ConnectDone("udp", ua.String(), err)
			}
		}
		dial := qt.Dial
		if early {
			dial = qt.DialEarly
		}
		conn, err := dial(ctx, ua, tlsConf, qc)
		if err != nil {
			done(tls.ConnectionState{}, err)
			return nil, err
		}
		go func() {
			select {
			case <-conn.HandshakeComplete():
				done(conn.ConnectionState().TLS, nil)
			case <-conn.Context().Done():
				done(tls.ConnectionState{}, context.Cause(conn.Context()))
			}
		}()
		return conn, nil
	}
}

// lookup returns host's address: from Resolve, the host itself when it is
// an address, else the first DNS answer, reported to trace.
func (r *run) lookup(ctx context.Context, host string, trace *httptrace.ClientTrace) (netip.Addr, error) {
	if ip, ok := r.c.Resolve[host]; ok {
		return netip.ParseAddr(ip) // checked by Validate
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, nil
	}
	if trace.DNSStart != nil {
		trace.DNSStart(httptrace.DNSStartInfo{Host: host})
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err == nil && len(ips) == 0 {
		err = fmt.Errorf("no address for %s", host)
	}
	if trace.DNSDone != nil {
		info := httptrace.DNSDoneInfo{Err: err}
		for _, ip := range ips {
			info.Addrs = append(info.Addrs, net.IPAddr{IP: ip.AsSlice(), Zone: ip.Zone()})
		}
		trace.DNSDone(info)
	}
	if err != nil {
		return netip.Addr{}, err
	}
	return ips[0].Unmap(), nil
}

// timing collects one request's moments from its httptrace.ClientTrace.
// The callbacks may run on other goroutines (the QUIC handshake's, a TCP
// dial's), hence the lock.
type timing struct {
	mu                  sync.Mutex
	dnsStart, dnsDone   time.Time
	connStart, connDone time.Time
	tlsStart, tlsDone   time.Time
	tlsErr              error
	tlsState            tls.ConnectionState
	// handshook is made at TLSHandshakeStart and closed at its Done.
	handshook    chan struct{}
	gotConn      bool
	reused       bool
	wrote, first time.Time
}

func (t *timing) trace() *httptrace.ClientTrace {
	at := func(p *time.Time, first bool) {
		now := time.Now()
		t.mu.Lock()
		if !first || p.IsZero() {
			*p = now
		}
		t.mu.Unlock()
	}
	return &httptrace.ClientTrace{
		DNSStart:     func(httptrace.DNSStartInfo) { at(&t.dnsStart, true) },
		DNSDone:      func(httptrace.DNSDoneInfo) { at(&t.dnsDone, false) },
		ConnectStart: func(string, string) { at(&t.connStart, true) },
		ConnectDone:  func(string, string, error) { at(&t.connDone, false) },
		TLSHandshakeStart: func() {
			now := time.Now()
			t.mu.Lock()
			if t.tlsStart.IsZero() {
				t.tlsStart = now
				t.handshook = make(chan struct{})
			}
			t.mu.Unlock()
		},
		TLSHandshakeDone: func(st tls.ConnectionState, err error) {
			now := time.Now()
			t.mu.Lock()
			if t.handshook != nil && t.tlsDone.IsZero() {
				t.tlsDone, t.tlsErr, t.tlsState = now, err, st
				close(t.handshook)
			}
			t.mu.Unlock()
		},
		GotConn: func(info httptrace.GotConnInfo) {
			t.mu.Lock()
			if !t.gotConn {
				t.gotConn, t.reused = true, info.Reused
			}
			t.mu.Unlock()
		},
		WroteRequest:         func(httptrace.WroteRequestInfo) { at(&t.wrote, false) },
		GotFirstResponseByte: func() { at(&t.first, true) },
	}
}

// awaitHandshake waits until a handshake this request started has
// completed, or ctx ends: a 0-RTT request's answer can arrive first.
func (t *timing) awaitHandshake(ctx context.Context) {
	t.mu.Lock()
	ch := t.handshook
	t.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
