package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/collector/agent"
	"github.com/h3rum/h3rum/collector/internal/cli"
	"github.com/h3rum/h3rum/ingest/access"
)

// runAgent is `h3rum agent`: the beacon's test run from this machine
// against the two origins, with the handshakes browsers hide, sent to the
// collector's WebSocket ingest (or printed with --dry-run).
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	var (
		c                 agent.Config
		s                 agent.Sender
		l                 = agent.Loop{Config: &c, Sender: &s, Out: stdout}
		caFile, tokenFile string
		lf                cli.LogFlags
	)
	c.Resolve = agent.Resolve{}
	fs.StringVar(&c.H3Origin, "h3", "", "the H3 origin, https://host[:port] (required)")
	fs.StringVar(&c.H2Origin, "h2", "", "the H2 origin, https://host[:port] (required)")
	fs.StringVar(&s.URL, "ingest", "", "the collector's WebSocket ingest, wss://host[:port]/ingest/ws (required unless --dry-run)")
	fs.StringVar(&s.Token, "token", "", "the collector's agent token (default $H3RUM_AGENT_TOKEN); --token-file keeps it off the command line, where every local user can read it")
	fs.StringVar(&tokenFile, "token-file", "", "file holding the agent token, surrounding white space trimmed (default $H3RUM_AGENT_TOKEN_FILE); refused if others may read it")
	fs.StringVar(&c.Site, "site", agent.DefaultSite, "the reports' data-site (the collector's --sites must allow it)")
	fs.IntVar(&l.Count, "count", 1, "runs in all, 0 = until interrupted")
	fs.DurationVar(&l.Interval, "interval", time.Minute, "time between the starts of a worker's runs")
	fs.IntVar(&l.Concurrency, "concurrency", 1, fmt.Sprintf("workers running at once, 1 to %d", agent.MaxConcurrency))
	fs.IntVar(&c.Parallel, "parallel", agent.DefaultParallel, fmt.Sprintf("requests per parallel batch, 1 to %d", beacon.MaxParallel))
	fs.IntVar(&c.Warmup, "warmup", agent.DefaultWarmup, fmt.Sprintf("warm-up requests to the H3 origin, 0 to %d", beacon.MaxWarmup))
	fs.IntVar(&c.Bytes, "bytes", 0, "probe body size in bytes (the collector caps it)")
	fs.DurationVar(&c.Timeout, "timeout", agent.DefaultTimeout, "how long each request may take, to the end of its body, before it counts as a timeout (the script's is 10s)")
	fs.StringVar(&c.Order, "order", "random", "batch order: random (per run), h3first or h2first")
	fs.StringVar(&caFile, "ca", "", "PEM file of root certificates to trust for the origins and the ingest, e.g. the collector's dev-ca.pem in its data directory (default: the system's)")
	fs.Var(c.Resolve, "resolve", "host=ip: connect to ip for host, like curl --resolve; repeatable")
	fs.BoolVar(&l.DryRun, "dry-run", false, "print each run's message as one JSON line on stdout and send nothing")
	lf.Register(fs)
	if err := cli.Parse(fs, args, stderr); err != nil {
		return err
	}
	var err error
	s.Token, err = access.TokenSource{Flag: "token", Env: "$H3RUM_AGENT_TOKEN", Token: cmp.Or(s.Token, os.Getenv("H3RUM_AGENT_TOKEN")),
		File: cmp.Or(tokenFile, os.Getenv("H3RUM_AGENT_TOKEN_FILE"))}.Resolve()
	if err != nil {
		return cli.Usagef("agent: %v", err)
	}
	// Config's 0 is its default; on the command line 0 is a value.
	switch {
	case c.Parallel == 0:
		return cli.Usagef("agent: --parallel 0: want 1 to %d", beacon.MaxParallel)
	case c.Timeout == 0:
		return cli.Usagef("agent: --timeout 0s: want a positive duration")
	case c.Warmup < 0:
		return cli.Usagef("agent: --warmup %d: want 0 to %d", c.Warmup, beacon.MaxWarmup)
	case c.Order == "":
		return cli.Usagef(`agent: --order "": want random, h3first or h2first`)
	case c.Warmup == 0:
		c.Warmup = -1
	}
	if caFile != "" {
		if c.Roots, err = agent.LoadRoots(caFile); err != nil {
			return agentUsage(err)
		}
	}
	s.Roots, s.Resolve = c.Roots, c.Resolve
	if err := l.Validate(); err != nil {
		return agentUsage(err)
	}
	if !l.DryRun {
		if s.URL == "" {
			return cli.Usagef("agent: --ingest is required (or --dry-run)")
		}
		if err := s.Validate(); err != nil {
			return cli.UsageError{Msg: err.Error() + " (--ingest, --token or $H3RUM_AGENT_TOKEN)"}
		}
	}
	if l.Logger, err = lf.Logger(stderr); err != nil {
		return err
	}
	c.Logger, s.Logger = l.Logger, l.Logger
	defer s.Close()
	return l.Run(ctx)
}

// agentFlags names the flags for the Config and Loop fields in package
// agent's messages.
var agentFlags = strings.NewReplacer("agent: H3Origin and H2Origin", "agent: --h3 and --h2",
	"agent: H3Origin:", "agent: --h3", "agent: H2Origin:", "agent: --h2", "agent: report parameters:", "agent: --site:",
	"agent: CA file:", "agent: --ca:", "agent: CA file", "agent: --ca", "agent: Count", "agent: --count",
	"agent: Interval", "agent: --interval", "agent: Concurrency", "agent: --concurrency", "agent: Parallel", "agent: --parallel",
	"agent: Warmup", "agent: --warmup", "agent: Bytes", "agent: --bytes", "agent: Timeout", "agent: --timeout", "agent: Order", "agent: --order")

func agentUsage(err error) error { return cli.UsageError{Msg: agentFlags.Replace(err.Error())} }
