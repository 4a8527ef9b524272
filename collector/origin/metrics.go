package origin

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Label values. Origins are the two test origins; protocols are what the
// request arrived over; transports are what the connection runs on.
const (
	originH3 = "h3"
	originH2 = "h2"

	protoH1 = "h1"
	protoH2 = "h2"
	protoH3 = "h3"

	transportTCP  = "tcp"
	transportQUIC = "quic"
)

// protoIndex maps an HTTP major version to an index into the pre-resolved
// counter arrays and to its label value.
func protoIndex(major int) int {
	switch major {
	case 3:
		return 2
	case 2:
		return 1
	default:
		return 0
	}
}

var protoLabels = [3]string{protoH1, protoH2, protoH3}

// metrics are the collector's Prometheus metrics. The counters the probe
// touches on every request are resolved once so that the hot path does no
// label hashing.
type metrics struct {
	requests   *prometheus.CounterVec   // origin, proto, code
	conns      *prometheus.CounterVec   // origin, transport
	open       *prometheus.GaugeVec     // origin, transport
	handshakes *prometheus.CounterVec   // origin, proto, resumed
	early      *prometheus.CounterVec   // origin, proto
	probe      *prometheus.HistogramVec // proto
	refused    *prometheus.CounterVec   // origin, transport, reason
	reqRefused *prometheus.CounterVec   // reason
	retries    *prometheus.CounterVec   // origin

	// ok[origin][proto][0] counts 204, [1] counts 200.
	ok       [2][3][2]prometheus.Counter
	probeObs [3]prometheus.Observer

	// Connections refused for each connection cap: TCP by origin, and
	// QUIC (H3 origin only); QUIC ones refused for the caps on unvalidated
	// handshakes; Retries asked of crowded addresses, under handshake
	// load, and of addresses with their share of it.
	refusedTCP                                 [2][numCaps]prometheus.Counter
	refusedQUIC                                [numCaps]prometheus.Counter
	refusedHandshakes                          prometheus.Counter
	retryCrowded, retryLoaded, retryAddrLoaded prometheus.Counter
	// Requests refused for the per-address cap on requests in flight.
	refusedRequests prometheus.Counter
}

// Reasons for refusing a connection, or asking it for a Retry.
const (
	reasonPerAddrCap        = "per_addr_cap"
	reasonPer48Cap          = "per_48_cap"
	reasonTotalCap          = "total_cap"
	reasonHandshakeCap      = "handshake_cap"
	reasonCrowdedAddr       = "crowded_addr"
	reasonHandshakeLoad     = "handshake_load"
	reasonAddrHandshakeLoad = "addr_handshake_load"
	reasonPerAddrRequests   = "per_addr_requests"
)

// metricNamespace and metricSubsystem name every metric h3rum_collector_<name>.
const metricNamespace, metricSubsystem = "h3rum", "collector"

func newMetrics() *metrics {
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: metricNamespace, Subsystem: metricSubsystem, Name: name, Help: help}
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts(opts(name, help)), labels)
	}
	return &metrics{
		requests: counter("requests_total", "HTTP requests answered, by origin (h3 or h2 test origin), protocol the request arrived over and status code (101 for hijacked connections).",
			"origin", "proto", "code"),
		conns: counter("connections_total", "Connections accepted, by origin and transport (tcp or quic).",
			"origin", "transport"),
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("open_connections", "Connections currently open, by origin and transport (tcp or quic).")),
			[]string{"origin", "transport"}),
		handshakes: counter("tls_handshakes_total", "Completed TLS handshakes, by origin, negotiated protocol (h1, h2, h3) and whether the session was resumed.",
			"origin", "proto", "resumed"),
		early: counter("early_data_requests_total", "Requests that arrived as 0-RTT early data, before the TLS handshake completed.",
			"origin", "proto"),
		probe: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricNamespace, Subsystem: metricSubsystem, Name: "probe_handling_seconds",
			Help:    "Server handling time of /probe (the app entry of its Server-Timing), by protocol.",
			Buckets: []float64{5e-6, 10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 10e-3, 100e-3, 1},
		}, []string{"proto"}),
		refused: counter("connections_refused_total", "Connections refused before their handshake, by origin, transport (tcp or quic) and reason (per_addr_cap: the client's address had MaxConnsPerAddr connections open; per_48_cap: its IPv6 /48 had 8 times that; total_cap: the server had MaxConns; handshake_cap: MaxUnvalidatedHandshakes QUIC handshakes from unvalidated addresses were in progress, or a sixteenth of them from the client's address).",
			"origin", "transport", "reason"),
		reqRefused: counter("requests_refused_total", "Requests refused with 429 before anything of them was read, by reason (per_addr_requests: the client's address had MaxRequestsPerAddr requests in flight over all its connections).",
			"reason"),
		retries: counter("quic_retries_total", "QUIC connection attempts asked to prove their address with a Retry, which costs them a round trip, by reason (crowded_addr: their address held half of MaxConnsPerAddr; handshake_load: MaxUnvalidatedHandshakes handshakes from unvalidated addresses were in progress, as in a flood with forged sources; addr_handshake_load: a sixteenth of them were from their own address).",
			"origin", "reason"),
	}
}

// register registers the metrics, the Go runtime and the process collector
// with reg. Collectors another component already registered (typically the
// Go and process collectors) are reused, so that one registry can be shared.
func (m *metrics) register(reg prometheus.Registerer) error {
	if reg != nil {
		var err error
		if m.requests, err = registerOrReuse(reg, m.requests); err != nil {
			return err
		}
		if m.conns, err = registerOrReuse(reg, m.conns); err != nil {
			return err
		}
		if m.open, err = registerOrReuse(reg, m.open); err != nil {
			return err
		}
		if m.handshakes, err = registerOrReuse(reg, m.handshakes); err != nil {
			return err
		}
		if m.early, err = registerOrReuse(reg, m.early); err != nil {
			return err
		}
		if m.probe, err = registerOrReuse(reg, m.probe); err != nil {
			return err
		}
		if m.refused, err = registerOrReuse(reg, m.refused); err != nil {
			return err
		}
		if m.retries, err = registerOrReuse(reg, m.retries); err != nil {
			return err
		}
		if m.reqRefused, err = registerOrReuse(reg, m.reqRefused); err != nil {
			return err
		}
		if _, err = registerOrReuse(reg, collectors.NewGoCollector()); err != nil {
			return err
		}
		if _, err = registerOrReuse(reg, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return err
		}
	}
	for o, oLabel := range [2]string{originH3, originH2} {
		for p, proto := range protoLabels {
			m.ok[o][p][0] = m.requests.WithLabelValues(oLabel, proto, "204")
			m.ok[o][p][1] = m.requests.WithLabelValues(oLabel, proto, "200")
		}
	}
	for p, proto := range protoLabels {
		m.probeObs[p] = m.probe.WithLabelValues(proto)
	}
	for c, reason := range capReasons {
		for o, oLabel := range [2]string{originH3, originH2} {
			m.refusedTCP[o][c] = m.refused.WithLabelValues(oLabel, transportTCP, reason)
		}
		m.refusedQUIC[c] = m.refused.WithLabelValues(originH3, transportQUIC, reason)
	}
	m.refusedHandshakes = m.refused.WithLabelValues(originH3, transportQUIC, reasonHandshakeCap)
	m.retryCrowded = m.retries.WithLabelValues(originH3, reasonCrowdedAddr)
	m.retryLoaded = m.retries.WithLabelValues(originH3, reasonHandshakeLoad)
	m.retryAddrLoaded = m.retries.WithLabelValues(originH3, reasonAddrHandshakeLoad)
	m.refusedRequests = m.reqRefused.WithLabelValues(reasonPerAddrRequests)
	return nil
}

// metricsHandler serves the metrics of g (Prometheus text or protobuf).
func (s *Server) metricsHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	})
}

// metricsHostCheck answers 421 to requests whose Host is not one the
// metrics listener answers to (see Server.MetricsHosts): a page on another
// site that points its own name at 127.0.0.1 must not read /metrics.
func (s *Server) metricsHostCheck(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.metricsHost(hostOnly(r.Host)) {
			http.Error(w, "misdirected request: the metrics listener answers to IP addresses, local names and --metrics-hosts, not "+strconv.Quote(r.Host), http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) metricsHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" {
		return false
	}
	if !strings.Contains(h, ".") {
		return true
	}
	// Suffixes no public DNS delegates: no web page has a name under them.
	for _, suffix := range [...]string{".localhost", ".internal", ".local", ".home.arpa", ".cluster.local"} {
		if strings.HasSuffix(h, suffix) {
			return true
		}
	}
	return slices.ContainsFunc(s.MetricsHosts, func(m string) bool { return strings.EqualFold(strings.TrimSuffix(m, "."), h) })
}

func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("registering metrics: %w", err)
}

// countRequest counts one answered request.
func (m *metrics) countRequest(o, proto int, code int) {
	switch code {
	case 204:
		m.ok[o][proto][0].Inc()
	case 200:
		m.ok[o][proto][1].Inc()
	default:
		m.requests.WithLabelValues(originLabel(o), protoLabels[proto], strconv.Itoa(code)).Inc()
	}
}

func originLabel(o int) string {
	if o == 0 {
		return originH3
	}
	return originH2
}
