package main

import (
	"context"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/collector/agent"
	"github.com/h3rum/h3rum/ingest/access"
)

// runAgent is `h3rum agent`: the beacon's test run from this machine
// against the two origins, with the handshakes browsers hide, sent to the
// collector's WebSocket ingest (or printed with --dry-run).
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	var (
		c                  agent.Config
		s                  agent.Sender
		caFile, order      string
		tokenFile          string
		count, concurrency int
		interval           time.Duration
		dryRun             bool
		resolve            = resolveFlag{}
		lf                 logFlags
	)
	fs.StringVar(&c.H3Origin, "h3", "", "the H3 origin, https://host[:port] (required)")
	fs.StringVar(&c.H2Origin, "h2", "", "the H2 origin, https://host[:port] (required)")
	fs.StringVar(&s.URL, "ingest", "", "the collector's WebSocket ingest, wss://host[:port]/ingest/ws (required unless --dry-run)")
	fs.StringVar(&s.Token, "token", "", "the collector's agent token (default $H3RUM_AGENT_TOKEN); --token-file keeps it off the command line, where every local user can read it")
	fs.StringVar(&tokenFile, "token-file", "", "file holding the agent token, surrounding white space trimmed (default $H3RUM_AGENT_TOKEN_FILE); refused if others may read it")
	fs.StringVar(&c.Site, "site", agent.DefaultSite, "the reports' data-site (the collector's --sites must allow it)")
	fs.IntVar(&count, "count", 1, "runs in all, 0 = until interrupted")
	fs.DurationVar(&interval, "interval", time.Minute, "time between the starts of a worker's runs")
	fs.IntVar(&concurrency, "concurrency", 1, "workers running at once, 1 to 64")
	fs.IntVar(&c.Parallel, "parallel", agent.DefaultParallel, fmt.Sprintf("requests per parallel batch, 1 to %d", beacon.MaxParallel))
	fs.IntVar(&c.Warmup, "warmup", agent.DefaultWarmup, fmt.Sprintf("warm-up requests to the H3 origin, 0 to %d", beacon.MaxWarmup))
	fs.IntVar(&c.Bytes, "bytes", 0, "probe body size in bytes (the collector caps it)")
	fs.DurationVar(&c.Timeout, "timeout", agent.DefaultTimeout, "how long each request may take, to the end of its body, before it counts as a timeout (the script's is 10s)")
	fs.StringVar(&order, "order", "random", "batch order: random (per run), h3first or h2first")
	fs.StringVar(&caFile, "ca", "", "PEM file of root certificates to trust for the origins and the ingest, e.g. the collector's dev-ca.pem in its data directory (default: the system's)")
	fs.Var(resolve, "resolve", "host=ip: connect to ip for host, like curl --resolve; repeatable")
	fs.BoolVar(&dryRun, "dry-run", false, "print each run's message as one JSON line on stdout and send nothing")
	lf.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if s.Token == "" {
		s.Token = os.Getenv("H3RUM_AGENT_TOKEN")
	}
	if tokenFile == "" {
		tokenFile = os.Getenv("H3RUM_AGENT_TOKEN_FILE")
	}
	if tokenFile != "" {
		if s.Token != "" {
			return usagef("agent: give --token or --token-file, not both ($H3RUM_AGENT_TOKEN and $H3RUM_AGENT_TOKEN_FILE count too)")
		}
		tok, err := access.ReadTokenFile(tokenFile)
		if err != nil {
			return usagef("agent: --token-file: %v", err)
		}
		s.Token = tok
	}
	switch {
	case c.H3Origin == "" || c.H2Origin == "":
		return usagef("agent: --h3 and --h2 are required")
	case count < 0:
		return usagef("agent: --count %d: want 0 (until interrupted) or more", count)
	case interval <= 0:
		return usagef("agent: --interval %v: want a positive duration", interval)
	case concurrency < 1 || concurrency > 64:
		return usagef("agent: --concurrency %d: want 1 to 64", concurrency)
	case c.Timeout <= 0:
		return usagef("agent: --timeout %v: want a positive duration", c.Timeout)
	case c.Parallel < 1 || c.Parallel > beacon.MaxParallel:
		return usagef("agent: --parallel %d: want 1 to %d", c.Parallel, beacon.MaxParallel)
	case c.Warmup < 0 || c.Warmup > beacon.MaxWarmup:
		return usagef("agent: --warmup %d: want 0 to %d", c.Warmup, beacon.MaxWarmup)
	case c.Bytes < 0 || c.Bytes > beacon.MaxBytes:
		return usagef("agent: --bytes %d: want 0 to %d", c.Bytes, beacon.MaxBytes)
	}
	if c.Warmup == 0 {
		c.Warmup = -1 // Config's zero means the default
	}
	switch order {
	case "random":
	case "h3first", "h2first":
		c.Order = order
	default:
		return usagef("agent: --order %q: want random, h3first or h2first", order)
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return usagef("agent: --ca: %v", err)
		}
		c.Roots = x509.NewCertPool()
		if !c.Roots.AppendCertsFromPEM(pem) {
			return usagef("agent: --ca %q holds no PEM certificate", caFile)
		}
		s.Roots = c.Roots
	}
	c.Resolve, s.Resolve = resolve, resolve
	if err := c.Validate(); err != nil {
		// Name the flags rather than the Config fields.
		return usageError{strings.NewReplacer("agent: H3Origin:", "agent: --h3", "agent: H2Origin:", "agent: --h2",
			"agent: report parameters:", "agent: --site:").Replace(err.Error())}
	}
	if !dryRun {
		if s.URL == "" {
			return usagef("agent: --ingest is required (or --dry-run)")
		}
		if err := s.Validate(); err != nil {
			return usageError{err.Error() + " (--ingest, --token or $H3RUM_AGENT_TOKEN)"}
		}
	}
	log, err := lf.logger(stderr)
	if err != nil {
		return err
	}
	c.Logger, s.Logger = log, log
	defer s.Close()

	return (&agent.Loop{Config: &c, Sender: &s, Count: count, Concurrency: concurrency, Interval: interval,
		DryRun: dryRun, Out: stdout, Logger: log}).Run(ctx)
}

// resolveFlag is --resolve host=ip, repeatable; a comma-separated list is
// accepted too (for $H3RUM_RESOLVE).
type resolveFlag map[string]string

func (r resolveFlag) String() string {
	var s []string
	for h, ip := range r {
		s = append(s, h+"="+ip)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func (r resolveFlag) Set(v string) error {
	for _, e := range strings.Split(v, ",") {
		host, ip, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok || host == "" {
			return fmt.Errorf("%q: want host=ip", e)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return fmt.Errorf("%q: %q is not an IP address", e, ip)
		}
		r[host] = a.String()
	}
	return nil
}
