package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/collector/internal/cli"
	"github.com/h3rum/h3rum/collector/origin"
	"github.com/h3rum/h3rum/collector/serve"
	"github.com/h3rum/h3rum/ingest"
	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/spool"
	"github.com/h3rum/h3rum/queries/api"
)

// serveFlags are `serve`'s flags: the collector's serve.Config and what
// only the command line has (token files, the store and log flags).
type serveFlags struct {
	serve.Config
	store storeFlags
	log   cli.LogFlags

	agentTokenFile  string
	reportTokenFile string
}

func (c *serveFlags) register(fs *flag.FlagSet) {
	s := &c.Origin
	fs.StringVar(&s.Addr, "addr", origin.DefaultAddr, "H3 origin address (TCP for HTTP/1.1+2 and UDP for HTTP/3, same port); \"localhost:8443\" binds 127.0.0.1 and ::1")
	fs.StringVar(&s.H2Addr, "h2-addr", origin.DefaultH2Addr, "H2 origin address (TCP only, never advertises HTTP/3)")
	fs.StringVar(&s.H3Host, "h3-host", "", "H3 origin host name, e.g. h3.rumtest.example.com (requests for the H2 host get 421)")
	fs.StringVar(&s.H2Host, "h2-host", "", "H2 origin host name, e.g. h2.rumtest.example.com (requests for the H3 host get 421)")
	fs.IntVar(&s.AltSvcPort, "alt-svc-port", 0, "UDP port advertised in Alt-Svc (default: the --addr port; set it behind a load balancer)")
	s.AltSvcMaxAge = origin.DefaultAltSvcMaxAge
	fs.Var((*cli.Seconds)(&s.AltSvcMaxAge), "alt-svc-max-age", "Alt-Svc ma= in `seconds`")
	// The origins' zero NEL sends none; serve sends a day's policy unless told.
	s.NEL.MaxAge = origin.DefaultNELMaxAge
	fs.Var((*cli.Seconds)(&s.NEL.MaxAge), "nel-max-age", "max_age in `seconds` of the Network Error Logging policy both origins send (0: send no NEL headers)")
	fs.Float64Var(&s.NEL.SuccessFraction, "nel-success-fraction", origin.DefaultNELSuccessFraction, "share of successful requests to the origins that browsers report through NEL (0 to 1)")
	fs.Float64Var(&s.NEL.FailureFraction, "nel-failure-fraction", origin.DefaultNELFailureFraction, "share of failed requests to the origins that browsers report through NEL (0 to 1)")
	fs.BoolVar(&s.NEL.IncludeSubdomains, "nel-include-subdomains", false, "extend the NEL policy to subdomains of the origins' hosts (browsers then report their DNS failures)")
	fs.StringVar(&s.NEL.Endpoint, "nel-endpoint", "", "https URL browsers upload NEL reports to (default: each origin reports to the other origin's /reports; with --role probe, --ingest-url's /reports)")
	fs.Var((*cli.List)(&c.Ingest.NELHosts), "nel-hosts", "comma-separated host names NEL reports may be about; reports about other hosts are dropped (default: --h3-host and --h2-host; neither set: any)")
	fs.StringVar(&s.CertFile, "tls-cert", "", "H3 origin certificate chain (PEM); reloaded when it changes")
	fs.StringVar(&s.KeyFile, "tls-key", "", "H3 origin private key (PEM)")
	fs.StringVar(&s.H2CertFile, "h2-tls-cert", "", "H2 origin certificate chain (PEM); default: --tls-cert")
	fs.StringVar(&s.H2KeyFile, "h2-tls-key", "", "H2 origin private key (PEM)")
	fs.Var((*cli.List)(&s.ACMEDomains), "acme-domains", "comma-separated host names to get Let's Encrypt certificates for (ACME TLS-ALPN-01)")
	fs.StringVar(&s.ACMECache, "acme-cache", "", "ACME cache directory (default <data-dir>/acme)")
	fs.StringVar(&s.ACMEEmail, "acme-email", "", "contact e-mail for the ACME account")
	s.AllowOrigins = []string{"*"}
	fs.Var((*cli.List)(&s.AllowOrigins), "allow-origins", "comma-separated page origins allowed to run the test and read its timings, or *")
	fs.IntVar(&s.MaxProbeBytes, "max-probe-bytes", origin.DefaultMaxProbeBytes, "largest /probe?bytes=N body, in bytes")
	fs.BoolVar(&s.Echo, "echo", false, "serve /echo, a request echo for debugging")
	fs.DurationVar(&s.ShutdownTimeout, "shutdown-timeout", origin.DefaultShutdownTimeout, "how long in-flight requests may finish at shutdown")
	fs.DurationVar(&s.BodyTimeout, "body-timeout", origin.DefaultBodyTimeout, "longest a client may take to send a request body (slower ones are cut)")
	fs.DurationVar(&s.WriteTimeout, "write-timeout", origin.DefaultWriteTimeout, "longest one response may take to write, e.g. a /probe?bytes= download")
	fs.IntVar(&s.MaxConnsPerAddr, "max-conns-per-addr", origin.DefaultMaxConnsPerAddr, "open connections allowed per client address (IPv6: per /64, and 8 times as many per /48), counted over both origins, TCP and QUIC together (negative: no cap); --trusted-proxies are exempt")
	fs.IntVar(&s.MaxConns, "max-conns", origin.DefaultMaxConns, "open connections allowed in all, counted over both origins, TCP and QUIC together, --trusted-proxies included (negative: no cap); bounds the memory they hold")
	fs.IntVar(&s.MaxRequestsPerAddr, "max-requests-per-addr", origin.DefaultMaxRequestsPerAddr, "requests in flight allowed per client address (IPv6: per /64), summed over its connections and protocols; more get 429 (negative: no cap); --trusted-proxies are exempt")
	fs.IntVar(&s.MaxUnvalidatedHandshakes, "max-quic-handshakes", origin.DefaultMaxUnvalidatedHandshakes, "QUIC handshakes from not yet validated addresses allowed in progress at once; from this many on, every new QUIC connection must answer a Retry first (one more round trip), which forged source addresses never do; one client address may hold a sixteenth of them")
	fs.Var((*cli.List)(&s.MetricsHosts), "metrics-hosts", "comma-separated host names the metrics listener answers to besides IP addresses, dotless names and names under .localhost, .internal, .local, .home.arpa and .cluster.local")
	fs.StringVar(&s.CollectorID, "collector-id", "", "this collector's name (its POP), e.g. fra-1: lower-case letters, digits, hyphens, at most 32; stored with every sample its probe served, so reports can split by it (by=collector)")
	fs.StringVar(&s.MetricsAddr, "metrics-addr", origin.DefaultMetricsAddr, "plain-HTTP address of /metrics (Prometheus), kept off the public origins; empty: no metrics")
	c.store.register(fs)
	c.log.Register(fs)
	fs.StringVar(&c.Role, "role", serve.RoleAll, "what this process does: all (probe and ingest in one process: simplest, but ingest load can disturb the probe's timings), probe (only the origins, /probe and the script: for edge hosts; no ClickHouse), or ingest (reports, ClickHouse and the report endpoints; no /probe)")
	fs.StringVar(&c.IngestURL, "ingest-url", "", "with --role probe: the ingest collector's origin, e.g. https://ingest.rumtest.example.com, used as the demo page's script endpoint")

	ih := &c.Ingest
	fs.Var((*cli.List)(&ih.Sites), "sites", "comma-separated site values (the script's site= or data-site) accepted by /beacon (default: any)")
	fs.Var((*access.Prefixes)(&ih.Clients.TrustedProxies), "trusted-proxies", "comma-separated CIDR prefixes or addresses of the load balancers, CDNs or reverse proxies in front of the collector; only from them are --client-ip-header and --geo-header believed")
	fs.StringVar(&ih.Clients.Header, "client-ip-header", access.DefaultClientIPHeader, "the one header trusted proxies put the client address in: X-Forwarded-For, Forwarded, or a CDN's single-address header such as CF-Connecting-IP (read right to left, skipping trusted hops)")
	fs.StringVar(&ih.GeoHeader, "geo-header", "", "request header with the client's country set by a CDN among --trusted-proxies, e.g. CF-IPCountry")
	fs.StringVar(&c.GeoIPDB, "geoip-db", "", "GeoIP2/GeoLite2 City or Country, or DB-IP Lite city mmdb file; comma-separated to ask several in turn (DB-IP ships IPv4 and IPv6 files)")
	fs.StringVar(&c.ASNDB, "asn-db", "", "GeoLite2 ASN mmdb file")
	fs.Float64Var(&ih.RateLimit, "rate-limit", ingest.DefaultRateLimit, "reports per second allowed per client address (negative: unlimited)")
	fs.Int64Var(&ih.MaxBodyBytes, "max-beacon-bytes", beacon.MaxReportBytes, "largest /beacon body, in bytes")
	fs.IntVar(&ih.MaxConcurrency, "ingest-concurrency", 0, "reports decoded at once (default: half the cores, at least 1), so a burst of reports leaves CPU for the probe")
	fs.StringVar(&ih.AgentToken, "agent-token", "", "bearer token for agents on /ingest/ws, at least 32 bytes (empty: WebSocket ingest off); on the command line every local user sees it: prefer H3RUM_AGENT_TOKEN or --agent-token-file")
	fs.StringVar(&c.agentTokenFile, "agent-token-file", "", "file holding --agent-token (surrounding white space trimmed); refused if others may read it")
	fs.Float64Var(&ih.AgentRateLimit, "agent-rate-limit", ingest.DefaultAgentRateLimit, "reports per second allowed per agent connection (agents are exempt from --rate-limit)")
	p := &c.Pipeline
	fs.IntVar(&p.BatchRows, "batch-rows", ingest.DefaultBatchRows, "sample rows per ClickHouse insert")
	fs.DurationVar(&p.FlushInterval, "flush-interval", ingest.DefaultFlushInterval, "longest a sample waits before it is inserted (jittered ±20%)")
	fs.DurationVar(&p.CommitDelay, "commit-delay", ingest.DefaultCommitDelay, "how long the spool waits for more reports to share one fsync before acknowledging any (negative: none)")
	fs.Int64Var(&p.SpoolMaxBytes, "spool-max-bytes", spool.DefaultMaxBytes, "disk budget of the spool that holds samples while ClickHouse is slow or down")
	fs.Var((*cli.Days)(&p.Retention), "retention", "`days` of samples to keep, enforced by dropping month partitions (0: keep all)")

	q := &c.Queries
	fs.StringVar(&q.Token, "report-token", "", "bearer token for /api/report, /api/live and /dashboard, at least 32 bytes (without it and without --open-reports they answer 403); on the command line every local user sees it: prefer H3RUM_REPORT_TOKEN or --report-token-file")
	fs.StringVar(&c.reportTokenFile, "report-token-file", "", "file holding --report-token (surrounding white space trimmed); refused if others may read it")
	fs.BoolVar(&q.AllowOpen, "open-reports", false, "answer /api/report, /api/live and /dashboard without a token, to requests from this machine to localhost; only with every listener on loopback and no --trusted-proxies (a pass-through proxy or ssh -L on this host would expose them)")
	fs.IntVar(&q.MaxConcurrent, "report-concurrency", api.DefaultMaxConcurrent, fmt.Sprintf("reports computed at once; others wait %v, then get 503", api.DefaultQueueWait))
}

// validate resolves the token files, checks the flags as a whole and fills
// c.Config's derived fields; every problem comes back as one usage error.
func (c *serveFlags) validate() error {
	var errs []error
	if err := c.store.check(); err != nil {
		errs = append(errs, err)
	}
	c.Store = c.store.options(nil, false)
	reportToken := c.Queries.Token != "" || c.reportTokenFile != ""
	for _, tok := range []struct {
		name  string
		value *string
		file  string
	}{{"report-token", &c.Queries.Token, c.reportTokenFile}, {"agent-token", &c.Ingest.AgentToken, c.agentTokenFile}} {
		// A refused token (a short one is named by where it came from) is
		// left out of the Config.
		var err error
		*tok.value, err = access.TokenSource{Flag: tok.name, Env: cli.EnvName(tok.name), Token: *tok.value, File: tok.file, MinBytes: serve.MinTokenBytes}.Resolve()
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.Queries.AllowOpen && reportToken && c.Queries.Token == "" { // a token Resolve refused
		errs = append(errs, errors.New("--open-reports answers without a token: give it or --report-token, not both"))
	}
	// Zero once meant "unlimited" and "none" for these two; it means the
	// default now, so an explicit zero is refused rather than quietly
	// taking the other meaning.
	if c.Ingest.RateLimit == 0 {
		errs = append(errs, errors.New("--rate-limit 0: for no limit write -1 (zero no longer means unlimited)"))
	}
	if c.Pipeline.CommitDelay == 0 {
		errs = append(errs, errors.New("--commit-delay 0: for no delay write -1ns (zero no longer means none)"))
	}
	if err := c.Validate(); err != nil {
		errs = append(errs, errors.Unwrap(err))
	}
	if err := errors.Join(errs...); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	return nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c serveFlags
	c.register(fs)
	if err := cli.Parse(fs, args, stderr); err != nil {
		return err
	}
	log, err := c.log.Logger(stderr)
	if err != nil {
		return err
	}
	if err := c.validate(); err != nil {
		return err
	}
	for _, name := range []string{"report-token", "agent-token"} {
		if cli.OnCommandLine(args, name) {
			log.Warn("a token on the command line is visible to every local user (ps); give it in a file or the environment instead",
				"flag", "--"+name, "instead", "--"+name+"-file or "+cli.EnvName(name))
		}
	}
	c.Logger, c.Stdout = log, stdout
	err = serve.Run(ctx, &c.Config)
	if ce, ok := errors.AsType[*serve.ConfigError](err); ok {
		return cli.UsageError{Msg: ce.Error()}
	}
	return err
}
