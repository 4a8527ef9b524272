package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"github.com/h3rum/h3rum/collector/internal/cli"
	"github.com/h3rum/h3rum/collector/lab"
	"github.com/h3rum/h3rum/collector/labrun"
)

// runLab is `h3rum lab`: the experiment on one machine, with emulated
// regions whose round trip, loss and UDP blocking are known, so that the
// report can be checked against the truth. The lab starts this binary's
// `serve` and `agent` (labrun.Config.Bin's default).
func runLab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	var c labrun.Config
	regions := fs.String("regions", "deploy/lab/regions.json", "the emulated regions (see collector/lab/README.md)")
	fs.IntVar(&c.Runs, "runs", labrun.DefaultRuns, "Chromium visits of the demo page per region (a region's \"runs\" overrides it)")
	fs.IntVar(&c.Concurrency, "concurrency", 1, "visits at a time, across regions (more load the machine and inflate the timings)")
	fs.StringVar(&c.DataDir, "data-dir", "", "the lab collector's data directory (default: a temporary one, removed at the end)")
	fs.DurationVar(&c.RunTimeout, "run-timeout", labrun.DefaultRunTimeout, "how long one visit may take to store its run")
	fs.Float64Var(&c.Tolerance, "tolerance", lab.DefaultTolerance, "self-check: the share by which a warm median may differ from the injected round trip")
	fs.IntVar(&c.AgentRuns, "agent-runs", 5, "h3rum agent runs per region, after the visits (0: no agents)")
	fs.IntVar(&c.FirefoxRuns, "firefox-runs", 3, "Firefox visits per region, after Chromium's, checked on their own (0: none; skipped with a note where Firefox is not installed)")
	if err := cli.Parse(fs, args, stderr); err != nil {
		return err
	}
	if c.Runs <= 0 || c.Runs > 1000 || c.Concurrency <= 0 || c.Concurrency > 16 || c.RunTimeout <= 0 || c.Tolerance <= 0 ||
		c.AgentRuns < 0 || c.AgentRuns > 1000 || c.FirefoxRuns < 0 || c.FirefoxRuns > 1000 {
		return cli.Usagef("lab: --runs must be in 1..1000, --agent-runs and --firefox-runs in 0..1000, --concurrency in 1..16, --run-timeout and --tolerance positive")
	}
	if os.Geteuid() != 0 {
		return errors.New("lab: needs root (network namespaces and TUN devices)")
	}
	var err error
	if c.Regions, err = lab.LoadRegions(*regions); err != nil {
		return err
	}
	ok, err := c.Run(ctx, stdout)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("lab: the report does not match what the lab injected (see the verdicts above)")
	}
	return nil
}
