// Package serve runs a collector: the two test origins, the report
// endpoints and their ingest pipeline, the report and dashboard
// endpoints, and the metrics listener, configured by a Config.
package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/collector/origin"
	"github.com/h3rum/h3rum/ingest"
	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/local"
	"github.com/h3rum/h3rum/queries/api"
)

// Roles of a serve process.
const (
	RoleAll    = "all"    // probe and ingest in one process
	RoleProbe  = "probe"  // only the origins, /probe and the script; no ClickHouse
	RoleIngest = "ingest" // reports, ClickHouse and the report endpoints; no /probe
)

// Config is a collector: the settings of the packages it runs, each
// owned by its package (a zero field means that package's default), and
// what only serve decides. Each setting is the `h3rum serve` flag its
// comment names; Validate's messages name those flags.
type Config struct {
	// Origin is the two origins (--addr … --metrics-addr, --alt-svc-*,
	// --nel-max-age … --nel-endpoint). Validate sets DataDir and
	// TrustedProxies, and NEL by Role; Run sets Handler, Registerer,
	// Logger, NoProbe and HealthDetail.
	Origin origin.Server
	// Store is --clickhouse, --data-dir and --cluster; Run sets Start and
	// Logger.
	Store store.Options
	// Ingest takes the reports (--sites … --ingest-concurrency,
	// --nel-hosts). Its Clients are the one rule for client addresses
	// (--trusted-proxies, --client-ip-header) that the origins and the
	// report endpoints follow too. Validate fills NELHosts; Run sets
	// Sink, Enricher, Origins, Failures, NELSink, Logger and Registerer.
	Ingest ingest.Handler
	// Pipeline makes reports durable and inserts them (--batch-rows …
	// --retention). Run sets Conn, Dir, Cluster, ClusterDial, Ready,
	// Feed, Logger and Registerer.
	Pipeline ingest.Pipeline
	// Queries answers the report endpoints (--report-token,
	// --open-reports, --report-concurrency). Run sets Conn, Clients,
	// Failures, Hub and Logger.
	Queries api.Handler

	GeoIPDB string // --geoip-db, comma-separated
	ASNDB   string // --asn-db

	Role      string // RoleAll, RoleProbe or RoleIngest
	IngestURL string // where a probe-only collector's demo sends reports

	// Logger gets the collector's log; nil: slog.Default.
	Logger *slog.Logger
	// Stdout gets the development certificate's instructions; nil: none.
	Stdout io.Writer
	// Ready, when set (tests), is called once the origins listen.
	Ready func(*Started)
}

// MaxCommitDelay bounds --commit-delay: a lone report is acknowledged that
// much later.
const MaxCommitDelay = time.Second

// Started is a collector that listens, as Config.Ready sees it.
type Started struct {
	Origin *origin.Server
	Local  *local.Server // the managed ClickHouse, if this collector runs one
}

// MinTokenBytes is the shortest bearer token serve accepts: a token is the
// only credential of the report and agent endpoints on the internet, so it
// must not be guessable.
const MinTokenBytes = 32

// ConfigError is a Config that cannot be served as given: a usage error.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Validate checks c as a whole, before anything listens, and fills the
// Origin fields derived from the others. Errors are *ConfigError.
func (c *Config) Validate() error {
	var errs []error
	switch c.Role {
	case RoleAll, RoleIngest:
		if c.IngestURL != "" {
			errs = append(errs, errors.New("--ingest-url is for --role probe (this process takes the reports itself)"))
		}
	case RoleProbe:
		if c.IngestURL != "" {
			if u, err := url.Parse(c.IngestURL); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
				errs = append(errs, fmt.Errorf("--ingest-url %q: want an origin, e.g. https://ingest.rumtest.example.com", c.IngestURL))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("--role %q: want all, probe or ingest", c.Role))
	}
	ih, pipe, qh := &c.Ingest, &c.Pipeline, &c.Queries
	if ih.MaxConcurrency < 0 {
		errs = append(errs, errors.New("--ingest-concurrency must not be negative"))
	}
	if ih.AgentRateLimit < 0 {
		errs = append(errs, errors.New("--agent-rate-limit must not be negative"))
	}
	if qh.MaxConcurrent < 0 {
		errs = append(errs, errors.New("--report-concurrency must not be negative"))
	}
	if err := ih.Clients.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--client-ip-header: %w", err))
	}
	if len(ih.Clients.TrustedProxies) == 0 {
		// Headers only trusted proxies may set would be believed from no one.
		if ih.GeoHeader != "" {
			errs = append(errs, errors.New("--geo-header is believed only from --trusted-proxies; give the CDN's address ranges"))
		}
		if !strings.EqualFold(ih.Clients.Header, access.DefaultClientIPHeader) {
			errs = append(errs, errors.New("--client-ip-header is read only from --trusted-proxies; give their address ranges"))
		}
	}
	if ih.MaxBodyBytes != 0 && ih.MaxBodyBytes < 1024 {
		errs = append(errs, errors.New("--max-beacon-bytes must be at least 1024"))
	}
	if pipe.BatchRows < 0 {
		errs = append(errs, errors.New("--batch-rows must not be negative"))
	}
	if pipe.FlushInterval < 0 {
		errs = append(errs, errors.New("--flush-interval must not be negative"))
	}
	if pipe.CommitDelay > MaxCommitDelay {
		errs = append(errs, fmt.Errorf("--commit-delay must be at most %v (negative: none)", MaxCommitDelay))
	}
	if pipe.SpoolMaxBytes != 0 && pipe.SpoolMaxBytes < 1<<20 {
		errs = append(errs, errors.New("--spool-max-bytes must be at least 1 MiB"))
	}
	if pipe.Retention < 0 {
		errs = append(errs, errors.New("--retention must not be negative"))
	}
	for _, tok := range []struct{ name, value string }{{"report-token", qh.Token}, {"agent-token", ih.AgentToken}} {
		if tok.value != "" && len(tok.value) < MinTokenBytes {
			errs = append(errs, fmt.Errorf("--%s is %d bytes; use at least %d (e.g. openssl rand -hex 32)", tok.name, len(tok.value), MinTokenBytes))
		}
	}
	if qh.AllowOpen {
		switch {
		case qh.Token != "":
			errs = append(errs, errors.New("--open-reports answers without a token: give it or --report-token, not both"))
		case c.Role == RoleProbe:
			errs = append(errs, errors.New("--open-reports: --role probe serves no reports"))
		default:
			if err := access.CheckOpen([]string{c.Origin.Addr, c.Origin.H2Addr}, ih.Clients.TrustedProxies); err != nil {
				errs = append(errs, fmt.Errorf("--open-reports: %w", err))
			}
		}
	}
	if c.Origin.NEL.MaxAge < 0 {
		errs = append(errs, errors.New("--nel-max-age must not be negative"))
	}
	c.Origin.NEL = c.nel()
	c.Origin.TrustedProxies = ih.Clients.TrustedProxies
	c.Origin.DataDir = c.Store.DataDir
	ih.NELHosts = c.Origin.NELHosts(ih.NELHosts)
	if err := c.Origin.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return &ConfigError{err}
	}
	return nil
}

// nel is the origins' NEL policy: none for an ingest-only process (it has
// no probe) or a probe-only one with nowhere to send reports. Validate may
// run more than once, so it must be idempotent.
func (c *Config) nel() origin.NEL {
	n := c.Origin.NEL
	n.MaxAge = max(n.MaxAge, 0) // a negative one is reported by Validate on its own
	switch c.Role {
	case RoleIngest:
		return origin.NEL{}
	case RoleProbe:
		// A bad --ingest-url is reported by Validate on its own.
		return n.ViaIngest(c.IngestURL)
	}
	return n
}

// Run validates c and runs the collector until ctx ends. Start-up goes
// storage, ingest, HTTP; shutdown the reverse, so that nothing accepted is
// left behind.
func Run(ctx context.Context, c *Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	log := cmp.Or(c.Logger, slog.Default())
	// Open everything that can fail on bad input before anything listens.
	var geo *ingest.GeoIP
	if c.GeoIPDB != "" || c.ASNDB != "" {
		var err error
		if geo, err = ingest.OpenGeoIP(c.GeoIPDB, c.ASNDB); err != nil {
			return err
		}
	}
	unlock, err := lockDataDir(c.Store.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	reg := prometheus.NewRegistry()
	mux := http.NewServeMux()
	bh := &beacon.Handler{H3Origin: demoOrigin(c.Origin.H3Host, c.Origin.Addr), H2Origin: demoOrigin(c.Origin.H2Host, c.Origin.H2Addr),
		Endpoint: c.IngestURL}
	bh.Register(mux)
	srv := &c.Origin
	srv.Handler, srv.Registerer, srv.Logger = mux, reg, log
	srv.NoProbe = c.Role == RoleIngest
	started := &Started{Origin: srv}
	if c.Role == RoleProbe {
		mux.HandleFunc("/beacon", notHere)
		mux.HandleFunc("/ingest/ws", notHere)
		mux.HandleFunc("/reports", notHere)
	} else {
		stop, health, err := c.startIngest(ctx, mux, geo, log, reg, started)
		if err != nil {
			return err
		}
		defer stop()
		srv.HealthDetail = health
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	if c.Ready != nil {
		c.Ready(started)
	}
	h3, h2 := srv.Addrs()
	log.Info("serving", "role", c.Role, "h3_origin", h3.String(), "h2_origin", h2.String(), "demo", origin.URL(c.Origin.H3Host, h3.Port())+"/demo")
	if d, ok := srv.DevCert(); ok && c.Role != RoleIngest && c.Stdout != nil {
		fmt.Fprintf(c.Stdout, "development certificate SPKI (sha256, base64): %s\n", d.SPKI)
		fmt.Fprintf(c.Stdout, "make a local Chromium trust it for HTTP/2 and HTTP/3:\n  chromium %s --user-data-dir=$(mktemp -d) %s/demo\n",
			d.ChromiumFlags(), origin.URL("", h3.Port()))
		fmt.Fprintf(c.Stdout, "or trust its local CA %s in any browser or system store (Firefox: import it under Settings → Certificates,\n"+
			"and set network.http.http3.disable_when_third_party_roots_found to false in about:config to keep HTTP/3)\n", d.CAFile)
	}
	return srv.Run(ctx)
}

// notHere answers report paths on a probe-only collector.
func notHere(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, "not found: this collector runs --role probe; reports go to the ingest collector (the script's endpoint)\n")
}

// startIngest starts what takes and answers reports — ClickHouse (managed
// or not), the spool and batcher, the report and query endpoints on mux —
// and returns how to stop it (after the listeners) and the /healthz lines.
func (c *Config) startIngest(ctx context.Context, mux *http.ServeMux, geo *ingest.GeoIP, log *slog.Logger, reg *prometheus.Registry, started *Started) (stop func(), health func() string, err error) {
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if err != nil {
			stopAll() // what started before the failure
		}
	}()
	// The spool's segments are replayed into ClickHouse as received
	// reports: its directory must be this user's alone.
	spool := filepath.Join(c.Store.DataDir, "spool")
	if err := access.CheckPrivate(spool); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("opening the spool: %w", err)
	}
	opts := c.Store
	opts.Start, opts.Logger = true, log
	db, err := store.Connect(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, db.Close)
	// ready closes once the schema is migrated; until then reports are
	// accepted into the spool only.
	ready := make(chan struct{})
	local := db.Local
	started.Local = local
	if local != nil {
		applied, err := db.Migrate(ctx)
		if err != nil {
			return nil, nil, err
		}
		if len(applied) > 0 {
			log.Info("schema migrated", "applied", applied)
		}
		close(ready)
	} else {
		var preparing sync.WaitGroup
		preparing.Go(func() { db.Prepare(ctx, ready) })
		stops = append(stops, preparing.Wait) // ctx has ended by then
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "h3rum_store_ready",
		Help: "1 once ClickHouse answered and the schema is migrated; 0 while reports wait in the spool for it."},
		func() float64 { return b2f(isClosed(ready)) }))
	if local != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "h3rum_local_clickhouse_up",
				Help: "1 while the managed local ClickHouse runs; 0 while it is down and being restarted."},
				func() float64 { return b2f(local.Up()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "h3rum_local_clickhouse_restarts_total",
				Help: "Times the managed local ClickHouse exited on its own and was started again."},
				func() float64 { return float64(local.Restarts()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "h3rum_local_clickhouse_refused_dials_total",
				Help: "Connections to the managed local ClickHouse not made, its password not sent, because the socket listening on its address was not its own (another local program may hold the port)."},
				func() float64 { return float64(local.RefusedDials()) }))
	}

	pipe := &c.Pipeline
	pipe.Conn, pipe.Dir = db.Conn, spool
	pipe.Cluster, pipe.ClusterDial = c.Store.Cluster, db.DialServer
	pipe.Ready, pipe.Logger, pipe.Registerer = ready, log, reg
	hub := &api.Hub{}
	pipe.Feed = hub
	ih, err := c.registerIngest(mux, db.Conn, pipe, hub, geo, log, reg)
	if err != nil {
		return nil, nil, err
	}
	if err := pipe.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("starting the ingest pipeline: %w", err)
	}
	stops = append(stops, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// The WebSocket sessions the HTTP servers' shutdown does not own:
		// agents' reports are answered before the pipeline stops
		// accepting, live viewers are told the collector is going away.
		if err := ih.Close(sctx); err != nil {
			log.Error("closing agent sessions", "err", err)
		}
		if err := hub.Close(sctx); err != nil {
			log.Error("closing the live feed", "err", err)
		}
		if err := pipe.Shutdown(sctx); err != nil {
			log.Error("draining the ingest pipeline", "err", err)
		}
	})
	health = func() string {
		switch {
		case local != nil && !local.Up():
			return "clickhouse: down, restarting; reports are spooled\n"
		case !isClosed(ready):
			return "clickhouse: not ready yet; reports are spooled\n"
		default:
			return "clickhouse: up\n"
		}
	}
	return stopAll, health, nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// demoOrigin is the origin the demo page measures for a configured address;
// empty (demo not configured) when the port is chosen at start-up.
func demoOrigin(host, addr string) string {
	_, p, err := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	if err != nil || port == 0 {
		return ""
	}
	return origin.URL(host, uint16(port))
}

// registerIngest adds the report endpoints (/beacon, /ingest/ws, /reports) and the
// query endpoints (/api/report, /api/live, /dashboard) to mux.
func (c *Config) registerIngest(mux *http.ServeMux, conn driver.Conn, pipe *ingest.Pipeline, hub *api.Hub, geo *ingest.GeoIP, log *slog.Logger, reg prometheus.Registerer) (*ingest.Handler, error) {
	origins, err := access.ParseOrigins(c.Origin.AllowOrigins) // the probe's CORS rule, checked by Validate
	if err != nil {
		return nil, &ConfigError{err}
	}
	failures := access.NewFailures() // one throttle for every token
	ih := &c.Ingest
	ih.Sink, ih.NELSink = pipe, pipe
	ih.Enricher = &ingest.Enricher{GeoIP: geo}
	ih.Origins, ih.Failures = origins, failures
	ih.Logger, ih.Registerer = log, reg
	if err := ih.Init(); err != nil {
		return nil, &ConfigError{err}
	}
	mux.Handle("/beacon", ih)
	mux.Handle("/ingest/ws", ih)
	mux.Handle("/reports", ih)
	qh := &c.Queries
	qh.Conn, qh.Clients, qh.Failures, qh.Hub, qh.Logger = conn, ih.Clients, failures, hub, log
	qh.Register(mux)
	return ih, nil
}
