// Package collector serves h3rum's test origins — a no-op /probe over
// HTTP/2 and HTTP/3 with per-connection Server-Timing — plus /healthz and
// /metrics, and hands every other path to the application's handler.
package collector

import (
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
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/crypto/acme/autocert"
)

// Defaults of the Server fields.
const (
	DefaultAddr            = ":8443"
	DefaultH2Addr          = ":8444"
	DefaultAltSvcMaxAge    = 24 * time.Hour
	DefaultDataDir         = "./var"
	DefaultMaxProbeBytes   = 1 << 20
	DefaultMaxHeaderBytes  = 64 << 10
	DefaultIdleTimeout     = 60 * time.Second
	DefaultShutdownTimeout = 10 * time.Second

	// maxMaxProbeBytes bounds MaxProbeBytes: the server keeps that many
	// random bytes in memory.
	maxMaxProbeBytes = 64 << 20
	// quicBufferSize is the UDP socket buffer size quic-go asks for.
	quicBufferSize = 7 << 20
)

// Server runs the two test origins of h3rum in one process:
//
//   - the H3 origin on Addr: HTTP/1.1 and HTTP/2 over TLS on TCP, and
//     HTTP/3 on UDP on the same port; its TCP responses advertise HTTP/3
//     with Alt-Svc;
//   - the H2 origin on H2Addr: TCP only, and every response says
//     "Alt-Svc: clear", so a browser never upgrades it to HTTP/3.
//
// Both answer /probe, /healthz and /metrics themselves and pass every other
// path to Handler. Configure it through the exported fields, whose zero
// values mean the documented defaults, then call Start (or Run). A Server
// must not be copied or reconfigured after Start.
//
// # UDP buffers
//
// quic-go asks the kernel for 7 MiB UDP receive and send buffers; with less,
// bursts of packets are dropped under load and HTTP/3 looks worse than it
// is. Linux caps what an unprivileged process gets at net.core.rmem_max and
// net.core.wmem_max (often 208 KiB). Start logs one warning when the
// buffers stay below 7 MiB. To raise the caps:
//
//	sysctl -w net.core.rmem_max=7500000 net.core.wmem_max=7500000
//
// and, to keep them across reboots, put the same two settings in
// /etc/sysctl.d/99-h3rum.conf. (quic-go may also print its own line about
// the same condition; QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING=true
// silences it.)
type Server struct {
	// Addr is the H3 origin's address, host:port, for TCP and UDP alike.
	// An empty host listens on all addresses (IPv4 and IPv6); "localhost"
	// listens on 127.0.0.1 and ::1. Port 0 picks a free port (tests).
	// Default ":8443".
	Addr string
	// H2Addr is the H2 origin's TCP address, as Addr. Default ":8444".
	H2Addr string

	// H3Host and H2Host are the two origins' host names, e.g.
	// h3.rumtest.example.com and h2.rumtest.example.com. When set, a
	// request that names the other origin's host is answered 421
	// Misdirected Request, which makes a browser that coalesced the two
	// origins onto one connection retry on a fresh one. Optional.
	H3Host, H2Host string

	// AltSvcPort is the UDP port advertised in the H3 origin's Alt-Svc,
	// for deployments where a load balancer's public port differs from
	// Addr's. Default: the port the H3 origin listens on.
	AltSvcPort int
	// AltSvcMaxAge is the ma= of the Alt-Svc header, in whole seconds.
	// Default 24h (86400).
	AltSvcMaxAge time.Duration

	// CertFile and KeyFile are the H3 origin's PEM certificate chain and
	// key. They are reloaded when either file changes (checked on every
	// TLS handshake), so renewed certificates need no restart. Optional:
	// without them the server uses ACME, else a development certificate.
	CertFile, KeyFile string
	// H2CertFile and H2KeyFile are the H2 origin's certificate and key,
	// reloaded like CertFile. Give each origin its own certificate that
	// does not cover the other host, so that browsers cannot coalesce the
	// two onto one connection. Default: the H3 origin's certificate.
	H2CertFile, H2KeyFile string

	// ACMEDomains turns on certificates from Let's Encrypt (via
	// golang.org/x/crypto/acme/autocert) for these host names, for an
	// origin without certificate files. The TLS-ALPN-01 challenge is
	// answered on the TCP listeners, so the origins must be reachable
	// on port 443. Optional.
	ACMEDomains []string
	// ACMECache is the directory where ACME keys and certificates are
	// kept. Default DataDir/acme.
	ACMECache string
	// ACMEEmail is the contact address given to the ACME CA. Optional.
	ACMEEmail string

	// DataDir is where the server keeps state: the development
	// certificate (dev-cert.pem, dev-key.pem) and the default ACME cache.
	// Default "./var".
	DataDir string

	// AllowOrigins are the page origins (scheme://host[:port]) allowed
	// to read /probe responses and their timings (CORS and
	// Timing-Allow-Origin). ["*"] allows every page. Default ["*"].
	AllowOrigins []string

	// MaxProbeBytes is the largest body /probe?bytes=N returns or
	// accepts in a POST, in bytes. Default 1 MiB; at most 64 MiB.
	MaxProbeBytes int

	// Echo enables /echo, which answers with what the server saw of the
	// request (headers included) for debugging. Default off.
	Echo bool

	// MaxHeaderBytes is the largest request header section answered
	// normally, in bytes, counted as HTTP/2 counts it (name + value + 32
	// per field); larger requests get 431 and are counted. The protocol
	// libraries stop reading at twice this size and answer 431
	// themselves, uncounted. Default 64 KiB.
	MaxHeaderBytes int

	// IdleTimeout closes connections, TCP and QUIC, that carried no
	// request for this long. Default 60s.
	IdleTimeout time.Duration

	// Handler serves every path except /probe, /healthz, /metrics (and
	// /echo when Echo is set), on both origins and all protocols. Its
	// answers are counted in /metrics; the ResponseWriter it gets still
	// supports http.Flusher, http.Hijacker and http.ResponseController.
	// Nil answers 404.
	Handler http.Handler

	// Registerer gets the server's metrics and the Go runtime and process
	// collectors (collectors another component registered first are
	// reused). Nil: no registration.
	Registerer prometheus.Registerer
	// Gatherer is what /metrics exposes. Default: Registerer when it is
	// also a Gatherer (a *prometheus.Registry is both); without either,
	// /metrics goes to Handler like any other path.
	Gatherer prometheus.Gatherer

	// Logger receives start-up, reload and error messages. Nil discards.
	Logger *slog.Logger

	// ShutdownTimeout bounds the graceful shutdown Run does when its
	// context ends: in-flight requests get this long to finish, then
	// remaining connections are closed. Default 10s.
	ShutdownTimeout time.Duration

	mu       sync.Mutex
	started  bool
	shutDown bool

	logger         *slog.Logger
	metrics        *metrics
	hdr            headerValues
	cors           corsPolicy
	maxProbeBytes  int
	maxHeaderBytes int
	payload        []byte
	connPrefix     string
	connSeq        atomic.Uint64
	dev            *DevCert

	h3Origin, h2Origin *origin
	h3Socks, h2Socks   sockets
	tcpH3, tcpH2       *http.Server
	quicSrv            *http3.Server
	h3InFlight         atomic.Int64 // HTTP/3 requests being handled

	wg       sync.WaitGroup
	errMu    sync.Mutex
	errs     []error
	failed   chan struct{} // closed on the first serve error
	failOnce sync.Once
	done     chan struct{} // closed when every serve loop has returned
}

func (s *Server) addr() string   { return cmpOr(s.Addr, DefaultAddr) }
func (s *Server) h2Addr() string { return cmpOr(s.H2Addr, DefaultH2Addr) }
func (s *Server) dataDir() string {
	return cmpOr(s.DataDir, DefaultDataDir)
}
func (s *Server) acmeCache() string {
	return cmpOr(s.ACMECache, filepath.Join(s.dataDir(), "acme"))
}
func (s *Server) idleTimeout() time.Duration {
	return cmpOr(s.IdleTimeout, DefaultIdleTimeout)
}
func (s *Server) shutdownTimeout() time.Duration {
	return cmpOr(s.ShutdownTimeout, DefaultShutdownTimeout)
}
func (s *Server) altSvcMaxAge() time.Duration {
	return cmpOr(s.AltSvcMaxAge, DefaultAltSvcMaxAge)
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Validate checks the whole configuration and returns every problem found,
// one per line, without listening on anything. It loads the certificate
// files, so unreadable or mismatched ones fail here.
func (s *Server) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	h3Host, h3Port, err := splitListenAddr(s.addr())
	if err != nil {
		add("addr: %w", err)
	}
	h2Host, h2Port, err2 := splitListenAddr(s.h2Addr())
	if err2 != nil {
		add("h2 addr: %w", err2)
	}
	if err == nil && err2 == nil && h3Port != 0 && h3Port == h2Port &&
		(h3Host == h2Host || h3Host == "" || h2Host == "") {
		add("addr %q and h2 addr %q use the same TCP port; the two origins need different ports", s.addr(), s.h2Addr())
	}

	for _, h := range []struct{ name, v string }{{"h3 host", s.H3Host}, {"h2 host", s.H2Host}} {
		if h.v != "" && !validHostName(h.v) {
			add("%s %q: want a host name without port, e.g. h3.rumtest.example.com", h.name, h.v)
		}
	}
	if s.H3Host != "" && strings.EqualFold(s.H3Host, s.H2Host) {
		add("h3 host and h2 host are both %q; the two origins need different host names", s.H3Host)
	}
	if s.AltSvcPort < 0 || s.AltSvcPort > 65535 {
		add("alt-svc port %d: want 1-65535, or 0 for the port the H3 origin listens on", s.AltSvcPort)
	}
	if s.AltSvcMaxAge < 0 {
		add("alt-svc max age %v: must not be negative", s.AltSvcMaxAge)
	}

	checkPair := func(name, cert, key string) {
		if (cert == "") != (key == "") {
			add("%s: give both the certificate file and the key file, or neither", name)
			return
		}
		if cert == "" {
			return
		}
		if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
			add("%s: loading certificate %q with key %q: %w", name, cert, key, err)
		}
	}
	checkPair("h3 origin TLS", s.CertFile, s.KeyFile)
	checkPair("h2 origin TLS", s.H2CertFile, s.H2KeyFile)

	for _, d := range s.ACMEDomains {
		if !validHostName(d) || !strings.Contains(d, ".") {
			add("acme domain %q: want a fully qualified host name", d)
		}
	}
	if len(s.ACMEDomains) > 0 {
		for _, h := range []struct{ name, v string }{{"h3 host", s.H3Host}, {"h2 host", s.H2Host}} {
			if h.v != "" && !slices.ContainsFunc(s.ACMEDomains, func(d string) bool { return strings.EqualFold(d, h.v) }) {
				add("%s %q is not among the acme domains %q", h.name, h.v, s.ACMEDomains)
			}
		}
	}
	if s.ACMEEmail != "" && !strings.Contains(s.ACMEEmail, "@") {
		add("acme email %q: not an e-mail address", s.ACMEEmail)
	}
	if len(s.ACMEDomains) == 0 && (s.ACMECache != "" || s.ACMEEmail != "") {
		add("acme cache or email given without acme domains")
	}

	if _, err := newCORSPolicy(s.AllowOrigins); err != nil {
		add("%w", err)
	}
	if s.MaxProbeBytes < 0 || s.MaxProbeBytes > maxMaxProbeBytes {
		add("max probe bytes %d: want 0 (default %d) to %d", s.MaxProbeBytes, DefaultMaxProbeBytes, maxMaxProbeBytes)
	}
	if s.MaxHeaderBytes < 0 {
		add("max header bytes %d: must not be negative", s.MaxHeaderBytes)
	}
	if s.IdleTimeout < 0 {
		add("idle timeout %v: must not be negative", s.IdleTimeout)
	}
	if s.ShutdownTimeout < 0 {
		add("shutdown timeout %v: must not be negative", s.ShutdownTimeout)
	}
	if fi, err := os.Stat(s.dataDir()); err == nil && !fi.IsDir() {
		add("data dir %q is not a directory", s.dataDir())
	}
	return errors.Join(errs...)
}

func splitListenAddr(a string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0, fmt.Errorf("%q: want host:port, e.g. :8443 or localhost:8443", a)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: port must be a number from 0 to 65535", a)
	}
	return host, port, nil
}

func validHostName(h string) bool {
	if h == "" || len(h) > 253 || strings.ContainsAny(h, ":/ ") {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

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
		s.h3Socks.close()
		s.h2Socks.close()
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
	s.maxProbeBytes = cmpOr(s.MaxProbeBytes, DefaultMaxProbeBytes)
	s.maxHeaderBytes = cmpOr(s.MaxHeaderBytes, DefaultMaxHeaderBytes)
	s.hdr = newHeaderValues()
	s.cors, _ = newCORSPolicy(s.AllowOrigins) // checked by Validate
	s.payload = make([]byte, s.maxProbeBytes)
	rand.Read(s.payload) // incompressible, so that no layer shrinks it
	var prefix [4]byte
	rand.Read(prefix[:])
	s.connPrefix = hex.EncodeToString(prefix[:])
	s.failed = make(chan struct{})
	s.done = make(chan struct{})

	s.metrics = newMetrics()
	if err := s.metrics.register(s.Registerer); err != nil {
		return err
	}
	gatherer := s.Gatherer
	if gatherer == nil {
		gatherer, _ = s.Registerer.(prometheus.Gatherer)
	}
	var metricsHandler http.Handler
	if gatherer != nil {
		metricsHandler = promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
			ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		})
	}

	h3Cert, h2Cert, acme, err := s.certificates()
	if err != nil {
		return err
	}

	s.h3Origin = &origin{srv: s, idx: 0, label: originH3, otherHost: s.H2Host, metrics: metricsHandler}
	s.h2Origin = &origin{srv: s, idx: 1, label: originH2, otherHost: s.H3Host, metrics: metricsHandler,
		altSvc: []string{"clear"}}
	for _, o := range []*origin{s.h3Origin, s.h2Origin} {
		o.openTCP = s.metrics.open.WithLabelValues(o.label, transportTCP)
		o.openQUIC = s.metrics.open.WithLabelValues(o.label, transportQUIC)
	}

	if s.h3Socks, err = bindOrigin(ctx, s.addr(), true, s.logger); err != nil {
		return fmt.Errorf("h3 origin: %w", err)
	}
	if s.h2Socks, err = bindOrigin(ctx, s.h2Addr(), false, s.logger); err != nil {
		return fmt.Errorf("h2 origin: %w", err)
	}
	altSvcPort := s.AltSvcPort
	if altSvcPort == 0 {
		altSvcPort = int(s.h3Socks.addrPort().Port())
	}
	s.h3Origin.altSvc = []string{fmt.Sprintf(`h3=":%d"; ma=%d`, altSvcPort, int64(s.altSvcMaxAge()/time.Second))}

	tcpProtos := []string{"h2", "http/1.1"}
	if acme {
		tcpProtos = append(tcpProtos, "acme-tls/1")
	}
	errorLog := slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug) // TLS handshake errors from scanners
	newTCP := func(o *origin, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *http.Server {
		conf := &tls.Config{
			MinVersion:       tls.VersionTLS12,
			GetCertificate:   getCert,
			NextProtos:       tcpProtos,
			VerifyConnection: o.verifyConnection,
		}
		// Make the session ticket keys before ServeTLS clones the config
		// per listener, so that a session resumes on any of them.
		_, _ = conf.DecryptTicket(nil, tls.ConnectionState{})
		return &http.Server{
			Handler:           o,
			TLSConfig:         conf,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       s.idleTimeout(),
			MaxHeaderBytes:    2 * s.maxHeaderBytes,
			ConnContext:       o.tcpConnContext,
			ConnState:         o.tcpConnState,
			ErrorLog:          errorLog,
		}
	}
	s.tcpH3 = newTCP(s.h3Origin, h3Cert)
	s.tcpH2 = newTCP(s.h2Origin, h2Cert)
	s.quicSrv = &http3.Server{
		Handler: inFlight{s.h3Origin, &s.h3InFlight},
		TLSConfig: &tls.Config{
			MinVersion:       tls.VersionTLS13,
			GetCertificate:   h3Cert,
			VerifyConnection: s.h3Origin.verifyConnection,
		},
		QUICConfig: &quic.Config{
			Allow0RTT:            true, // /probe is idempotent; EarlyData tells handlers that care
			HandshakeIdleTimeout: 5 * time.Second,
			MaxIdleTimeout:       s.idleTimeout(),
		},
		MaxHeaderBytes: 2 * s.maxHeaderBytes,
		IdleTimeout:    s.idleTimeout(),
		ConnContext:    s.h3Origin.quicConnContext,
		// Logger stays nil: quic-go logs every request at debug level,
		// which costs allocations on the probe path even when disabled.
	}

	s.checkUDPBuffers()
	for _, ln := range s.h3Socks.tcp {
		s.serve("h3 origin tcp "+ln.Addr().String(), func() error { return s.tcpH3.ServeTLS(ln, "", "") })
	}
	for _, pc := range s.h3Socks.udp {
		s.serve("h3 origin udp "+pc.LocalAddr().String(), func() error { return s.quicSrv.Serve(pc) })
	}
	for _, ln := range s.h2Socks.tcp {
		s.serve("h2 origin tcp "+ln.Addr().String(), func() error { return s.tcpH2.ServeTLS(ln, "", "") })
	}
	go func() {
		s.wg.Wait()
		close(s.done)
	}()

	s.logger.Info("h3 origin listening", "tcp", addrList(s.h3Socks.tcp), "udp", udpList(s.h3Socks.udp),
		"alt_svc", s.h3Origin.altSvc[0], "host", s.H3Host)
	s.logger.Info("h2 origin listening", "tcp", addrList(s.h2Socks.tcp), "alt_svc", "clear", "host", s.H2Host)
	return nil
}

// certificates returns the GetCertificate functions of the two origins,
// and whether ACME is in use.
func (s *Server) certificates() (h3, h2 func(*tls.ClientHelloInfo) (*tls.Certificate, error), acme bool, err error) {
	switch {
	case s.CertFile != "":
		fc, err := newFileCert(s.CertFile, s.KeyFile, s.logger)
		if err != nil {
			return nil, nil, false, fmt.Errorf("h3 origin TLS: %w", err)
		}
		h3 = fc.GetCertificate
	case len(s.ACMEDomains) > 0:
		m := &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			Cache:      autocert.DirCache(s.acmeCache()),
			HostPolicy: autocert.HostWhitelist(s.ACMEDomains...),
			Email:      s.ACMEEmail,
		}
		h3, acme = m.GetCertificate, true
		s.logger.Info("TLS certificates from ACME", "domains", s.ACMEDomains, "cache", s.acmeCache())
	default:
		cert, dev, err := loadOrCreateDevCert(s.dataDir(), time.Now())
		if err != nil {
			return nil, nil, false, err
		}
		s.dev = &dev
		h3 = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }
		s.logger.Info("using the self-signed development certificate", "cert", dev.CertFile, "spki", dev.SPKI)
	}
	h2 = h3
	if s.H2CertFile != "" {
		fc, err := newFileCert(s.H2CertFile, s.H2KeyFile, s.logger)
		if err != nil {
			return nil, nil, false, fmt.Errorf("h2 origin TLS: %w", err)
		}
		h2 = fc.GetCertificate
	}
	return h3, h2, acme, nil
}

// checkUDPBuffers grows the UDP socket buffers to what quic-go wants
// (which then leaves them alone) and warns once if the kernel refuses.
func (s *Server) checkUDPBuffers() {
	for _, c := range s.h3Socks.udp {
		_ = c.SetReadBuffer(quicBufferSize)
		_ = c.SetWriteBuffer(quicBufferSize)
		forceUDPBuffers(c, quicBufferSize)
		rcv, snd, err := udpBufferSizes(c)
		if err != nil {
			s.logger.Debug("cannot read UDP buffer sizes", "error", err)
			return
		}
		if rcv < quicBufferSize || snd < quicBufferSize {
			s.logger.Warn("the kernel limits UDP buffers below what QUIC needs under load; raise them with "+
				"sysctl -w net.core.rmem_max=7500000 net.core.wmem_max=7500000",
				"receive_kib", rcv/1024, "send_kib", snd/1024, "wanted_kib", quicBufferSize/1024)
		}
		return // one warning is enough: all sockets get the same limits
	}
}

func addrList(ls []net.Listener) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Addr().String()
	}
	return out
}

func udpList(cs []*net.UDPConn) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.LocalAddr().String()
	}
	return out
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
			s.logger.Error("serving stopped", "listener", name, "error", err)
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
// at once, HTTP/3 clients get GOAWAY, idle connections close, and in-flight
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
	var errH3, errTCPH3, errTCPH2 error
	wg.Go(func() { errTCPH3 = s.tcpH3.Shutdown(ctx) })
	wg.Go(func() { errTCPH2 = s.tcpH2.Shutdown(ctx) })
	wg.Go(func() { errH3 = s.shutdownQUIC(ctx) })
	wg.Wait()
	if ctx.Err() != nil {
		// http.Server.Shutdown leaves connections open when ctx ends.
		s.tcpH3.Close()
		s.tcpH2.Close()
		s.quicSrv.Close()
	}
	// The HTTP/3 server does not close sockets it was handed.
	for _, c := range s.h3Socks.udp {
		c.Close()
	}
	<-s.done
	return errors.Join(errTCPH3, errTCPH2, errH3)
}

// quicDrainGrace is how long Shutdown keeps HTTP/3 connections open once no
// request is in flight: time for clients to act on GOAWAY and close.
const quicDrainGrace = 250 * time.Millisecond

// shutdownQUIC stops the HTTP/3 server gracefully. quic-go waits until
// every client has closed its connection after GOAWAY; a client that is
// gone (a killed browser, a lost network) never does, and shutdown would
// take the whole deadline. So once no request has been in flight for
// quicDrainGrace, the remaining, idle connections are closed.
func (s *Server) shutdownQUIC(ctx context.Context) error {
	drained, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		t := time.NewTicker(quicDrainGrace / 5)
		defer t.Stop()
		var quietSince time.Time
		for {
			select {
			case <-drained.Done():
				return
			case now := <-t.C:
				switch {
				case s.h3InFlight.Load() > 0:
					quietSince = time.Time{}
				case quietSince.IsZero():
					quietSince = now
				case now.Sub(quietSince) >= quicDrainGrace:
					cancel()
					return
				}
			}
		}
	}()
	err := s.quicSrv.Shutdown(drained)
	if ctx.Err() == nil && errors.Is(err, context.Canceled) {
		return nil // drained: only idle connections were left
	}
	return err
}

// inFlight counts the requests its handler is serving.
type inFlight struct {
	h http.Handler
	n *atomic.Int64
}

func (f inFlight) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.n.Add(1)
	defer f.n.Add(-1)
	f.h.ServeHTTP(w, r)
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
