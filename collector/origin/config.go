package origin

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go/http3"
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

	h3Origin, h2Origin *testOrigin
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

func (s *Server) addr() string   { return cmp.Or(s.Addr, DefaultAddr) }
func (s *Server) h2Addr() string { return cmp.Or(s.H2Addr, DefaultH2Addr) }
func (s *Server) dataDir() string {
	return cmp.Or(s.DataDir, DefaultDataDir)
}
func (s *Server) acmeCache() string {
	return cmp.Or(s.ACMECache, filepath.Join(s.dataDir(), "acme"))
}
func (s *Server) idleTimeout() time.Duration {
	return cmp.Or(s.IdleTimeout, DefaultIdleTimeout)
}
func (s *Server) shutdownTimeout() time.Duration {
	return cmp.Or(s.ShutdownTimeout, DefaultShutdownTimeout)
}
func (s *Server) altSvcMaxAge() time.Duration {
	return cmp.Or(s.AltSvcMaxAge, DefaultAltSvcMaxAge)
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
