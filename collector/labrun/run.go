// Package labrun is a lab run: the emulated regions, the collector in its
// namespace, the browser and agent visits, the report and the self-check.
package labrun

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon/firefox"
	"github.com/h3rum/h3rum/collector/lab"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/render"
)

// Defaults of the Config fields whose zero value stands for one.
const (
	DefaultRuns       = 10
	DefaultRunTimeout = 60 * time.Second
)

// Config is one lab run: the experiment on one machine, with emulated
// regions whose round trip, loss and UDP blocking are known, so that the
// report can be checked against the truth. Regions is required; the zero
// value of every other field is a working default. Running it needs root
// (network namespaces and TUN devices).
type Config struct {
	// Regions are the emulated regions (lab.LoadRegions reads them).
	Regions []lab.Region
	// Runs is the Chromium visits of the demo page per region; a region's
	// own Runs overrides it. Default DefaultRuns.
	Runs int
	// FirefoxRuns is the Firefox visits per region, after Chromium's,
	// checked on their own; skipped with a note where Firefox is not
	// installed. Default 0: none.
	FirefoxRuns int
	// AgentRuns is the h3rum agent runs per region, after the visits.
	// Default 0: no agents.
	AgentRuns int
	// Concurrency is the visits at a time, across regions; more load the
	// machine and inflate the timings. Default 1.
	Concurrency int
	// DataDir is the collector's data directory. Default: a temporary
	// one, removed at the end.
	DataDir string
	// RunTimeout is how long one visit may take to store its run, and an
	// agent one run. Default DefaultRunTimeout.
	RunTimeout time.Duration
	// Tolerance is the share by which a warm median may differ from the
	// injected round trip (lab.SelfCheck's). Default lab.DefaultTolerance.
	Tolerance float64
	// Bin is the h3rum binary whose `serve` runs the collector and whose
	// `agent` the agents. Default: this process's executable.
	Bin string
}

// run is a lab run under way: its configuration with defaults resolved,
// and what it has built.
type run struct {
	Config
	lab   *lab.Lab
	dir   string      // the collector's data directory
	token string      // the agents' token
	conn  driver.Conn // the collector's ClickHouse
	out   io.Writer
}

// Run builds the lab, runs the visits and the report, prints them and the
// verdicts to out, and removes the lab; ok is false when a check fails.
func (c *Config) Run(ctx context.Context, out io.Writer) (ok bool, err error) {
	if c.Runs < 0 || c.FirefoxRuns < 0 || c.AgentRuns < 0 || c.Concurrency < 0 || c.RunTimeout < 0 || c.Tolerance < 0 {
		return false, errors.New("lab configuration: no count, timeout or tolerance may be negative")
	}
	r := &run{Config: c.withDefaults(), out: out}
	return r.run(ctx)
}

// withDefaults is c with the defaults of its zero fields filled in.
func (c Config) withDefaults() Config {
	if c.Runs == 0 {
		c.Runs = DefaultRuns
	}
	if c.Concurrency == 0 {
		c.Concurrency = 1
	}
	if c.RunTimeout == 0 {
		c.RunTimeout = DefaultRunTimeout
	}
	return c
}

// bin is the binary the lab starts the collector and the agents with.
func (c *Config) bin() (string, error) {
	if c.Bin != "" {
		return c.Bin, nil
	}
	return os.Executable()
}

func (r *run) run(ctx context.Context) (ok bool, err error) {
	r.dir = r.DataDir
	if r.dir == "" {
		if r.dir, err = os.MkdirTemp("", "h3rum-lab-"); err != nil {
			return false, err
		}
		defer os.RemoveAll(r.dir)
	} else if err := os.MkdirAll(r.dir, 0o750); err != nil {
		return false, err
	}
	if r.lab, err = lab.New(ctx, lab.Config{Regions: r.Regions}); err != nil {
		return false, err
	}
	defer r.lab.Close()
	geo := filepath.Join(r.dir, "lab-geoip.mmdb")
	if err := writeGeoIP(geo, r.lab.Regions); err != nil {
		return false, err
	}
	fmt.Fprintf(r.out, "lab %s: %d regions, collector at %s\n", r.lab.Name, len(r.lab.Regions), lab.CollectorAddr)

	r.token = rand.Text() + rand.Text() // the agents' token: serve wants 32 bytes or more
	stop, err := r.startCollector(ctx, geo)
	if err != nil {
		return false, err
	}
	defer stop()
	spki, err := r.waitCollector(ctx)
	if err != nil {
		return false, err
	}
	if r.conn, err = r.openStore(ctx); err != nil {
		return false, err
	}
	defer r.conn.Close()

	labStart := time.Now().UTC().Add(-time.Second)
	chromiumPass, err := r.browserPass(ctx, engine{name: "chromium", spki: spki}, r.Runs)
	if err != nil {
		return false, err
	}
	passes := []*pass{chromiumPass}
	if r.FirefoxRuns > 0 {
		if _, err := firefox.Find(""); err != nil {
			fmt.Fprintf(r.out, "\nFirefox visits skipped: %v\n", err)
		} else {
			ff, err := r.browserPass(ctx, engine{name: "firefox", caFile: filepath.Join(r.dir, "dev-ca.pem")}, r.FirefoxRuns)
			if err != nil {
				return false, err
			}
			passes = append(passes, ff)
			// Both engines side by side, as a user would compare them.
			byBrowser, err := queries.Run(ctx, r.conn, model.Options{Since: labStart, Until: time.Now().UTC().Add(time.Second), By: "browser",
				IncludeBots: true, MinRuns: 1, Replicates: -1})
			if err != nil {
				return false, fmt.Errorf("lab report by browser: %w", err)
			}
			fmt.Fprintln(r.out, "\nthe visits by browser:")
			if err := render.Table(r.out, byBrowser); err != nil {
				return false, err
			}
		}
	}
	agentRep, agentLate, err := r.agentPass(ctx)
	if err != nil {
		return false, err
	}
	return r.verdicts(passes, agentRep, agentLate), nil
}
