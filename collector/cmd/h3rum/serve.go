package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
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
	"github.com/h3rum/h3rum/queries"
)

// serveConfig is everything `serve` reads from its flags.
type serveConfig struct {
	srv   origin.Server
	store storeFlags
	log   logFlags

	altSvcMaxAge int // seconds

	// Network Error Logging (see origin.NEL)
	nelMaxAge          int // seconds; 0: no NEL headers
	nelSuccessFraction float64
	nelFailureFraction float64
	nelSubdomains      bool
	nelEndpoint        string
	nelHosts           listFlag

	// ingest
	sites          listFlag
	trustedProxies prefixFlag
	clientIPHeader string
	geoHeader      string
	geoipDB, asnDB string
	rateLimit      float64
	maxBeaconBytes int64
	agentToken     string
	agentTokenFile string
	agentRateLimit float64
	concurrency    int
	batchRows      int
	flushInterval  time.Duration
	commitDelay    time.Duration
	spoolMaxBytes  int64
	retentionDays  int

	// ready, when set (tests), is called once the origins listen.
	ready func(*origin.Server)

	// queries
	reportToken       string
	reportTokenFile   string
	openReports       bool // answer the report endpoints without a token (access.CheckOpen)
	reportConcurrency int

	role      string // roleAll, roleProbe or roleIngest
	ingestURL string // where a probe-only collector's demo sends reports
}

// Roles of a serve process.
const (
	roleAll    = "all"
	roleProbe  = "probe"
	roleIngest = "ingest"
)

func (c *serveConfig) register(fs *flag.FlagSet) {
	s := &c.srv
	fs.StringVar(&s.Addr, "addr", origin.DefaultAddr, "H3 origin address (TCP for HTTP/1.1+2 and UDP for HTTP/3, same port); \"localhost:8443\" binds 127.0.0.1 and ::1")
	fs.StringVar(&s.H2Addr, "h2-addr", origin.DefaultH2Addr, "H2 origin address (TCP only, never advertises HTTP/3)")
	fs.StringVar(&s.H3Host, "h3-host", "", "H3 origin host name, e.g. h3.rumtest.example.com (requests for the H2 host get 421)")
	fs.StringVar(&s.H2Host, "h2-host", "", "H2 origin host name, e.g. h2.rumtest.example.com (requests for the H3 host get 421)")
	fs.IntVar(&s.AltSvcPort, "alt-svc-port", 0, "UDP port advertised in Alt-Svc (default: the --addr port; set it behind a load balancer)")
	fs.IntVar(&c.altSvcMaxAge, "alt-svc-max-age", 86400, "Alt-Svc ma= in seconds")
	fs.IntVar(&c.nelMaxAge, "nel-max-age", 86400, "max_age in seconds of the Network Error Logging policy both origins send (0: send no NEL headers)")
	fs.Float64Var(&c.nelSuccessFraction, "nel-success-fraction", 0.01, "share of successful requests to the origins that browsers report through NEL (0 to 1)")
	fs.Float64Var(&c.nelFailureFraction, "nel-failure-fraction", 1, "share of failed requests to the origins that browsers report through NEL (0 to 1)")
	fs.BoolVar(&c.nelSubdomains, "nel-include-subdomains", false, "extend the NEL policy to subdomains of the origins' hosts (browsers then report their DNS failures)")
	fs.StringVar(&c.nelEndpoint, "nel-endpoint", "", "https URL browsers upload NEL reports to (default: each origin reports to the other origin's /reports; with --role probe, --ingest-url's /reports)")
	fs.Var(&c.nelHosts, "nel-hosts", "comma-separated host names NEL reports may be about; reports about other hosts are dropped (default: --h3-host and --h2-host; neither set: any)")
	fs.StringVar(&s.CertFile, "tls-cert", "", "H3 origin certificate chain (PEM); reloaded when it changes")
	fs.StringVar(&s.KeyFile, "tls-key", "", "H3 origin private key (PEM)")
	fs.StringVar(&s.H2CertFile, "h2-tls-cert", "", "H2 origin certificate chain (PEM); default: --tls-cert")
	fs.StringVar(&s.H2KeyFile, "h2-tls-key", "", "H2 origin private key (PEM)")
	fs.Var((*listFlag)(&s.ACMEDomains), "acme-domains", "comma-separated host names to get Let's Encrypt certificates for (ACME TLS-ALPN-01)")
	fs.StringVar(&s.ACMECache, "acme-cache", "", "ACME cache directory (default <data-dir>/acme)")
	fs.StringVar(&s.ACMEEmail, "acme-email", "", "contact e-mail for the ACME account")
	s.AllowOrigins = []string{"*"}
	fs.Var((*listFlag)(&s.AllowOrigins), "allow-origins", "comma-separated page origins allowed to run the test and read its timings, or *")
	fs.IntVar(&s.MaxProbeBytes, "max-probe-bytes", origin.DefaultMaxProbeBytes, "largest /probe?bytes=N body, in bytes")
	fs.BoolVar(&s.Echo, "echo", false, "serve /echo, a request echo for debugging")
	fs.DurationVar(&s.ShutdownTimeout, "shutdown-timeout", origin.DefaultShutdownTimeout, "how long in-flight requests may finish at shutdown")
	fs.DurationVar(&s.BodyTimeout, "body-timeout", origin.DefaultBodyTimeout, "longest a client may take to send a request body (slower ones are cut)")
	fs.DurationVar(&s.WriteTimeout, "write-timeout", origin.DefaultWriteTimeout, "longest one response may take to write, e.g. a /probe?bytes= download")
	fs.IntVar(&s.MaxConnsPerAddr, "max-conns-per-addr", origin.DefaultMaxConnsPerAddr, "open connections allowed per client address (IPv6: per /64), counted over both origins, TCP and QUIC together (negative: no cap); --trusted-proxies are exempt")
	fs.IntVar(&s.MaxRequestsPerAddr, "max-requests-per-addr", origin.DefaultMaxRequestsPerAddr, "requests in flight allowed per client address (IPv6: per /64), summed over its connections and protocols; more get 429 (negative: no cap); --trusted-proxies are exempt")
	fs.IntVar(&s.MaxUnvalidatedHandshakes, "max-quic-handshakes", origin.DefaultMaxUnvalidatedHandshakes, "QUIC handshakes from not yet validated addresses allowed in progress at once; from this many on, every new QUIC connection must answer a Retry first (one more round trip), which forged source addresses never do")
	fs.Var((*listFlag)(&s.MetricsHosts), "metrics-hosts", "comma-separated host names the metrics listener answers to besides IP addresses, dotless names and names under .localhost, .internal, .local, .home.arpa and .cluster.local")
	fs.StringVar(&s.CollectorID, "collector-id", "", "this collector's name (its POP), e.g. fra-1: lower-case letters, digits, hyphens, at most 32; stored with every sample its probe served, so reports can split by it (by=collector)")
	fs.StringVar(&s.MetricsAddr, "metrics-addr", "localhost:9464", "plain-HTTP address of /metrics (Prometheus), kept off the public origins; empty: no metrics")
	c.store.register(fs)
	c.log.register(fs)
	fs.StringVar(&c.role, "role", roleAll, "what this process does: all (probe and ingest in one process: simplest, but ingest load can disturb the probe's timings), probe (only the origins, /probe and the script: for edge hosts; no ClickHouse), or ingest (reports, ClickHouse and the report endpoints; no /probe)")
	fs.StringVar(&c.ingestURL, "ingest-url", "", "with --role probe: the ingest collector's origin, e.g. https://ingest.rumtest.example.com, used as the demo page's script endpoint")

	fs.Var(&c.sites, "sites", "comma-separated site values (the script's site= or data-site) accepted by /beacon (default: any)")
	fs.Var(&c.trustedProxies, "trusted-proxies", "comma-separated CIDR prefixes or addresses of the load balancers, CDNs or reverse proxies in front of the collector; only from them are --client-ip-header and --geo-header believed")
	fs.StringVar(&c.clientIPHeader, "client-ip-header", access.DefaultClientIPHeader, "the one header trusted proxies put the client address in: X-Forwarded-For, Forwarded, or a CDN's single-address header such as CF-Connecting-IP (read right to left, skipping trusted hops)")
	fs.StringVar(&c.geoHeader, "geo-header", "", "request header with the client's country set by a CDN among --trusted-proxies, e.g. CF-IPCountry")
	fs.StringVar(&c.geoipDB, "geoip-db", "", "GeoIP2/GeoLite2 City or Country, or DB-IP Lite city mmdb file; comma-separated to ask several in turn (DB-IP ships IPv4 and IPv6 files)")
	fs.StringVar(&c.asnDB, "asn-db", "", "GeoLite2 ASN mmdb file")
	fs.Float64Var(&c.rateLimit, "rate-limit", 10, "reports per second allowed per client address (0: unlimited)")
	fs.Int64Var(&c.maxBeaconBytes, "max-beacon-bytes", beacon.MaxReportBytes, "largest /beacon body, in bytes")
	fs.IntVar(&c.concurrency, "ingest-concurrency", 0, "reports decoded at once (default: half the cores, at least 1), so a burst of reports leaves CPU for the probe")
	fs.StringVar(&c.agentToken, "agent-token", "", "bearer token for agents on /ingest/ws, at least 32 bytes (empty: WebSocket ingest off); on the command line every local user sees it: prefer H3RUM_AGENT_TOKEN or --agent-token-file")
	fs.StringVar(&c.agentTokenFile, "agent-token-file", "", "file holding --agent-token (surrounding white space trimmed); refused if others may read it")
	fs.Float64Var(&c.agentRateLimit, "agent-rate-limit", 50, "reports per second allowed per agent connection (agents are exempt from --rate-limit)")
	fs.IntVar(&c.batchRows, "batch-rows", 20000, "sample rows per ClickHouse insert")
	fs.DurationVar(&c.flushInterval, "flush-interval", time.Second, "longest a sample waits before it is inserted (jittered ±20%)")
	fs.DurationVar(&c.commitDelay, "commit-delay", 500*time.Microsecond, "how long the spool waits for more reports to share one fsync before acknowledging any (0: none)")
	fs.Int64Var(&c.spoolMaxBytes, "spool-max-bytes", 1<<30, "disk budget of the spool that holds samples while ClickHouse is slow or down")
	fs.IntVar(&c.retentionDays, "retention", 0, "days of samples to keep, enforced by dropping month partitions (0: keep all)")

	fs.StringVar(&c.reportToken, "report-token", "", "bearer token for /api/report, /api/live and /dashboard, at least 32 bytes (without it and without --open-reports they answer 403); on the command line every local user sees it: prefer H3RUM_REPORT_TOKEN or --report-token-file")
	fs.StringVar(&c.reportTokenFile, "report-token-file", "", "file holding --report-token (surrounding white space trimmed); refused if others may read it")
	fs.BoolVar(&c.openReports, "open-reports", false, "answer /api/report, /api/live and /dashboard without a token, to requests from this machine to localhost; only with every listener on loopback and no --trusted-proxies (a pass-through proxy or ssh -L on this host would expose them)")
	fs.IntVar(&c.reportConcurrency, "report-concurrency", 2, "reports computed at once; others wait 2 s, then get 503")
}

// minTokenBytes is the shortest bearer token serve accepts: a token is the
// only credential of the report and agent endpoints on the internet, so it
// must not be guessable.
const minTokenBytes = 32

func (c *serveConfig) validate() error {
	var errs []error
	switch c.role {
	case roleAll, roleIngest:
		if c.ingestURL != "" {
			errs = append(errs, errors.New("--ingest-url is for --role probe (this process takes the reports itself)"))
		}
	case roleProbe:
		if c.ingestURL != "" {
			if u, err := url.Parse(c.ingestURL); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
				errs = append(errs, fmt.Errorf("--ingest-url %q: want an origin, e.g. https://ingest.rumtest.example.com", c.ingestURL))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("--role %q: want all, probe or ingest", c.role))
	}
	if err := c.store.check(); err != nil {
		errs = append(errs, err)
	}
	if c.altSvcMaxAge <= 0 {
		errs = append(errs, errors.New("--alt-svc-max-age must be positive"))
	}
	if c.concurrency < 0 {
		errs = append(errs, errors.New("--ingest-concurrency must not be negative"))
	}
	if c.rateLimit < 0 {
		errs = append(errs, errors.New("--rate-limit must not be negative"))
	}
	if c.agentRateLimit <= 0 {
		errs = append(errs, errors.New("--agent-rate-limit must be positive"))
	}
	if c.reportConcurrency <= 0 {
		errs = append(errs, errors.New("--report-concurrency must be positive"))
	}
	if err := (&access.Clients{Header: c.clientIPHeader}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--client-ip-header: %w", err))
	}
	if len(c.trustedProxies) == 0 {
		// Headers only trusted proxies may set would be believed from no one.
		if c.geoHeader != "" {
			errs = append(errs, errors.New("--geo-header is believed only from --trusted-proxies; give the CDN's address ranges"))
		}
		if !strings.EqualFold(c.clientIPHeader, access.DefaultClientIPHeader) {
			errs = append(errs, errors.New("--client-ip-header is read only from --trusted-proxies; give their address ranges"))
		}
	}
	if c.maxBeaconBytes < 1024 {
		errs = append(errs, errors.New("--max-beacon-bytes must be at least 1024"))
	}
	if c.batchRows <= 0 {
		errs = append(errs, errors.New("--batch-rows must be positive"))
	}
	if c.flushInterval <= 0 {
		errs = append(errs, errors.New("--flush-interval must be positive"))
	}
	if c.commitDelay < 0 || c.commitDelay > time.Second {
		errs = append(errs, errors.New("--commit-delay must be between 0 and 1s"))
	}
	if c.spoolMaxBytes < 1<<20 {
		errs = append(errs, errors.New("--spool-max-bytes must be at least 1 MiB"))
	}
	if c.retentionDays < 0 {
		errs = append(errs, errors.New("--retention must not be negative"))
	}
	for _, tok := range []struct {
		name        string
		value, file *string
	}{{"report-token", &c.reportToken, &c.reportTokenFile}, {"agent-token", &c.agentToken, &c.agentTokenFile}} {
		if err := resolveToken(tok.name, tok.value, *tok.file); err != nil {
			errs = append(errs, err)
		}
	}
	if c.openReports {
		switch {
		case c.reportToken != "" || c.reportTokenFile != "":
			errs = append(errs, errors.New("--open-reports answers without a token: give it or --report-token, not both"))
		case c.role == roleProbe:
			errs = append(errs, errors.New("--open-reports: --role probe serves no reports"))
		default:
			if err := access.CheckOpen([]string{c.srv.Addr, c.srv.H2Addr}, c.trustedProxies); err != nil {
				errs = append(errs, fmt.Errorf("--open-reports: %w", err))
			}
		}
	}
	c.srv.AltSvcMaxAge = time.Duration(c.altSvcMaxAge) * time.Second
	if c.nelMaxAge < 0 {
		errs = append(errs, errors.New("--nel-max-age must not be negative"))
	}
	c.srv.NEL = c.nel()
	c.srv.TrustedProxies = c.trustedProxies
	c.srv.DataDir = c.store.dataDir
	if err := c.srv.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// resolveToken reads the token flag --name from --name-file if that is
// given (the two are one setting: giving both, from the command line or
// the environment, is an error) and checks its length.
func resolveToken(name string, value *string, file string) error {
	what := "--" + name
	if file != "" {
		if *value != "" {
			return fmt.Errorf("give --%s or --%s-file, not both (%s and %s_FILE count too)", name, name, envName(name), envName(name))
		}
		tok, err := access.ReadTokenFile(file)
		if err != nil {
			return fmt.Errorf("--%s-file: %w", name, err)
		}
		*value, what = tok, fmt.Sprintf("the token in --%s-file %s", name, file)
	}
	if *value != "" && len(*value) < minTokenBytes {
		return fmt.Errorf("%s is %d bytes; use at least %d (e.g. openssl rand -hex 32)", what, len(*value), minTokenBytes)
	}
	return nil
}

// nel is the origins' NEL policy: none for an ingest-only process (it has
// no probe) or a probe-only one with nowhere to send reports.
func (c *serveConfig) nel() origin.NEL {
	n := origin.NEL{MaxAge: time.Duration(max(c.nelMaxAge, 0)) * time.Second, SuccessFraction: c.nelSuccessFraction,
		FailureFraction: c.nelFailureFraction, IncludeSubdomains: c.nelSubdomains, Endpoint: c.nelEndpoint}
	switch {
	case c.role == roleIngest:
		return origin.NEL{}
	case c.role == roleProbe && n.Endpoint == "":
		// Browsers upload only to https endpoints; a bad --ingest-url is
		// reported by validate on its own.
		u, err := url.Parse(c.ingestURL)
		if c.ingestURL == "" || err != nil || u.Scheme != "https" || u.Host == "" {
			return origin.NEL{}
		}
		n.Endpoint = strings.TrimSuffix(c.ingestURL, "/") + "/reports"
	}
	return n
}

// nelReportHosts are the hosts /reports keeps reports about.
func (c *serveConfig) nelReportHosts() []string {
	if len(c.nelHosts) > 0 {
		return c.nelHosts
	}
	var hosts []string
	for _, h := range []string{c.srv.H3Host, c.srv.H2Host} {
		if h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c serveConfig
	c.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	log, err := c.log.logger(stderr)
	if err != nil {
		return err
	}
	if err := c.validate(); err != nil {
		return err
	}
	for _, name := range []string{"report-token", "agent-token"} {
		if onCommandLine(args, name) {
			log.Warn("a token on the command line is visible to every local user (ps); give it in a file or the environment instead",
				"flag", "--"+name, "instead", "--"+name+"-file or "+envName(name))
		}
	}
	// Open everything that can fail on bad input before anything listens.
	var geo *ingest.GeoIP
	if c.geoipDB != "" || c.asnDB != "" {
		if geo, err = ingest.OpenGeoIP(c.geoipDB, c.asnDB); err != nil {
			return err
		}
	}
	return serve(ctx, &c, geo, log, stdout)
}

// serve runs the collector until ctx ends. Start-up goes storage, ingest,
// HTTP; shutdown the reverse, so that nothing accepted is left behind.
func serve(ctx context.Context, c *serveConfig, geo *ingest.GeoIP, log *slog.Logger, stdout io.Writer) error {
	unlock, err := lockDataDir(c.store.dataDir)
	if err != nil {
		return err
	}
	defer unlock()
	reg := prometheus.NewRegistry()
	mux := http.NewServeMux()
	bh := &beacon.Handler{H3Origin: c.demoOrigin(c.srv.H3Host, c.srv.Addr), H2Origin: c.demoOrigin(c.srv.H2Host, c.srv.H2Addr),
		Endpoint: c.ingestURL}
	bh.Register(mux)
	srv := &c.srv
	srv.Handler, srv.Registerer, srv.Logger = mux, reg, log
	srv.NoProbe = c.role == roleIngest
	if c.role == roleProbe {
		mux.HandleFunc("/beacon", notHere)
		mux.HandleFunc("/ingest/ws", notHere)
		mux.HandleFunc("/reports", notHere)
	} else {
		stop, health, err := c.startIngest(ctx, mux, geo, log, reg)
		if err != nil {
			return err
		}
		defer stop()
		srv.HealthDetail = health
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	if c.ready != nil {
		c.ready(srv)
	}
	h3, h2 := srv.Addrs()
	log.Info("serving", "role", c.role, "h3_origin", h3.String(), "h2_origin", h2.String(), "demo", c.originURL(c.srv.H3Host, h3.Port())+"/demo")
	if d, ok := srv.DevCert(); ok && c.role != roleIngest {
		fmt.Fprintf(stdout, "development certificate SPKI (sha256, base64): %s\n", d.SPKI)
		fmt.Fprintf(stdout, "make a local Chromium trust it for HTTP/2 and HTTP/3:\n  chromium %s --user-data-dir=$(mktemp -d) %s/demo\n",
			d.ChromiumFlags(), c.originURL("", h3.Port()))
		fmt.Fprintf(stdout, "or trust its local CA %s in any browser or system store (Firefox: import it under Settings → Certificates,\n"+
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
func (c *serveConfig) startIngest(ctx context.Context, mux *http.ServeMux, geo *ingest.GeoIP, log *slog.Logger, reg *prometheus.Registry) (stop func(), health func() string, err error) {
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
	spool := filepath.Join(c.store.dataDir, "spool")
	if err := access.CheckPrivate(spool); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("opening the spool: %w", err)
	}
	conn, closeStore, err := c.store.open(ctx, log, true)
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, closeStore)
	// ready closes once the schema is migrated; until then reports are
	// accepted into the spool only.
	ready := make(chan struct{})
	if c.store.local != nil {
		applied, err := c.store.migrate(ctx, conn)
		if err != nil {
			return nil, nil, err
		}
		if len(applied) > 0 {
			log.Info("schema migrated", "applied", applied)
		}
		close(ready)
	} else {
		var preparing sync.WaitGroup
		preparing.Go(func() { c.store.prepare(ctx, log, ready) })
		stops = append(stops, preparing.Wait) // ctx has ended by then
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "h3rum_store_ready",
		Help: "1 once ClickHouse answered and the schema is migrated; 0 while reports wait in the spool for it."},
		func() float64 { return b2f(isClosed(ready)) }))
	local := c.store.local
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

	pipe := &ingest.Pipeline{
		Conn:          conn,
		Dir:           spool,
		BatchRows:     c.batchRows,
		FlushInterval: c.flushInterval,
		CommitDelay:   cmp.Or(c.commitDelay, -1), // --commit-delay 0 is none; the Pipeline reads 0 as its default
		SpoolMaxBytes: c.spoolMaxBytes,
		Retention:     time.Duration(c.retentionDays) * 24 * time.Hour,
		Cluster:       c.store.cluster,
		Ready:         ready,
		Logger:        log,
		Registerer:    reg,
	}
	hub := &queries.Hub{}
	pipe.Feed = hub
	if err := c.registerIngest(mux, conn, pipe, hub, geo, log, reg); err != nil {
		return nil, nil, err
	}
	if err := pipe.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("starting the ingest pipeline: %w", err)
	}
	stops = append(stops, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
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

// originURL is the https origin a browser reaches an origin at.
func (c *serveConfig) originURL(host string, port uint16) string {
	if host == "" {
		host = "localhost"
	}
	if port == 443 {
		return "https://" + host
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// demoOrigin is the origin the demo page measures for a configured address;
// empty (demo not configured) when the port is chosen at start-up.
func (c *serveConfig) demoOrigin(host, addr string) string {
	_, p, err := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	if err != nil || port == 0 {
		return ""
	}
	return c.originURL(host, uint16(port))
}

// registerIngest adds the report endpoints (/beacon, /ingest/ws, /reports) and the
// query endpoints (/api/report, /api/live, /dashboard) to mux.
func (c *serveConfig) registerIngest(mux *http.ServeMux, conn driver.Conn, pipe *ingest.Pipeline, hub *queries.Hub, geo *ingest.GeoIP, log *slog.Logger, reg prometheus.Registerer) error {
	clients := access.Clients{TrustedProxies: c.trustedProxies, Header: c.clientIPHeader}
	origins, err := access.ParseOrigins(c.srv.AllowOrigins) // the probe's CORS rule, checked by validate
	if err != nil {
		return usageError{err.Error()}
	}
	failures := access.NewFailures() // one throttle for every token
	ih := &ingest.Handler{
		Sink:           pipe,
		Enricher:       &ingest.Enricher{GeoIP: geo},
		Sites:          c.sites,
		Origins:        origins,
		Clients:        clients,
		GeoHeader:      c.geoHeader,
		RateLimit:      c.rateLimit,
		MaxBodyBytes:   c.maxBeaconBytes,
		AgentToken:     c.agentToken,
		AgentRateLimit: c.agentRateLimit,
		Failures:       failures,
		MaxConcurrency: c.concurrency,
		NELSink:        pipe,
		NELHosts:       c.nelReportHosts(),
		Logger:         log,
		Registerer:     reg,
	}
	if err := ih.Init(); err != nil {
		return usageError{err.Error()}
	}
	mux.Handle("/beacon", ih)
	mux.Handle("/ingest/ws", ih)
	mux.Handle("/reports", ih)
	qh := &queries.Handler{
		Conn:          conn,
		Token:         c.reportToken,
		AllowOpen:     c.openReports,
		Clients:       clients,
		Failures:      failures,
		MaxConcurrent: c.reportConcurrency,
		Hub:           hub,
		Logger:        log,
	}
	qh.Register(mux)
	return nil
}
