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
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/beacon/firefox"
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
	firefoxRuns int
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
	fs.IntVar(&c.runs, "runs", 10, "Chromium visits of the demo page per region (a region's \"runs\" overrides it)")
	fs.IntVar(&c.concurrency, "concurrency", 1, "visits at a time, across regions (more load the machine and inflate the timings)")
	fs.StringVar(&c.dataDir, "data-dir", "", "the lab collector's data directory (default: a temporary one, removed at the end)")
	fs.DurationVar(&c.runTimeout, "run-timeout", 60*time.Second, "how long one visit may take to store its run")
	fs.Float64Var(&c.tolerance, "tolerance", 0.15, "self-check: the share by which a warm median may differ from the injected round trip")
	fs.IntVar(&c.agentRuns, "agent-runs", 5, "h3rum agent runs per region, after the visits (0: no agents)")
	fs.IntVar(&c.firefoxRuns, "firefox-runs", 3, "Firefox visits per region, after Chromium's, checked on their own (0: none; skipped with a note where Firefox is not installed)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if c.runs <= 0 || c.runs > 1000 || c.concurrency <= 0 || c.concurrency > 16 || c.runTimeout <= 0 || c.tolerance <= 0 ||
		c.agentRuns < 0 || c.agentRuns > 1000 || c.firefoxRuns < 0 || c.firefoxRuns > 1000 {
		return usagef("lab: --runs must be in 1..1000, --agent-runs and --firefox-runs in 0..1000, --concurrency in 1..16, --run-timeout and --tolerance positive")
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

	labStart := time.Now().UTC().Add(-time.Second)
	chromiumPass, err := c.browserPass(ctx, l, conn, engine{name: "chromium", spki: spki}, c.runs, out)
	if err != nil {
		return false, err
	}
	passes := []*labPass{chromiumPass}
	if c.firefoxRuns > 0 {
		if _, err := firefox.Find(""); err != nil {
			fmt.Fprintf(out, "\nFirefox visits skipped: %v\n", err)
		} else {
			ff, err := c.browserPass(ctx, l, conn, engine{name: "firefox", caFile: filepath.Join(dir, "dev-ca.pem")}, c.firefoxRuns, out)
			if err != nil {
				return false, err
			}
			passes = append(passes, ff)
			// Both engines side by side, as a user would compare them.
			byBrowser, err := queries.Run(ctx, conn, queries.Options{Since: labStart, Until: time.Now().UTC().Add(time.Second), By: "browser",
				IncludeBots: true, MinRuns: 1, Replicates: -1})
			if err != nil {
				return false, fmt.Errorf("lab report by browser: %w", err)
			}
			fmt.Fprintln(out, "\nthe visits by browser:")
			if err := byBrowser.WriteTable(out); err != nil {
				return false, err
			}
		}
	}
	var agentRep *queries.Report
	agentLate := make([][2]lab.Lateness, len(l.Regions)) // the emulator's own delay while the agent ran
	if c.agentRuns > 0 {
		agentStart := time.Now().UTC().Add(-time.Second)
		before := make([][2]lab.Lateness, len(l.Regions))
		for i, r := range l.Regions {
			up, down := r.Stats()
			before[i] = [2]lab.Lateness{up.Late, down.Late}
		}
		delivered := c.runAgents(ctx, l, dir, token, out)
		for i, r := range l.Regions {
			up, down := r.Stats()
			agentLate[i] = [2]lab.Lateness{up.Late.After(before[i][0]), down.Late.After(before[i][1])}
		}
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
	return c.verdicts(passes, agentRep, agentLate, l, out), nil
}

// engine is a browser the lab visits the demo page with.
type engine struct {
	name   string // "chromium" or "firefox"
	spki   string // chromium: the certificate's SPKI hash it trusts
	caFile string // firefox: the local CA its profile trusts
}

// labPass is one engine's visits: their report (its own window) and the
// visits per region whose run never arrived.
type labPass struct {
	engine engine
	runs   int // per region, unless the region says (runsOf)
	rep    *queries.Report
	failed map[string]int
}

// runsOf is how many visits region r gets in a pass of runs per region:
// the region's own count, for Chromium, where it gives one.
func runsOf(r *lab.RegionLink, e engine, runs int) int {
	if e.name == "chromium" && r.Runs > 0 {
		return r.Runs
	}
	return runs
}

// browserPass runs an engine's visits from every region and reports them
// by continent over the pass's own window.
func (c *labConfig) browserPass(ctx context.Context, l *lab.Lab, conn driver.Conn, e engine, runs int, out io.Writer) (*labPass, error) {
	var own []string
	for _, r := range l.Regions {
		if n := runsOf(r, e, runs); n != runs {
			own = append(own, fmt.Sprintf("%s %d", r.Name, n))
		}
	}
	if len(own) > 0 {
		fmt.Fprintf(out, "\n%s: %d visits per region (%s)\n", e.name, runs, strings.Join(own, ", "))
	} else {
		fmt.Fprintf(out, "\n%s: %d visits per region\n", e.name, runs)
	}
	start := time.Now().UTC().Add(-time.Second)
	failed := c.visit(ctx, l, e, runs, conn, out)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep, err := queries.Run(ctx, conn, queries.Options{Since: start, Until: time.Now().UTC().Add(time.Second), By: "continent",
		IncludeBots: true, MinRuns: 1})
	if err != nil {
		return nil, fmt.Errorf("lab report (%s): %w", e.name, err)
	}
	fmt.Fprintln(out)
	if err := rep.WriteTable(out); err != nil {
		return nil, err
	}
	return &labPass{engine: e, runs: runs, rep: rep, failed: failed}, nil
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

// visit runs the engine's visits of the demo page, runs from every region,
// at most c.concurrency at a time, each waiting until its run is stored.
// It returns the visits per region whose run never arrived.
func (c *labConfig) visit(ctx context.Context, l *lab.Lab, e engine, runs int, conn driver.Conn, out io.Writer) map[string]int {
	type job struct{ r *lab.RegionLink }
	jobs := make(chan job)
	var (
		mu      sync.Mutex
		failed  = map[string]int{}
		done    int
		nfailed int
		wg      sync.WaitGroup
	)
	page := fmt.Sprintf("https://%s:%d/demo", labH3Host, labH3Port)
	rules := fmt.Sprintf("MAP %s %s, MAP %s %s", labH3Host, lab.CollectorAddr, labH2Host, lab.CollectorAddr)
	total := 0
	for _, r := range l.Regions {
		total += runsOf(r, e, runs)
	}
	began := time.Now()
	for range c.concurrency {
		wg.Go(func() {
			for j := range jobs {
				err := c.visitOnce(ctx, j.r, page, rules, e, conn)
				mu.Lock()
				done++
				if err != nil {
					failed[j.r.Name]++
					nfailed++
					fmt.Fprintf(out, "  %s: %v\n", j.r.Name, err)
				}
				if done%10 == 0 || done == total {
					el := time.Since(began)
					left := time.Duration(float64(el) / float64(done) * float64(total-done)).Round(time.Second)
					fmt.Fprintf(out, "  %d of %d %s visits, %s so far, about %s left in this pass (%d failed)\n", done, total, e.name, el.Round(time.Second), left, nfailed)
				}
				mu.Unlock()
			}
		})
	}
	planned := make([]int, len(l.Regions))
	for i, r := range l.Regions {
		planned[i] = runsOf(r, e, runs)
	}
	for _, i := range lab.Schedule(planned) {
		select {
		case jobs <- job{l.Regions[i]}:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	return failed
}

// visitOnce loads the demo page in a fresh headless browser inside the
// region's namespace and waits until the region has one more run stored.
func (c *labConfig) visitOnce(ctx context.Context, r *lab.RegionLink, page, rules string, e engine, conn driver.Conn) error {
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
	var b labBrowser
	// Forked on a thread inside the region's namespace, the browser lives there.
	err = r.Namespace.Do(func() error {
		var err error
		if e.name == "firefox" {
			// Both origins' names resolve to the collector; DNS over HTTPS
			// stays off.
			b, err = firefox.Start(ctx, page, firefox.Options{CAFile: e.caFile, Prefs: map[string]string{
				"network.dns.forceResolve": strconv.Quote(lab.CollectorAddr.String()), "network.trr.mode": "5"}})
			return err
		}
		// A dummy QUIC origin of the same host makes Chromium accept the
		// SPKI-trusted certificate over QUIC too, while HTTP/3 is still
		// found through Alt-Svc.
		b, err = chromium.Start(ctx, page, chromium.Options{SPKI: []string{e.spki}, HostResolverRules: rules, ForceQUICOn: labH3Host + ":1"})
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
			return fmt.Errorf("no run stored within %s (%s: %s)", c.runTimeout, e.name, tailString(b.Output(), 3))
		case <-b.Done():
			return fmt.Errorf("%s exited before its run was stored: %s", e.name, tailString(b.Output(), 3))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// labBrowser is what the lab needs of a running browser.
type labBrowser interface {
	Done() <-chan struct{}
	Output() string
	Close() error
}

// verdicts runs the lab package's self-check over the passes and prints
// it, with the emulator's packet counts per region; it returns whether
// every check passed.
func (c *labConfig) verdicts(passes []*labPass, agentRep *queries.Report, agentLate [][2]lab.Lateness, l *lab.Lab, out io.Writer) bool {
	obs := make([]lab.Observed, len(l.Regions))
	fmt.Fprintln(out, "\nthe packets' fate per region and direction (loss model's own counters; udp = QUIC, the rest TCP):")
	for i, r := range l.Regions {
		up, down := r.Stats()
		obs[i] = lab.Observed{Region: r.Region, UpStats: up, DownStats: down, AgentUp: agentLate[i][0], AgentDown: agentLate[i][1]}
		for _, d := range []struct {
			name string
			p    lab.Path
			st   lab.Stats
		}{{"up", r.Up, up}, {"down", r.Down, down}} {
			if d.p.LossPct == 0 && d.st.Blocked == 0 {
				continue
			}
			st := d.st
			tcpIn, tcpLost := st.In-st.UDPIn, st.Lost-st.UDPLost
			fmt.Fprintf(out, "  %-12s %-4s udp lost %d/%d (%.2f %%), tcp lost %d/%d (%.2f %%); %d runs of losses, mean %.2f (configured %.0f %% in runs of %.1f), longest %d; queue full %d, blocked %d\n",
				r.Name, d.name, st.UDPLost, st.UDPIn, pct(st.UDPLost, st.UDPIn), tcpLost, tcpIn, pct(tcpLost, tcpIn),
				st.Bursts, st.MeanBurst(), d.p.LossPct, max(1, d.p.LossBurst), st.LongestBurst, st.QueueFull, st.Blocked)
		}
	}
	ps := make([]lab.Pass, len(passes))
	for i, p := range passes {
		planned := map[string]int{}
		for _, r := range l.Regions {
			planned[r.Name] = runsOf(r, p.engine, p.runs)
		}
		ps[i] = lab.Pass{Engine: p.engine.name, Timed: i == 0, Planned: planned, Failed: p.failed, Report: p.rep}
	}
	res := lab.SelfCheck{Tolerance: c.tolerance}.Judge(obs, ps, agentRep)
	fmt.Fprintln(out)
	res.Write(out, obs)
	failed := 0
	for _, p := range passes {
		for _, n := range p.failed {
			failed += n
		}
	}
	if failed > 0 {
		fmt.Fprintf(out, "failed visits: %d (counted above; a region fails only with too few stored runs to check)\n", failed)
	}
	return res.OK()
}

func pct(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func tailString(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
