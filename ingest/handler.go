package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/store"
)

// Sink is where the Handler hands enriched runs; *Pipeline is one. Accept
// returns nil only once the run is durable.
type Sink interface {
	Accept(ctx context.Context, run store.Run) error
}

// The Handler's defaults, which `h3rum serve`'s flags show.
const (
	// DefaultRateLimit is the sustained reports per second one client
	// address may send, to each of /beacon and /reports.
	DefaultRateLimit = 10
	// DefaultAgentRateLimit is the reports per second one agent
	// connection may send.
	DefaultAgentRateLimit = 50
	// DefaultConcurrencyWait is how long a report waits for a decoding
	// slot before it is answered 503.
	DefaultConcurrencyWait = 2 * time.Second
	// DefaultWSPingInterval is how often an idle agent WebSocket is pinged.
	DefaultWSPingInterval = 30 * time.Second
)

// Unlimited, as a Handler's RateLimit, turns the per-address rate limit
// off (behind a proxy that is not trusted, every client shares one address).
const Unlimited = -1

// Handler receives reports: POST /beacon from browsers (with its CORS
// preflight, OPTIONS /beacon), GET /ingest/ws, a WebSocket for
// long-lived agents, and POST /reports, browsers' Network Error Logging
// uploads (reports.go). It decodes, checks, rate-limits and enriches each
// report and answers once the Sink has made it durable; it never talks to
// ClickHouse. Every rejection is a status with a one-line "reason: detail"
// body, counted by reason in h3rum_ingest_rejected_total.
//
// Set the fields, call Init once (or let the first request do it), and
// mount the Handler at "/beacon", "/ingest/ws" and "/reports".
type Handler struct {
	// Sink makes accepted runs durable. Required.
	Sink Sink
	// Enricher adds region and browser; nil enriches without GeoIP.
	Enricher *Enricher
	// Sites lists the accepted data-site values; empty accepts any site.
	Sites []string
	// Origins are the pages that may post reports (the same rule that
	// lets them read probe timings); a request with another Origin is
	// refused (403). The zero value allows any page.
	Origins access.Origins
	// Clients resolves a report's client address: the socket peer, or the
	// one configured header when the peer is a trusted proxy.
	Clients access.Clients
	// GeoHeader names a request header carrying the client's country as set
	// by a CDN (e.g. "CF-IPCountry"). It is believed only from a peer in
	// Clients.TrustedProxies; empty ignores such headers.
	GeoHeader string
	// RateLimit is the sustained reports per second allowed per client
	// address (per /64 for IPv6) on POST /beacon, and apart from it on
	// POST /reports; it is applied before the body is read. Default
	// DefaultRateLimit; negative (Unlimited) turns it off.
	RateLimit float64
	// RateBurst is how many reports a client may send at once. Default
	// RateLimit rounded up, at least 1.
	RateBurst int
	// RateClients bounds the rate limiter's table. Default 100 000.
	RateClients int
	// MaxBodyBytes caps a report body. Default beacon.MaxReportBytes (32 KiB;
	// a full 10+1+2×20 run is about 15 KiB).
	MaxBodyBytes int64
	// AgentToken is the bearer token agents present on GET /ingest/ws;
	// empty disables the WebSocket transport (404).
	AgentToken string
	// AgentRateLimit is the sustained reports per second one agent
	// connection may send (agents are exempt from the per-address
	// RateLimit: many may share a host). Default DefaultAgentRateLimit;
	// bursts of as many.
	AgentRateLimit float64
	// Failures throttles wrong agent tokens per client address; nil does
	// not throttle. Share one with the report endpoints.
	Failures *access.Failures
	// WSPingInterval is how often the server pings an idle WebSocket; a
	// connection silent for two intervals is closed. Default
	// DefaultWSPingInterval.
	WSPingInterval time.Duration
	// MaxConcurrency is how many reports are decoded and enriched at once.
	// It keeps a burst of reports from taking every core away from the
	// probe, whose latency is what h3rum measures. Default GOMAXPROCS/2,
	// at least 1.
	MaxConcurrency int
	// ConcurrencyWait is how long a report waits for a decoding slot before
	// it is answered 503 with Retry-After. Default DefaultConcurrencyWait.
	ConcurrencyWait time.Duration
	// Logger receives connection-level events; per-request errors are only
	// counted. Nil discards.
	Logger *slog.Logger
	// Registerer receives the handler's metrics; nil registers none.
	Registerer prometheus.Registerer

	// NELSink makes accepted POST /reports uploads (the Reporting API's
	// Network Error Logging reports about the two origins) durable; nil
	// turns /reports off (404). See reports.go.
	NELSink NELSink
	// NELHosts are the host names NEL reports may be about: the two test
	// origins'. Reports about other hosts are counted and dropped, and an
	// upload whose Origin names another host is refused (403). Empty
	// accepts any (a development set-up on localhost).
	NELHosts []string
	// MaxNELBytes caps a /reports body. Default nel.MaxBodyBytes (128 KiB).
	MaxNELBytes int64

	slots   chan struct{} // decoding slots (MaxConcurrency)
	once    sync.Once
	initErr error
	mux     *http.ServeMux
	m       *handlerMetrics
	limiter *access.Limiter
	// nelLimiter is RateLimit for /reports uploads, apart from /beacon's so
	// that one cannot use up the other's allowance.
	nelLimiter *access.Limiter
	// beaconEP and nelEP are /beacon's and /reports' ways through receive.
	beaconEP, nelEP endpoint
	sessions        wsSessions // open /ingest/ws sessions
	log             *slog.Logger
	bodies          sync.Pool // *[]byte body buffers, reused across requests
}

// Init validates the configuration and registers the metrics. Calling it is
// optional (the first request does it) but reports errors at start-up.
func (h *Handler) Init() error {
	h.once.Do(h.init)
	return h.initErr
}

func (h *Handler) init() {
	h.log = h.Logger
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	if h.Sink == nil {
		errs = append(errs, errors.New("ingest handler: no Sink"))
	}
	if math.IsNaN(h.RateLimit) || math.IsInf(h.RateLimit, 0) {
		errs = append(errs, fmt.Errorf("ingest handler: rate limit %v must be a number (negative: unlimited)", h.RateLimit))
	}
	if h.AgentRateLimit < 0 || math.IsNaN(h.AgentRateLimit) || math.IsInf(h.AgentRateLimit, 0) {
		errs = append(errs, fmt.Errorf("ingest handler: agent rate limit %v must be a positive number or 0", h.AgentRateLimit))
	}
	if err := h.Clients.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("ingest handler: %w", err))
	}
	m, err := newHandlerMetrics(h.Registerer)
	if err != nil {
		errs = append(errs, fmt.Errorf("registering ingest handler metrics: %w", err))
	}
	h.m = m
	// Create every label value so dashboards see zeros, not gaps.
	for _, r := range []string{beacon.ReasonTooLarge, beacon.ReasonReadError, beacon.ReasonSiteNotAllowed, beacon.ReasonOriginNotAllowed,
		beacon.ReasonTooEarly, beacon.ReasonRateLimited, beacon.ReasonBusy, beacon.ReasonOverloaded, beacon.ReasonShuttingDown, beacon.ReasonSpoolError, beacon.ReasonCanceled,
		beacon.ReasonUnauthorized, beacon.ReasonBadMessage} {
		h.m.rejected.WithLabelValues(r)
	}
	for _, r := range beacon.DecodeReasons() {
		h.m.rejected.WithLabelValues(beacon.ReasonDecodePrefix + r)
	}
	for _, f := range append(beacon.DecodeFields(), fieldNone) {
		h.m.rejectedFields.WithLabelValues(f)
	}
	if rate := h.rateLimit(); rate > 0 {
		h.limiter = access.NewLimiter(rate, h.RateBurst, h.RateClients)
		h.nelLimiter = access.NewLimiter(rate, h.RateBurst, h.RateClients)
	}
	h.beaconEP = endpoint{rejected: h.m.rejected, originAllowed: h.originAllowed, cors: h.cors,
		originRefusal: "origin %.100q may not send reports", limiter: h.limiter, maxBody: h.maxBody}
	h.initNEL()
	n := h.MaxConcurrency
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)/2)
	}
	h.slots = make(chan struct{}, n)
	h.mux = http.NewServeMux()
	h.routes(h.mux)
	h.initErr = errors.Join(errs...)
}

// rateLimit is RateLimit resolved: 0 is the default, negative none.
func (h *Handler) rateLimit() float64 {
	if h.RateLimit == 0 {
		return DefaultRateLimit
	}
	return max(h.RateLimit, 0)
}

func (h *Handler) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /beacon", h.beacon)
	mux.HandleFunc("OPTIONS /beacon", h.preflight(&h.beaconEP))
	mux.HandleFunc("GET /ingest/ws", h.websocket)
	if h.NELSink != nil {
		mux.HandleFunc("POST /reports", h.reports)
		mux.HandleFunc("OPTIONS /reports", h.preflight(&h.nelEP))
	}
}

// ServeHTTP routes to the report endpoints.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.once.Do(h.init)
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) maxBody() int64 {
	if h.MaxBodyBytes > 0 {
		return h.MaxBodyBytes
	}
	return beacon.MaxReportBytes
}

// reject answers a /beacon request with status and a one-line reason,
// and counts it.
func (h *Handler) reject(w http.ResponseWriter, status int, reason, detail string) {
	h.beaconEP.reject(w, status, reason, detail)
}

// writeRejection answers with status and a one-line "reason: detail".
func writeRejection(w http.ResponseWriter, status int, reason, detail string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	io.WriteString(w, reason+": "+oneLine(detail)+"\n")
}

func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func retryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(d.Seconds())))))
}

// originAllowed reports whether a request with this Origin header may
// post; one without Origin (not sent by a page) may.
func (h *Handler) originAllowed(origin string) bool {
	return origin == "" || h.Origins.Allows(origin)
}

// cors sets the CORS response headers for an allowed origin. Credentials
// are never allowed.
func (h *Handler) cors(w http.ResponseWriter, origin string) {
	hd := w.Header()
	hd.Add("Vary", "Origin")
	if origin == "" {
		return
	}
	if h.Origins.Any() {
		hd.Set("Access-Control-Allow-Origin", "*")
	} else {
		hd.Set("Access-Control-Allow-Origin", origin)
	}
}

func (h *Handler) siteAllowed(site string) bool {
	return len(h.Sites) == 0 || slices.Contains(h.Sites, site)
}

// isEarlyData reports whether r arrived as TLS 0-RTT early data, before the
// handshake completed (and so could be a replay).
func isEarlyData(r *http.Request) bool {
	return r.TLS != nil && !r.TLS.HandshakeComplete
}

func (h *Handler) beacon(w http.ResponseWriter, r *http.Request) {
	received := time.Now().UTC()
	h.m.requests.WithLabelValues("post").Inc()
	sub, done, ok := h.receive(w, r, &h.beaconEP, received)
	if !ok {
		return
	}
	defer done()
	run, rej := h.admit(r.Context(), sub)
	if rej == nil {
		if err := h.Sink.Accept(r.Context(), run); err != nil {
			rej = acceptRejection(err)
		}
	}
	if rej != nil {
		h.beaconEP.refuse(w, rej)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// acquire takes a decoding slot: at once if one is free, else within
// ConcurrencyWait. It reports false when none came in time.
func (h *Handler) acquire(ctx context.Context) bool {
	select {
	case h.slots <- struct{}{}:
		return true
	default:
	}
	wait := h.ConcurrencyWait
	if wait <= 0 {
		wait = DefaultConcurrencyWait
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (h *Handler) release() { <-h.slots }

// readBody reads r to EOF into buf.
func readBody(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
