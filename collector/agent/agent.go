// Package agent runs h3rum's test from a machine instead of a browser: the
// beacon's protocol against the two origins, over quic-go's HTTP/3 and
// net/http's HTTP/2, plus the connection set-ups browsers hide (full,
// resumed and 0-RTT handshakes), and delivers each run to a collector's
// WebSocket ingest.
package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/h3rum/h3rum/beacon"
)

// BeaconVersion is the "bv" of the agent's reports: the script's version
// it follows, marked as the agent's.
const BeaconVersion = "1.0.0+agent"

// Defaults of the Config fields.
const (
	DefaultParallel = beacon.DefaultParallel // the script's
	DefaultWarmup   = beacon.DefaultWarmup
	DefaultTimeout  = beacon.RequestTimeoutMS * time.Millisecond // the script's
	DefaultSite     = "agent"
)

// Config is one agent's test: the origins, the run's parameters and how to
// reach the origins. The zero value of every optional field means its
// default; a Config may be shared by concurrent Runs.
type Config struct {
	// H3Origin and H2Origin are the two test origins,
	// "https://host[:port]": the H3 origin is measured over HTTP/3 only,
	// the H2 origin over HTTP/2 only (TLS over TCP). Required.
	H3Origin, H2Origin string
	// Parallel is the number of requests per parallel batch, 1 to
	// beacon.MaxParallel. Default 5.
	Parallel int
	// Warmup is the number of sequential warm-up requests to the H3
	// origin, up to beacon.MaxWarmup. Default 2; negative for none.
	Warmup int
	// Bytes is the probe body size (/probe?bytes=N), 0 to beacon.MaxBytes.
	// Default 0.
	Bytes int
	// Order is the batch that runs first, "h2first" or "h3first". Default
	// "" or "random": random per run, as the script does, so that the
	// drift between first and second batch cancels out.
	Order string
	// Site is the report's data-site, [A-Za-z0-9._-]{1,64}; the
	// collector's --sites decides whether it is accepted. Default "agent".
	Site string
	// Roots verifies the origins' certificates; nil uses the system's.
	Roots *x509.CertPool
	// Resolve maps host names to IP addresses for both transports, like
	// curl --resolve (the lab maps its origins' names this way). Other
	// names are looked up in DNS.
	Resolve Resolve
	// Timeout bounds each request, from its start to the end of its body,
	// as the script's 10 s abort. Default 10 s.
	Timeout time.Duration
	// Logger receives a run's notable events (a handshake that could not
	// be primed, the key exchange at debug level); nil discards.
	Logger *slog.Logger
}

// Validate reports the first problem with c's fields, if any. Run calls it.
func (c *Config) Validate() error {
	if c.H3Origin == "" || c.H2Origin == "" {
		return errors.New("agent: H3Origin and H2Origin are required")
	}
	for _, o := range []struct{ name, v string }{{"H3Origin", c.H3Origin}, {"H2Origin", c.H2Origin}} {
		if err := checkOrigin(o.v); err != nil {
			return fmt.Errorf("agent: %s: %w", o.name, err)
		}
	}
	switch {
	case c.Timeout < 0:
		return fmt.Errorf("agent: Timeout %v: want a positive duration", c.Timeout)
	case c.Parallel < 0 || c.Parallel > beacon.MaxParallel:
		return fmt.Errorf("agent: Parallel %d: want 1 to %d", c.Parallel, beacon.MaxParallel)
	case c.Warmup > beacon.MaxWarmup:
		return fmt.Errorf("agent: Warmup %d: want 0 to %d", c.Warmup, beacon.MaxWarmup)
	case c.Bytes < 0 || c.Bytes > beacon.MaxBytes:
		return fmt.Errorf("agent: Bytes %d: want 0 to %d", c.Bytes, beacon.MaxBytes)
	}
	switch c.Order {
	case "", "random", "h2first", "h3first":
	default:
		return fmt.Errorf("agent: Order %q: want random, h3first or h2first", c.Order)
	}
	for host, ip := range c.Resolve {
		if _, err := netip.ParseAddr(ip); err != nil || host == "" {
			return fmt.Errorf("agent: Resolve %q → %q: want a host name and an IP address", host, ip)
		}
	}
	// The report's own fields (site, parameters) follow the wire format's
	// rules, which live in package beacon: check them on an empty run.
	r := c.newRun().report()
	r.Partial = true
	r.Samples = []beacon.Sample{{Seq: r.Params.Warmup, Phase: beacon.PhaseWarmup, Want: beacon.ProtoH2, Got: beacon.ProtoUnknown,
		Duration: -1, DNS: -1, Connect: -1, TLS: -1, TTFB: -1, Download: -1, Error: "network", Server: noServerTiming}}
	if _, err := beacon.Encode(r); err != nil {
		return fmt.Errorf("agent: report parameters: %w", err)
	}
	return nil
}

// checkOrigin accepts https://host[:port] and nothing more.
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.ContainsAny(o, "?#") {
		return fmt.Errorf("%q is not an https origin (https://host[:port])", o)
	}
	return nil
}

// Result is one run: the report a browser would have sent for it, and the
// connection set-ups the agent timed after it.
type Result struct {
	// Report is the run in the beacon's terms; beacon.Encode renders it.
	Report *beacon.Report
	// Handshakes are, by Seq: 0 HTTP/3 full handshake, 1 HTTP/3 resumed,
	// 2 HTTP/3 0-RTT, 3 HTTP/2 full handshake, 4 HTTP/2 resumed; each the
	// first request on a new connection, Phase beacon.PhaseHandshake. The
	// resumed and 0-RTT steps are left out when their protocol's full
	// handshake left no ticket to resume.
	Handshakes []beacon.Sample

	// curves are the key exchanges the handshakes negotiated, in order
	// (0 where a handshake failed): one group for both protocols.
	curves []tls.CurveID
}

// run is one Run's state: the Config with defaults resolved, the run id
// and the moment the run started, from which every sample's Start counts.
type run struct {
	c        Config
	parallel int
	warmup   int
	timeout  time.Duration
	site     string
	order    string
	log      *slog.Logger
	id       [16]byte
	idHex    string
	t0       time.Time
}

func (c *Config) newRun() *run {
	r := &run{c: *c, parallel: cmp.Or(c.Parallel, DefaultParallel), warmup: c.Warmup, timeout: cmp.Or(c.Timeout, DefaultTimeout),
		site: cmp.Or(c.Site, DefaultSite), order: c.Order, log: c.Logger}
	if c.Warmup == 0 {
		r.warmup = DefaultWarmup
	} else if c.Warmup < 0 {
		r.warmup = 0
	}
	if r.order == "" || r.order == "random" {
		r.order = "h3first"
		if mrand.IntN(2) == 0 {
			r.order = "h2first"
		}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	rand.Read(r.id[:])
	r.idHex = hex.EncodeToString(r.id[:])
	r.c.H3Origin, r.c.H2Origin = strings.TrimSuffix(c.H3Origin, "/"), strings.TrimSuffix(c.H2Origin, "/")
	return r
}

// report returns the run's report without samples.
func (r *run) report() *beacon.Report {
	return &beacon.Report{
		Version: beacon.Version, RunID: r.id, Site: r.site, PageOrigin: "null", BeaconVersion: BeaconVersion,
		// The agent loads nothing from the H3 origin before its run: its
		// first request shows what it knew before.
		AltSvc: beacon.AltSvcNone,
		Params: beacon.Params{Parallel: r.parallel, Warmup: r.warmup, Bytes: r.c.Bytes, Order: r.order, Trigger: "manual"},
		Client: beacon.Client{Brands: []beacon.Brand{{Brand: "h3rum-agent", Version: "1"}}, Platform: runtime.GOOS, RTT: -1, Downlink: -1},
	}
}

// Run performs one run of the beacon's protocol (PROTOCOL.md, "In the
// browser"): Warmup sequential requests to the H3 origin over HTTP/3, one
// to the H2 origin over HTTP/2, then Parallel concurrent requests to one
// origin and, when all have finished, Parallel to the other. Then it times
// the handshakes (Result.Handshakes), each on a new connection. A request
// that fails is a sample with an error code, as in a browser's report; Run
// itself fails only on a bad Config, on what the machine refuses (a UDP
// socket), or when ctx ends before the run does — then nothing is
// reported, since requests cut short by ctx say nothing about the path.
func (c *Config) Run(ctx context.Context) (*Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	r := c.newRun()
	r.t0 = time.Now()
	rep := r.report()
	samples, err := r.batches(ctx)
	if err != nil {
		return nil, err
	}
	rep.Samples = samples
	hs, curves, err := r.handshakes(ctx)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("agent: run %s interrupted: %w", r.idHex, err)
	}
	return &Result{Report: rep, Handshakes: hs, curves: curves}, nil
}

// batches runs the warm-up and the two parallel batches on one HTTP/3 and
// one HTTP/2 client, closed at the end, and returns the samples by seq.
func (r *run) batches(ctx context.Context) ([]beacon.Sample, error) {
	h3, err := r.newClient(beacon.ProtoH3, nil, false)
	if err != nil {
		return nil, err
	}
	defer h3.Close()
	h2, err := r.newClient(beacon.ProtoH2, nil, false)
	if err != nil {
		return nil, err
	}
	defer h2.Close()

	samples := make([]beacon.Sample, r.warmup+1+2*r.parallel)
	seq := 0
	for range r.warmup {
		samples[seq] = r.probe(ctx, h3, seq).sample(r, seq, beacon.PhaseWarmup)
		seq++
	}
	samples[seq] = r.probe(ctx, h2, seq).sample(r, seq, beacon.PhaseWarmup)
	seq++
	first, second := h3, h2
	if r.order == "h2first" {
		first, second = h2, h3
	}
	for _, cl := range []*client{first, second} {
		var wg sync.WaitGroup
		for range r.parallel {
			q := seq
			seq++
			wg.Go(func() { samples[q] = r.probe(ctx, cl, q).sample(r, q, beacon.PhaseParallel) })
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("agent: run %s interrupted: %w", r.idHex, err)
	}
	return samples, nil
}
