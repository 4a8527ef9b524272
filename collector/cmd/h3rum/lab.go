package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/collector/lab"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries"
)

// labConfig is `h3rum lab`: the experiment on one machine, with emulated
// regions whose round trip, loss and UDP blocking are known, so that the
// report can be checked against the truth.
type labConfig struct {
	regions     string
	runs        int
	concurrency int
	dataDir     string
	runTimeout  time.Duration
	tolerance   float64
	agentRuns   int
}

// The lab's host names, resolved for Chromium with --host-resolver-rules,
// and the collector's ports in its namespace.
const (
	labH3Host, labH2Host = "h3.lab", "h2.lab"
	labH3Port, labH2Port = 8443, 8444
)

func runLab(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	var c labConfig
	fs.StringVar(&c.regions, "regions", "deploy/lab/regions.json", "the emulated regions (see collector/lab/README.md)")
	fs.IntVar(&c.runs, "runs", 10, "Chromium visits of the demo page per region")
	fs.IntVar(&c.concurrency, "concurrency", 1, "visits at a time, across regions (more load the machine and inflate the timings)")
	fs.StringVar(&c.dataDir, "data-dir", "", "the lab collector's data directory (default: a temporary one, removed at the end)")
	fs.DurationVar(&c.runTimeout, "run-timeout", 60*time.Second, "how long one visit may take to store its run")
	fs.Float64Var(&c.tolerance, "tolerance", 0.15, "self-check: the share by which a warm median may differ from the injected round trip")
	fs.IntVar(&c.agentRuns, "agent-runs", 5, "h3rum agent runs per region, after the visits (0: no agents)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if c.runs <= 0 || c.runs > 1000 || c.concurrency <= 0 || c.concurrency > 16 || c.runTimeout <= 0 || c.tolerance <= 0 ||
		c.agentRuns < 0 || c.agentRuns > 1000 {
		return usagef("lab: --runs must be in 1..1000, --agent-runs in 0..1000, --concurrency in 1..16, --run-timeout and --tolerance positive")
	}
	if os.Geteuid() != 0 {
		return errors.New("lab: needs root (network namespaces and TUN devices)")
	}
	regions, err := lab.LoadRegions(c.regions)
	if err != nil {
		return err
	}
	ok, err := c.run(ctx, regions, stdout)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("lab: the report does not match what the lab injected (see the verdicts above)")
	}
	return nil
}

// run builds the lab, runs the visits and the report, and prints the
// verdicts; ok is false when one fails.
func (c *labConfig) run(ctx context.Context, regions []lab.Region, out io.Writer) (ok bool, err error) {
	dir := c.dataDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "h3rum-lab-"); err != nil {
			return false, err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return false, err
	}
	l, err := lab.New(ctx, lab.Config{Regions: regions})
	if err != nil {
		return false, err
	}
	defer l.Close()
	geo := filepath.Join(dir, "lab-geoip.mmdb")
	if err := writeLabGeoIP(geo, l.Regions); err != nil {
		return false, err
	}
	fmt.Fprintf(out, "lab %s: %d regions, collector at %s\n", l.Name, len(l.Regions), lab.CollectorAddr)

	token := rand.Text() + rand.Text() // the agents' token: serve wants 32 bytes or more
	stop, err := startLabCollector(ctx, l, dir, geo, token)
	if err != nil {
		return false, err
	}
	defer stop()
	spki, err := waitLabCollector(ctx, l, dir)
	if err != nil {
		return false, err
	}
	conn, err := openLabStore(ctx, l, dir)
	if err != nil {
		return false, err
	}
	defer conn.Close()

	start := time.Now().UTC().Add(-time.Second)
	failed := c.visit(ctx, l, spki, conn, out)
	if err := ctx.Err(); err != nil {
		return false, err
	}
	rep, err := queries.Run(ctx, conn, queries.Options{Since: start, Until: time.Now().UTC().Add(time.Second), By: "continent",
		IncludeBots: true, MinRuns: 1})
	if err != nil {
		return false, fmt.Errorf("lab report: %w", err)
	}
	fmt.Fprintln(out)
	if err := rep.WriteTable(out); err != nil {
		return false, err
	}
	var agentRep *queries.Report
	if c.agentRuns > 0 {
		agentStart := time.Now().UTC().Add(-time.Second)
		delivered := c.runAgents(ctx, l, dir, token, out)
		if err := waitAgentRuns(ctx, conn, agentStart, delivered); err != nil {
			return false, err
		}
		agentRep, err = queries.Run(ctx, conn, queries.Options{Since: agentStart, Until: time.Now().UTC().Add(time.Second), By: "continent",
			Agent: true, MinRuns: 1})
		if err != nil {
			return false, fmt.Errorf("lab agent report: %w", err)
		}
		fmt.Fprintln(out, "\nthe agent's runs:")
		if err := agentRep.WriteTable(out); err != nil {
			return false, err
		}
	}
	return c.verdicts(rep, agentRep, l, failed, out), nil
}

// writeLabGeoIP writes a GeoIP database in the GeoLite2-City layout that
// maps each region's prefix to its country and continent, so that regions
// come out of the collector's normal GeoIP path.
func writeLabGeoIP(path string, regions []*lab.RegionLink) error {
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-City", RecordSize: 28, IncludeReservedNetworks: true})
	if err != nil {
		return fmt.Errorf("lab GeoIP: %w", err)
	}
	for _, r := range regions {
		_, n, err := net.ParseCIDR(r.Prefix.String())
		if err != nil {
			return fmt.Errorf("lab GeoIP: %w", err)
		}
		rec := mmdbtype.Map{
			"country":   mmdbtype.Map{"iso_code": mmdbtype.String(r.Country)},
			"continent": mmdbtype.Map{"code": mmdbtype.String(r.Continent)},
		}
		if err := tree.Insert(n, rec); err != nil {
			return fmt.Errorf("lab GeoIP: region %s: %w", r.Name, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("lab GeoIP: %w", err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("lab GeoIP: %w", err)
	}
	return f.Close()
}

// startLabCollector starts `h3rum serve` (this binary) in the collector's
// namespace, with its own managed ClickHouse there, and returns a func
// that stops both.
func startLabCollector(ctx context.Context, l *lab.Lab, dir, geo, agentToken string) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "serve",
		"--addr", fmt.Sprintf(":%d", labH3Port), "--h2-addr", fmt.Sprintf(":%d", labH2Port),
		"--h3-host", labH3Host, "--h2-host", labH2Host, "--data-dir", dir, "--geoip-db", geo,
		"--rate-limit", "0", "--metrics-addr", "", "--flush-interval", "200ms", "--agent-token", agentToken)
	cmd.Stdout, cmd.Stderr = logf, logf
	// No Pdeathsig: it follows the forking thread, here one of the
	// runtime's, not this process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child forked on a thread inside the namespace lives there.
	if err := l.Collector.Do(cmd.Start); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting the lab collector: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	return func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}, nil
}

// dialIn dials addr from inside ns: the socket belongs to the namespace
// for its whole life, whichever goroutine uses it.
func dialIn(ctx context.Context, ns lab.Namespace, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := ns.Do(func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// waitLabCollector waits for the collector to answer /healthz on the H3
// origin and returns the SPKI hash of its development certificate.
func waitLabCollector(ctx context.Context, l *lab.Lab, dir string) (string, error) {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialIn(ctx, l.Collector, network, addr)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the lab's own development certificate
	}}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("https://%s:%d/healthz", lab.CollectorAddr, labH3Port)
	deadline := time.Now().Add(90 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Host = labH3Host
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			return "", fmt.Errorf("the lab collector did not answer within 90 s (%v); its log:\n%s", err, tailString(string(log), 20))
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "dev-cert.pem"))
	if err != nil {
		return "", fmt.Errorf("reading the lab collector's certificate: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return "", errors.New("the lab collector's certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("the lab collector's certificate: %w", err)
	}
	return chromium.SPKIHash(cert), nil
}

// openLabStore connects to the collector's ClickHouse, which listens on
// the collector namespace's loopback.
func openLabStore(ctx context.Context, l *lab.Lab, dir string) (driver.Conn, error) {
	dsn, err := store.ReadLocalDSN(filepath.Join(dir, "clickhouse"))
	if err != nil {
		return nil, err
	}
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	opts.DialContext = func(ctx context.Context, addr string) (net.Conn, error) {
		return dialIn(ctx, l.Collector, "tcp", addr)
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("reaching the lab's ClickHouse: %w", err)
	}
	return conn, nil
}

// visit runs c.runs Chromium visits of the demo page from every region, at
// most c.concurrency at a time, each waiting until its run is stored. It
// returns the visits per region whose run never arrived.
func (c *labConfig) visit(ctx context.Context, l *lab.Lab, spki string, conn driver.Conn, out io.Writer) map[string]int {
	type job struct{ r *lab.RegionLink }
	jobs := make(chan job)
	var (
		mu     sync.Mutex
		failed = map[string]int{}
		done   int
		wg     sync.WaitGroup
	)
	page := fmt.Sprintf("https://%s:%d/demo", labH3Host, labH3Port)
	rules := fmt.Sprintf("MAP %s %s, MAP %s %s", labH3Host, lab.CollectorAddr, labH2Host, lab.CollectorAddr)
	total := c.runs * len(l.Regions)
	for range c.concurrency {
		wg.Go(func() {
			for j := range jobs {
				err := c.visitOnce(ctx, j.r, page, rules, spki, conn)
				mu.Lock()
				done++
				if err != nil {
					failed[j.r.Name]++
					fmt.Fprintf(out, "  %s: %v\n", j.r.Name, err)
				}
				if done%10 == 0 || done == total {
					fmt.Fprintf(out, "  %d of %d visits\n", done, total)
				}
				mu.Unlock()
			}
		})
	}
	for range c.runs {
		for _, r := range l.Regions {
			select {
			case jobs <- job{r}:
			case <-ctx.Done():
			}
		}
	}
	close(jobs)
	wg.Wait()
	return failed
}

// visitOnce loads the demo page in a fresh headless Chromium inside the
// region's namespace and waits until the region has one more run stored.
func (c *labConfig) visitOnce(ctx context.Context, r *lab.RegionLink, page, rules, spki string, conn driver.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, c.runTimeout)
	defer cancel()
	count := func() (uint64, error) {
		var n uint64
		err := conn.QueryRow(ctx, "SELECT uniqExact(run_id) FROM samples WHERE country = ? AND source = 'browser'", r.Country).Scan(&n)
		return n, err
	}
	before, err := count()
	if err != nil {
		return err
	}
	var b *chromium.Browser
	// Forked on a thread inside the region's namespace, Chromium lives there.
	err = r.Namespace.Do(func() error {
		var err error
		// A dummy QUIC origin of the same host makes Chromium accept the
		// SPKI-trusted certificate over QUIC too, while HTTP/3 is still
		// found through Alt-Svc.
		b, err = chromium.Start(ctx, page, chromium.Options{SPKI: []string{spki}, HostResolverRules: rules, ForceQUICOn: labH3Host + ":1"})
		return err
	})
	if err != nil {
		return err
	}
	defer b.Close()
	for {
		n, err := count()
		if err != nil {
			return err
		}
		if n > before {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no run stored within %s (chromium: %s)", c.runTimeout, tailString(b.Output(), 3))
		case <-b.Done():
			return fmt.Errorf("chromium exited before its run was stored: %s", tailString(b.Output(), 3))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// verdicts compares the report with what the lab injected and prints one
// line per region; it returns whether every check passed.
//
// A warm request costs one round trip plus what the browser, the server
// and the emulator add (measured here: 5–10 ms of Chromium's own, more
// than any tolerance at a short round trip). The lossless region with the
// shortest round trip calibrates that overhead, per protocol; every other
// region's warm medians must then lie within the tolerance of its round
// trip plus that overhead.
func (c *labConfig) verdicts(rep, agentRep *queries.Report, l *lab.Lab, failed map[string]int, out io.Writer) bool {
	groups := map[string]*queries.Group{}
	for i := range rep.Groups {
		groups[rep.Groups[i].Group] = &rep.Groups[i]
	}
	agentGroups := map[string]*queries.Group{}
	if agentRep != nil {
		for i := range agentRep.Groups {
			agentGroups[agentRep.Groups[i].Group] = &agentRep.Groups[i]
		}
	}
	rtt := func(r *lab.RegionLink) float64 { return r.Up.DelayMS + r.Down.DelayMS }
	p50 := func(s *queries.Stats) float64 { return s.Percentiles[0].MS }
	var calib *lab.RegionLink
	for _, r := range l.Regions {
		g := groups[r.Continent]
		if r.BlockUDP || r.Up.LossPct > 0 || r.Down.LossPct > 0 || g == nil || g.H2 == nil || g.H3 == nil {
			continue
		}
		if calib == nil || rtt(r) < rtt(calib) {
			calib = r
		}
	}
	var over [2]float64 // h2, h3
	if calib != nil {
		g := groups[calib.Continent]
		over = [2]float64{p50(g.H2) - rtt(calib), p50(g.H3) - rtt(calib)}
		fmt.Fprintf(out, "\ncalibration: region %s (round trip %.0f ms) puts the overhead of browser, server and emulator at %.1f ms (h2) and %.1f ms (h3)\n",
			calib.Name, rtt(calib), over[0], over[1])
	}
	fmt.Fprintf(out, "self-check (warm medians within %.0f %% of the injected round trip plus that overhead; the agent's handshakes within %.0f %% of 2, 1 and 3 round trips):\n", 100*c.tolerance, 100*c.tolerance)
	all := true
	for _, r := range l.Regions {
		up, down := r.Stats()
		own := float64(up.Late.Mean+down.Late.Mean) / float64(time.Millisecond)
		var notes []string
		pass := true
		check := func(ok bool, format string, a ...any) {
			mark := "ok"
			if !ok {
				mark, pass = "FAILED", false
			}
			notes = append(notes, fmt.Sprintf(format, a...)+" "+mark)
		}
		g := groups[r.Continent]
		check(failed[r.Name] == 0, "visits stored %d/%d", c.runs-failed[r.Name], c.runs)
		switch {
		case g == nil:
			check(false, "no samples in the report")
		case r.BlockUDP:
			// Every H3-batch request fell back to TCP.
			avail := -1.0
			if g.Availability != nil {
				avail = g.Availability.Share
			}
			check(g.H3 == nil && avail == 0, "UDP blocked: HTTP/3 availability %.0f %% (want 0)", 100*avail)
		case r == calib:
			notes = append(notes, "calibration")
		default:
			for k, s := range []struct {
				name string
				st   *queries.Stats
			}{{"h2", g.H2}, {"h3", g.H3}} {
				if s.st == nil {
					check(false, "%s: none", s.name)
					continue
				}
				if calib == nil {
					check(false, "%s: no lossless region to calibrate with", s.name)
					continue
				}
				want := rtt(r) + over[k]
				check(math.Abs(p50(s.st)-want) <= c.tolerance*want, "%s p50 %.1f ms (want %.1f)", s.name, p50(s.st), want)
			}
			// At 3 % loss (Dropbox's case) HTTP/2's tail stands clearly above
			// HTTP/3's; at 1 % a few dozen requests cannot tell them apart.
			if max(r.Up.LossPct, r.Down.LossPct) >= 3 && g.H2 != nil && g.H3 != nil {
				h2, h3 := g.H2.Percentiles[2].MS, g.H3.Percentiles[2].MS
				check(h3 < h2, "under loss, h3 p90 %.1f < h2 p90 %.1f", h3, h2)
			}
		}
		if g != nil && !r.BlockUDP && g.Availability != nil {
			check(g.Availability.Share == 1, "HTTP/3 availability %.0f %%", 100*g.Availability.Share)
		}
		if agentRep != nil {
			c.agentVerdict(agentGroups[r.Continent], r, rtt(r)+own, check, func(format string, a ...any) {
				notes = append(notes, fmt.Sprintf(format, a...))
			})
		}
		verdict := "PASS"
		if !pass {
			verdict, all = "FAIL", false
		}
		fmt.Fprintf(out, "  %-12s %s  round trip %.0f ms, emulator's own %.2f ms: %s\n", r.Name, verdict, rtt(r), own, strings.Join(notes, "; "))
	}
	return all
}

func tailString(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
