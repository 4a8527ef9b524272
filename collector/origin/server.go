// Package origin serves h3rum's two test origins, a no-op /probe over
// HTTP/2 and HTTP/3 with per-connection Server-Timing plus /healthz, hands
// every other path to the application's handler, and serves /metrics on a
// listener of its own.
package origin

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// Start validates the configuration, prepares TLS (creating the
// development certificate if needed), binds every socket and starts
// serving in background goroutines. It returns once all sockets are bound,
// so a client may connect as soon as it returns. ctx bounds only the
// start-up; stop the server with Shutdown (or use Run).
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("collector: server already started")
	}
	if err := s.Validate(); err != nil {
		return err
	}
	s.started = true
	if err := s.start(ctx); err != nil {
		for _, ln := range s.quicLns {
			ln.Close()
		}
		for _, tr := range s.quicTrs {
			tr.Close()
		}
		s.quicLns, s.quicTrs = nil, nil
		s.h3Socks.close()
		s.h2Socks.close()
		if s.metricsLn != nil {
			s.metricsLn.Close()
			s.metricsLn = nil
		}
		s.shutDown = true
		s.done = make(chan struct{})
		close(s.done)
		return err
	}
	return nil
}

func (s *Server) start(ctx context.Context) error {
	s.logger = s.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.maxProbeBytes = cmp.Or(s.MaxProbeBytes, DefaultMaxProbeBytes)
	s.maxHeaderBytes = cmp.Or(s.MaxHeaderBytes, DefaultMaxHeaderBytes)
	s.hdr = newHeaderValues()
	s.cors, _ = newCORSPolicy(s.AllowOrigins) // checked by Validate
	s.payload = make([]byte, s.maxProbeBytes)
	rand.Read(s.payload) // incompressible, so that no layer shrinks it
	var prefix [4]byte
	rand.Read(prefix[:])
	s.connPrefix = hex.EncodeToString(prefix[:])
	if s.CollectorID != "" {
		s.connPrefix = s.CollectorID + "." + s.connPrefix
	}
	s.failed = make(chan struct{})
	s.done = make(chan struct{})

	s.errorLog = newErrorLog(s.logger.Handler(), slog.LevelDebug) // TLS handshake errors from scanners
	s.limiter = newConnLimiter(s.maxConnsPerAddr(), s.maxConns(), s.TrustedProxies)
	s.maxReqs = int64(s.maxRequestsPerAddr())

	s.metrics = newMetrics()
	if err := s.metrics.register(s.Registerer); err != nil {
		return err
	}
	maxUnvalidated := int64(s.maxUnvalidatedHandshakes())
	s.gate = &quicGate{lim: s.limiter,
		maxUnvalidated: maxUnvalidated, maxUnvalidatedPerAddr: max(maxUnvalidated/unvalidatedShare, 1),
		refused: s.metrics.refusedQUIC, refusedHandshakes: s.metrics.refusedHandshakes,
		retriesCrowded: s.metrics.retryCrowded, retriesLoaded: s.metrics.retryLoaded, retriesAddrLoaded: s.metrics.retryAddrLoaded}
	if s.Registerer != nil {
		if err := s.Registerer.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: metricNamespace, Subsystem: metricSubsystem, Name: "quic_unvalidated_handshakes",
			Help: "QUIC handshakes in progress from addresses not validated yet; from MaxUnvalidatedHandshakes on, new ones must answer a Retry first.",
		}, func() float64 { return float64(s.gate.unvalidated.Load()) })); err != nil {
			return fmt.Errorf("registering metrics: %w", err)
		}
	}
	gatherer := s.Gatherer
	if gatherer == nil {
		gatherer, _ = s.Registerer.(prometheus.Gatherer)
	}
	if s.MetricsAddr != "" && gatherer == nil {
		return fmt.Errorf("metrics addr %q is set but there are no metrics to serve: set Registerer to a *prometheus.Registry, or Gatherer", s.MetricsAddr)
	}

	h3Cert, h2Cert, acme, err := s.certificates()
	if err != nil {
		return err
	}

	s.h3Origin = &testOrigin{srv: s, idx: 0, label: originH3, otherHost: s.H2Host}
	s.h2Origin = &testOrigin{srv: s, idx: 1, label: originH2, otherHost: s.H3Host, altSvc: []string{"clear"}}
	for _, o := range []*testOrigin{s.h3Origin, s.h2Origin} {
		o.openTCP = s.metrics.open.WithLabelValues(o.label, transportTCP)
		o.openQUIC = s.metrics.open.WithLabelValues(o.label, transportQUIC)
	}

	if s.h3Socks, err = bindOrigin(ctx, s.addr(), true, s.logger); err != nil {
		return fmt.Errorf("h3 origin: %w", err)
	}
	if s.h2Socks, err = bindOrigin(ctx, s.h2Addr(), false, s.logger); err != nil {
		return fmt.Errorf("h2 origin: %w", err)
	}
	if s.MetricsAddr != "" {
		var lc net.ListenConfig
		if s.metricsLn, err = lc.Listen(ctx, "tcp", s.MetricsAddr); err != nil {
			return fmt.Errorf("metrics: listening on %s: %w", s.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET "+pathMetrics, s.metricsHostCheck(s.metricsHandler(gatherer)))
		s.metricsSrv = &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: handshakeTimeout,
			WriteTimeout:      s.writeTimeout(),
			IdleTimeout:       s.idleTimeout(),
			ErrorLog:          s.errorLog,
		}
	}
	altSvcPort := s.AltSvcPort
	if altSvcPort == 0 {
		altSvcPort = int(s.h3Socks.addrPort().Port())
	}
	s.h3Origin.altSvc = []string{fmt.Sprintf(`h3=":%d"; ma=%d`, altSvcPort, int64(s.altSvcMaxAge()/time.Second))}
	s.setNEL()

	tcpProtos := []string{"h2", "http/1.1"}
	if acme {
		tcpProtos = append(tcpProtos, "acme-tls/1")
	}
	newTCP := func(o *testOrigin, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *http.Server {
		conf := &tls.Config{
			MinVersion:       tls.VersionTLS12,
			GetCertificate:   getCert,
			NextProtos:       tcpProtos,
			VerifyConnection: o.verifyConnection,
		}
		// Make the session ticket keys before ServeTLS clones the config
		// per listener, so that a session resumes on any of them.
		_, _ = conf.DecryptTicket(nil, tls.ConnectionState{})
		// ReadTimeout and WriteTimeout stay unset: over HTTP/2 they would
		// start timers for every stream, the probe's included. The
		// handlers set per-request deadlines instead (deadline.go).
		return &http.Server{
			Handler:           o,
			TLSConfig:         conf,
			ReadHeaderTimeout: handshakeTimeout,
			IdleTimeout:       s.idleTimeout(),
			MaxHeaderBytes:    2 * s.maxHeaderBytes,
			HTTP2: &http.HTTP2Config{MaxConcurrentStreams: maxConcurrentStreams, MaxEncoderHeaderTableSize: hpackEncoderTable,
				SendPingTimeout: s.headerTimeout() / 2, PingTimeout: s.headerTimeout() / 2},
			ConnContext: o.tcpConnContext,
			ConnState:   o.tcpConnState,
			ErrorLog:    s.errorLog,
		}
	}
	s.tcpH3 = newTCP(s.h3Origin, h3Cert)
	s.tcpH2 = newTCP(s.h2Origin, h2Cert)
	s.quicSrv = &http3.Server{
		Handler:        s.h3Origin,
		MaxHeaderBytes: 2 * s.maxHeaderBytes,
		IdleTimeout:    s.idleTimeout(),
		ConnContext:    s.h3Origin.quicConnContext,
		// Logger stays nil: quic-go logs every request at debug level,
		// which costs allocations on the probe path even when disabled.
	}
	s.h3Conns = newH3Conns(s.quicSrv, s.headerTimeout())
	s.checkUDPBuffers()
	if err := s.listenQUIC(h3Cert); err != nil {
		return fmt.Errorf("h3 origin: %w", err)
	}

	limited := func(o *testOrigin, ln net.Listener) net.Listener {
		return &limitListener{Listener: ln, lim: s.limiter, userTimeout: s.writeTimeout(), refused: s.metrics.refusedTCP[o.idx]}
	}
	for _, ln := range s.h3Socks.tcp {
		s.serve("h3 origin tcp "+ln.Addr().String(), func() error { return s.tcpH3.ServeTLS(limited(s.h3Origin, ln), "", "") })
	}
	for _, ln := range s.quicLns {
		s.serve("h3 origin udp "+ln.Addr().String(), func() error { return s.h3Conns.serve(ln) })
	}
	for _, ln := range s.h2Socks.tcp {
		s.serve("h2 origin tcp "+ln.Addr().String(), func() error { return s.tcpH2.ServeTLS(limited(s.h2Origin, ln), "", "") })
	}
	if s.metricsLn != nil {
		s.serve("metrics "+s.metricsLn.Addr().String(), func() error { return s.metricsSrv.Serve(s.metricsLn) })
	}
	go func() {
		s.wg.Wait()
		close(s.done)
	}()

	s.logger.Info("h3 origin listening", "tcp", addrList(s.h3Socks.tcp), "udp", udpList(s.h3Socks.udp),
		"alt_svc", s.h3Origin.altSvc[0], "host", s.H3Host)
	s.logger.Info("h2 origin listening", "tcp", addrList(s.h2Socks.tcp), "alt_svc", "clear", "host", s.H2Host)
	if s.metricsLn != nil {
		s.logger.Info("metrics listening", "addr", s.metricsLn.Addr().String(), "path", pathMetrics)
	}
	return nil
}

// Limits of the origins (README.md, "Security model").
const (
	// maxConcurrentStreams is how many requests a client may have in
	// flight on one connection, HTTP/2 and HTTP/3 alike. The beacon sends
	// at most 20 at once to a no-op endpoint; 32 leaves room for the
	// page's other requests to the collector (the script, a beacon)
	// without letting one connection hold hundreds of slow ones.
	// (RFC 9113 recommends at least 100 for general-purpose servers;
	// net/http would allow 250, quic-go 100.)
	maxConcurrentStreams = 32
	// hpackEncoderTable turns off HPACK's dynamic table for the headers
	// the origins send (0 would mean net/http's 4096 bytes; no entry is
	// smaller than 32 bytes, so 1 holds none). A probe's Server-Timing is
	// unique per response: indexed, each one was looked up in the table,
	// added to both ends' tables and evicted an older entry, in time the
	// constant headers too. Without the table every header is a literal,
	// as quic-go's QPACK (static table only) sends them over HTTP/3: a
	// probe's header block stays the same size from the first response on
	// (TestHPACKWithoutDynamicTable), which keeps the two protocols' bytes
	// alike and spares the server the table's upkeep.
	hpackEncoderTable = 1
	// handshakeTimeout bounds the TLS handshake over TCP and, over
	// HTTP/1.1, the reading of each request's header section.
	handshakeTimeout = 10 * time.Second
	// headerTimeout bounds an HTTP/2 header section: net/http has no
	// per-stream header deadline, but an unfinished header block stops
	// every other frame on the connection (RFC 9113 allows only its
	// CONTINUATION frames next), so a client that sends no complete frame
	// for half of it is sent a PING, and one that cannot answer it within
	// the other half is cut. Healthy idle connections answer one PING
	// every 5 s of silence.
	headerTimeout = 10 * time.Second
	// quicHandshakeTimeout bounds the QUIC handshake.
	quicHandshakeTimeout = 5 * time.Second
)

// listenQUIC starts QUIC on the H3 origin's UDP sockets, each with its
// own quic.Transport, whose hooks apply the per-address cap before any
// TLS (see quicGate).
//
// The TLS configuration comes from http3.ConfigureTLSConfig rather than
// from http3.Server, which would also record its HTTP/3 settings in
// session tickets and refuse 0-RTT when they have shrunk since. Tickets
// here are sealed with keys made at start-up, and the settings are fixed
// for the life of the process, so every ticket that opens carries the
// current settings.
func (s *Server) listenQUIC(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) error {
	tlsConf := http3.ConfigureTLSConfig(&tls.Config{
		MinVersion:       tls.VersionTLS13,
		GetCertificate:   getCert,
		VerifyConnection: s.h3Origin.verifyConnection,
	})
	quicConf := &quic.Config{
		Allow0RTT:             true, // /probe is idempotent; EarlyData tells handlers that care
		HandshakeIdleTimeout:  quicHandshakeTimeout,
		MaxIdleTimeout:        s.idleTimeout(),
		MaxIncomingStreams:    maxConcurrentStreams,
		MaxIncomingUniStreams: maxUniStreams,
	}
	gate := s.gate
	for _, pc := range s.h3Socks.udp {
		tr := &quic.Transport{
			Conn:                pc,
			ConnContext:         gate.connContext,
			VerifySourceAddress: gate.verifySourceAddress,
		}
		s.quicTrs = append(s.quicTrs, tr)
		ln, err := tr.ListenEarly(tlsConf, quicConf)
		if err != nil {
			return fmt.Errorf("listening for QUIC on udp %s: %w", pc.LocalAddr(), err)
		}
		s.quicLns = append(s.quicLns, ln)
	}
	return nil
}

// serve runs one serve loop and records how it ended.
func (s *Server) serve(name string, f func() error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := f(); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, quic.ErrServerClosed) {
			s.errMu.Lock()
			s.errs = append(s.errs, fmt.Errorf("serving %s: %w", name, err))
			s.errMu.Unlock()
			s.logger.Error("serving stopped", "listener", name, "err", err)
			s.failOnce.Do(func() { close(s.failed) })
		}
	}()
}

// Addrs returns the addresses the two origins listen on once Start has
// returned: the H3 origin's (TCP and UDP share the port) and the H2
// origin's. With a "localhost" address it is the IPv4 one.
func (s *Server) Addrs() (h3, h2 netip.AddrPort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h3Socks.addrPort(), s.h2Socks.addrPort()
}

// MetricsAddrPort returns the address the metrics listener is bound to
// once Start has returned; the zero AddrPort when MetricsAddr is empty.
func (s *Server) MetricsAddrPort() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.metricsLn == nil {
		return netip.AddrPort{}
	}
	if a, ok := s.metricsLn.Addr().(*net.TCPAddr); ok {
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// DevCert describes the development certificate in use; ok is false before
// Start and when certificates come from files or ACME.
func (s *Server) DevCert() (d DevCert, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dev == nil {
		return DevCert{}, false
	}
	return *s.dev, true
}

// Wait blocks until every serve loop has returned — after Shutdown, or
// after all of them failed — and returns their errors (nil after a clean
// Shutdown). Use Run to also stop when just one of them fails.
func (s *Server) Wait() error {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		return errors.New("collector: Wait called before Start")
	}
	<-s.done
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return errors.Join(s.errs...)
}

// Shutdown stops both origins gracefully and in parallel: listeners close
// at once, new HTTP/3 requests are rejected (see h3Conns), idle connections close, and in-flight
// requests may finish until ctx ends, when the remaining connections are
// closed and ctx's error is returned. It returns after every serve loop
// has ended. Connections hijacked by Handler (WebSockets) are not waited
// for; their owner closes them.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.started || s.shutDown {
		s.mu.Unlock()
		return nil
	}
	s.shutDown = true
	s.mu.Unlock()

	var wg sync.WaitGroup
	var errH3, errTCPH3, errTCPH2, errMetrics error
	wg.Go(func() { errTCPH3 = s.tcpH3.Shutdown(ctx) })
	wg.Go(func() { errTCPH2 = s.tcpH2.Shutdown(ctx) })
	wg.Go(func() { errH3 = s.h3Conns.shutdown(ctx) })
	if s.metricsSrv != nil {
		wg.Go(func() { errMetrics = s.metricsSrv.Shutdown(ctx) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		// http.Server.Shutdown leaves connections open when ctx ends.
		s.tcpH3.Close()
		s.tcpH2.Close()
		s.h3Conns.close()
		if s.metricsSrv != nil {
			s.metricsSrv.Close()
		}
	}
	// Then the QUIC listeners, their transports and sockets.
	for _, ln := range s.quicLns {
		ln.Close()
	}
	for _, tr := range s.quicTrs {
		tr.Close()
	}
	for _, c := range s.h3Socks.udp {
		c.Close()
	}
	<-s.done
	return errors.Join(errTCPH3, errTCPH2, errH3, errMetrics)
}

// Run serves until ctx ends or a serve loop fails, then shuts down
// gracefully within ShutdownTimeout. It calls Start first unless Start was
// already called (call Start yourself to print the addresses or the
// development certificate before serving). An expired shutdown deadline is
// logged, not returned: the server did stop. It returns serve errors.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if !started {
		if err := s.Start(ctx); err != nil {
			return err
		}
	}
	select {
	case <-ctx.Done():
		s.logger.Info("shutting down", "timeout", s.shutdownTimeout())
	case <-s.failed:
		s.logger.Info("shutting down after a serve error", "timeout", s.shutdownTimeout())
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdownTimeout())
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return errors.Join(fmt.Errorf("shutting down: %w", err), s.Wait())
		}
		s.logger.Warn("shutdown timeout passed; closed the remaining connections", "timeout", s.shutdownTimeout())
	}
	return s.Wait()
}
