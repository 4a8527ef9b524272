package origin

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/h3rum/h3rum/beacon"
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
	DefaultBodyTimeout     = 10 * time.Second
	DefaultWriteTimeout    = 30 * time.Second
	DefaultMaxConnsPerAddr = 512
	// DefaultMaxConns: see Server.MaxConns.
	DefaultMaxConns = 16384
	// DefaultMaxUnvalidatedHandshakes: see Server.MaxUnvalidatedHandshakes.
	DefaultMaxUnvalidatedHandshakes = 256
	DefaultMaxRequestsPerAddr       = 1024
	// DefaultMetricsAddr is where `h3rum serve` exposes /metrics unless
	// told otherwise. A Server's zero MetricsAddr opens no listener: a
	// fixed port in every Server would collide in tests and embedders.
	DefaultMetricsAddr = "localhost:9464"

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
// Both answer /probe and /healthz themselves and pass every other path to
// Handler. Metrics are served on a listener of their own, MetricsAddr,
// never on the origins. Configure it through the exported fields, whose
// zero values mean the documented defaults, then call Start (or Run). A
// Server must not be copied or reconfigured after Start.
//
// The origins face the internet, so whatever one client can hold is
// bounded by the fields below; README.md's "Security model" says what each
// limit guards against, and "Operating system tuning" the kernel settings
// the host needs for QUIC.
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

	// BodyTimeout is the longest a client may take to send a request body,
	// counted from when the handler starts: a request whose body is still
	// incomplete then is answered 408 by /probe, and Handler's reads of
	// it fail with os.ErrDeadlineExceeded. Default 10s.
	BodyTimeout time.Duration
	// WriteTimeout is the longest one response may take to write, counted
	// from when the handler starts; a response still being written then is
	// cut (the stream reset, or over HTTP/1.1 the connection closed).
	// /probe answers of up to 16 KiB are exempt (largeProbeBody). On
	// Linux it also closes a TCP connection whose client acknowledges
	// nothing that was sent for this long. Handler may extend the deadline
	// of a response that streams for longer through
	// http.ResponseController. Default 30s.
	WriteTimeout time.Duration

	// MaxConnsPerAddr is how many connections one client address may
	// have open at once, TCP and QUIC to both origins together; an IPv6
	// client's address is its /64, which is what one subscriber gets. A
	// browser running the test holds three (the H3 origin over TCP and
	// QUIC, the H2 origin over TCP), a few more at times, until
	// IdleTimeout after its last request. Carrier-grade NAT puts hundreds
	// or thousands of subscribers behind one IPv4 address, but only those
	// running the test at the same moment count: the default lets well
	// over a hundred of them do so, while a single host cannot hold
	// thousands of connections. An IPv6 /48 may hold 8 times as many over
	// all its /64s (4096 by default): a /48 is one site, or at a mobile
	// carrier the /64s of many devices, but not 65 536 subscribers
	// running the test at once. Negative: no cap, per address or per
	// /48. Default 512.
	MaxConnsPerAddr int
	// MaxConns is how many connections the server keeps open at once, TCP
	// and QUIC to both origins together, trusted proxies' included; one
	// more is refused like one over MaxConnsPerAddr and counted
	// (reason="total_cap"). It bounds the memory connections hold however
	// many addresses they come from: an idle QUIC connection costs the
	// server about 60 KB, a TCP one less, so the default stays within
	// about 1 GB. Carrier-grade NAT does not bear on it, as it is not per
	// address: the default is 32 addresses at their cap, or some 5 000
	// browsers running the test at the same moment. Negative: no cap.
	// Default 16384.
	MaxConns int
	// MaxRequestsPerAddr is how many requests one client address (an IPv4
	// address or an IPv6 /64) may have in flight at once, summed over all
	// its connections, HTTP/1.1, HTTP/2 and HTTP/3 alike; one more is
	// answered 429 before anything of it is read (over HTTP/1.1 with
	// Connection: close) and counted in
	// h3rum_collector_requests_refused_total. Streams per connection
	// (32) times MaxConnsPerAddr would let one address hold over 16 000
	// slow requests; a browser running the test has at most 20 in flight
	// at once, so the default leaves room for about 50 of them behind one
	// carrier-grade NAT address at the same moment. Negative: no cap.
	// TrustedProxies are not counted. Default 1024.
	MaxRequestsPerAddr int
	// MaxUnvalidatedHandshakes is how many QUIC handshakes from addresses
	// not validated yet may be in progress at once, over all clients. From
	// this many on, every new QUIC connection without a token must first
	// answer a Retry (one more round trip, counted in
	// h3rum_collector_quic_retries_total{reason="handshake_load"}), which
	// a packet with a forged source address never does: a flood of such
	// Initials then costs a stateless Retry each instead of a TLS
	// handshake and its state. A handshake is unvalidated for about one
	// client round trip, so the default of 256 lets some 850 new
	// connections a second through without a Retry at a 300 ms round trip
	// (a browser running the test opens one QUIC connection), and bounds
	// the half-open state to about 25 MB. One client address (an IPv4
	// address or an IPv6 /64) may have a sixteenth of them in progress
	// (16 by default, some 50 new connections a second); past that its own
	// new connections answer a Retry (reason="addr_handshake_load"), so
	// that one address cannot make everyone else pay for one. Default 256.
	MaxUnvalidatedHandshakes int
	// TrustedProxies are the addresses of proxies and load balancers in
	// front of the server, whose connections carry many clients and are
	// not capped by MaxConnsPerAddr (MaxConns counts them). Optional.
	TrustedProxies []netip.Prefix

	// Handler serves every path except /probe and /healthz (and /echo
	// when Echo is set), on both origins and all protocols; /metrics
	// included, which is not served on the origins. Its answers are
	// counted in the metrics; the ResponseWriter it gets still supports
	// http.Flusher, http.Hijacker and http.ResponseController (deadlines
	// included: see BodyTimeout and WriteTimeout). Nil answers 404.
	Handler http.Handler

	// Registerer gets the server's metrics and the Go runtime and process
	// collectors (collectors another component registered first are
	// reused). Nil: no registration.
	Registerer prometheus.Registerer
	// Gatherer is what /metrics on MetricsAddr exposes. Default:
	// Registerer when it is also a Gatherer (a *prometheus.Registry is
	// both).
	Gatherer prometheus.Gatherer
	// MetricsAddr is the host:port of a plain-HTTP listener that serves
	// /metrics (Prometheus) and nothing else, for a private network or
	// loopback: it has no TLS and no per-address cap. Start fails when it
	// is set and there is no Gatherer. Default "": no metrics listener
	// (`h3rum serve` defaults to DefaultMetricsAddr).
	MetricsAddr string
	// MetricsHosts are further host names the metrics listener answers
	// to. It answers a request only when its Host cannot be a web page's
	// own domain pointed at the listener's address (DNS rebinding): an IP
	// address, a name without a dot (localhost, a Compose service), a
	// name under .localhost, .internal, .local, .home.arpa or
	// .cluster.local, or one of these. Others get 421. Optional.
	MetricsHosts []string

	// CollectorID names this collector (its POP), e.g. "fra-1": 1 to 32
	// lower-case letters, digits and hyphens. It prefixes every server
	// connection id in Server-Timing ("fra-1.<random>-<n>"), so each
	// sample carries the collector whose probe served it, whichever
	// collector receives the report. Optional.
	CollectorID string

	// NEL is the Network Error Logging policy both origins send (see NEL).
	// The zero value sends none.
	NEL NEL

	// NoProbe turns /probe off (it goes to Handler like any other path):
	// for a process that only takes reports while probes are served
	// elsewhere.
	NoProbe bool

	// HealthDetail, when set, adds lines to the /healthz answer, e.g.
	// "clickhouse: down\n". /healthz stays 200 while the origins serve: the
	// probe is what a load balancer routes, and reports are spooled while
	// the store is away.
	HealthDetail func() string

	// Logger receives start-up, reload and error messages, and at debug
	// level what net/http reports about failed connections (TLS handshakes
	// from scanners), without client addresses or strings clients sent.
	// Nil discards.
	Logger *slog.Logger

	// ShutdownTimeout bounds the graceful shutdown Run does when its
	// context ends: in-flight requests get this long to finish, then
	// remaining connections are closed. Default 10s.
	ShutdownTimeout time.Duration

	mu       sync.Mutex
	started  bool
	shutDown bool

	logger            *slog.Logger
	metrics           *metrics
	hdr               headerValues
	cors              corsPolicy
	maxProbeBytes     int
	maxHeaderBytes    int
	limiter           *connLimiter
	gate              *quicGate
	maxReqs           int64         // MaxRequestsPerAddr; <= 0: no cap
	testHeaderTimeout time.Duration // tests: headerTimeout, shorter
	errorLog          *log.Logger
	payload           []byte
	connPrefix        string
	dev               *DevCert

	h3Origin, h2Origin *testOrigin
	h3Socks, h2Socks   sockets
	tcpH3, tcpH2       *http.Server
	quicSrv            *http3.Server
	h3Conns            *h3Conns
	quicLns            []*quic.EarlyListener
	quicTrs            []*quic.Transport
	metricsLn          net.Listener
	metricsSrv         *http.Server

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
func (s *Server) bodyTimeout() time.Duration {
	return cmp.Or(s.BodyTimeout, DefaultBodyTimeout)
}
func (s *Server) writeTimeout() time.Duration {
	return cmp.Or(s.WriteTimeout, DefaultWriteTimeout)
}
func (s *Server) maxConnsPerAddr() int {
	return cmp.Or(s.MaxConnsPerAddr, DefaultMaxConnsPerAddr)
}
func (s *Server) maxConns() int {
	return cmp.Or(s.MaxConns, DefaultMaxConns)
}
func (s *Server) headerTimeout() time.Duration {
	return cmp.Or(s.testHeaderTimeout, headerTimeout)
}
func (s *Server) maxRequestsPerAddr() int {
	return cmp.Or(s.MaxRequestsPerAddr, DefaultMaxRequestsPerAddr)
}
func (s *Server) maxUnvalidatedHandshakes() int {
	return cmp.Or(s.MaxUnvalidatedHandshakes, DefaultMaxUnvalidatedHandshakes)
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
	if err == nil && err2 == nil && samePort(h3Host, h3Port, h2Host, h2Port) {
		add("addr %q and h2 addr %q use the same TCP port; the two origins need different ports", s.addr(), s.h2Addr())
	}
	if s.MetricsAddr != "" {
		mHost, mPort, err3 := splitListenAddr(s.MetricsAddr)
		switch {
		case err3 != nil:
			add("metrics addr: %w", err3)
		case err == nil && samePort(mHost, mPort, h3Host, h3Port):
			add("metrics addr %q and addr %q use the same TCP port", s.MetricsAddr, s.addr())
		case err2 == nil && samePort(mHost, mPort, h2Host, h2Port):
			add("metrics addr %q and h2 addr %q use the same TCP port", s.MetricsAddr, s.h2Addr())
		}
	}

	for _, h := range []struct{ name, v string }{{"h3 host", s.H3Host}, {"h2 host", s.H2Host}} {
		if h.v != "" && !validHostName(h.v) {
			add("%s %q: want a host name without port, e.g. h3.rumtest.example.com", h.name, h.v)
		}
	}
	if s.H3Host != "" && strings.EqualFold(s.H3Host, s.H2Host) {
		add("h3 host and h2 host are both %q; the two origins need different host names", s.H3Host)
	}
	errs = append(errs, s.NEL.validate()...)
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
	if s.CollectorID != "" && !beacon.ValidCollectorID(s.CollectorID) {
		add("collector id %q: want 1 to 32 lower-case letters, digits and hyphens, e.g. fra-1", s.CollectorID)
	}
	if s.MaxProbeBytes < 0 || s.MaxProbeBytes > maxMaxProbeBytes {
		add("max probe bytes %d: want 0 (default %d) to %d", s.MaxProbeBytes, DefaultMaxProbeBytes, maxMaxProbeBytes)
	}
	if s.MaxHeaderBytes < 0 {
		add("max header bytes %d: must not be negative", s.MaxHeaderBytes)
	}
	if s.MaxUnvalidatedHandshakes < 0 {
		add("max unvalidated handshakes %d: must not be negative", s.MaxUnvalidatedHandshakes)
	}
	if s.IdleTimeout < 0 {
		add("idle timeout %v: must not be negative", s.IdleTimeout)
	}
	if s.ShutdownTimeout < 0 {
		add("shutdown timeout %v: must not be negative", s.ShutdownTimeout)
	}
	if s.BodyTimeout < 0 {
		add("body timeout %v: must not be negative", s.BodyTimeout)
	}
	if s.WriteTimeout < 0 {
		add("write timeout %v: must not be negative", s.WriteTimeout)
	}
	for _, h := range s.MetricsHosts {
		if !validHostName(h) {
			add("metrics host %q: want a host name without port", h)
		}
	}
	for _, p := range s.TrustedProxies {
		if !p.IsValid() {
			add("trusted proxies: %q is not a valid prefix", p)
		}
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

// samePort reports whether two TCP listen addresses collide: the same
// port, chosen (not 0), on the same host or with either on every address.
func samePort(host1 string, port1 int, host2 string, port2 int) bool {
	return port1 != 0 && port1 == port2 && (host1 == host2 || host1 == "" || host2 == "")
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
