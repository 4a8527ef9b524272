package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
)

// result is one measured run.
type result struct {
	server   string
	reqs     int
	errs     int
	elapsed  time.Duration
	cpu      time.Duration
	lat      []time.Duration // client-side, per request
	app      []time.Duration // server handling time from Server-Timing (h3rum only)
	firstErr error
}

func (r result) rate() float64 { return float64(r.reqs) / r.elapsed.Seconds() }
func (r result) cpuPerReq() time.Duration {
	if r.reqs == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.reqs)
}

func bench(ctx context.Context, c config, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "benchprobe")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cert, err := chromium.NewCert("localhost", "127.0.0.1")
	if err != nil {
		return err
	}
	certFile, keyFile, err := cert.WriteFiles(dir, "localhost")
	if err != nil {
		return err
	}
	pool := cert.Pool()

	var servers []*child
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, name := range strings.Split(c.servers, ",") {
		ch, err := startChild(ctx, name, certFile, keyFile, c)
		if err != nil {
			return err
		}
		servers = append(servers, ch)
	}

	fmt.Fprintf(stdout, "benchprobe: %d rounds of %v per server and scenario, keep-alive: %d requests in flight over %d connections, new-connection: %d at once; GOMAXPROCS client=%d\n",
		c.rounds, c.duration, c.concurrency, c.conns, c.newConnConc, runtimeProcs())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tserver\trun\treq/s\tp50\tp99\tCPU/req\tapp p50\tapp p99\terrors\t")
	var summary, results, missed []string
	for _, sc := range strings.Split(c.scenarios, ",") {
		sc = strings.TrimSpace(sc)
		load, err := scenario(sc, c, pool)
		if err != nil {
			return err
		}
		for _, s := range servers { // warm up both
			if _, err := load(ctx, s, c.warmup); err != nil {
				return err
			}
		}
		byServer := map[string][]result{}
		for round := 1; round <= c.rounds; round++ {
			// Each round starts one server later, so that no server always
			// runs right after the same one (caddy's new-connection runs
			// leave the machine busier than the others do).
			for i := range servers {
				s := servers[(i+round-1)%len(servers)]
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r, err := load(ctx, s, c.duration)
				if err != nil {
					return err
				}
				byServer[s.name] = append(byServer[s.name], r)
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\t\n", sc, s.name, round, r.rate(),
					fmtDur(pct(r.lat, 50)), fmtDur(pct(r.lat, 99)), fmtDur(r.cpuPerReq()),
					fmtDur(pct(r.app, 50)), fmtDur(pct(r.app, 99)), r.errs)
				if r.firstErr != nil {
					fmt.Fprintf(tw, "\t\t\tfirst error: %v\t\t\t\t\t\t\t\n", r.firstErr)
				}
			}
		}
		th := total(byServer["h3rum"])
		for _, s := range servers {
			if t := total(byServer[s.name]); t.reqs > 0 {
				results = append(results, benchLine(fmt.Sprintf("BenchmarkProbe/%s/%s", sc, s.name), t.reqs,
					metric{t.rate(), "req/s"}, metric{float64(t.cpuPerReq()), "cpu-ns/req"},
					metric{float64(pct(t.lat, 99)) / 1e3, "p99-µs"}))
			}
		}
		missed = append(missed, missedTargets(sc, th, total(byServer[targetBase]))...)
		for _, base := range []string{"bare", "headers", "caddy"} {
			tb := total(byServer[base])
			if tb.reqs == 0 || th.reqs == 0 {
				continue
			}
			results = append(results, benchLine(fmt.Sprintf("BenchmarkProbe/%s/h3rum-vs-%s", sc, base), 1,
				metric{th.rate() / tb.rate(), "req/s-ratio"}, metric{float64(th.cpuPerReq()) / float64(tb.cpuPerReq()), "cpu/req-ratio"}))
			summary = append(summary, fmt.Sprintf("%-12s h3rum/%-7s req/s %.3f  CPU/req %.3f  (%s %.0f req/s %s/req, h3rum %.0f req/s %s/req; h3rum app p99 %s)",
				sc, base+":", th.rate()/tb.rate(), float64(th.cpuPerReq())/float64(tb.cpuPerReq()),
				base, tb.rate(), fmtDur(tb.cpuPerReq()), th.rate(), fmtDur(th.cpuPerReq()), fmtDur(pct(th.app, 99))))
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	for _, s := range summary {
		fmt.Fprintln(stdout, s)
	}
	fmt.Fprintf(stdout, "targets, against %s: req/s >= %.2f, CPU/req <= %.2f (keep-alive), new-connection rate >= %.2f; h3rum app p99 < %s\n",
		targetBase, minRateRatio, maxCPURatio, minRateRatio, fmtDur(maxAppP99))
	// The same figures in Go's benchmark format, which make bench collects
	// (benchtable) and make bench-compare compares (benchstat).
	fmt.Fprintln(stdout)
	for _, r := range results {
		fmt.Fprintln(stdout, r)
	}
	if len(missed) > 0 {
		return fmt.Errorf("targets missed: %s", strings.Join(missed, "; "))
	}
	return nil
}

// The probe's targets: against a bare server sending the same headers,
// h3rum's /probe serves nearly as many requests for nearly the same CPU,
// and its own handling stays far below what a network sample can resolve.
const (
	targetBase   = "headers"
	minRateRatio = 0.95
	maxCPURatio  = 1.05
	maxAppP99    = 100 * time.Microsecond
)

// missedTargets names each target h3rum's runs h miss in scenario sc
// against the base's runs b; none when either server was not run.
func missedTargets(sc string, h, b result) []string {
	if h.reqs == 0 || b.reqs == 0 {
		return nil
	}
	var out []string
	if r := h.rate() / b.rate(); r < minRateRatio {
		out = append(out, fmt.Sprintf("%s req/s %.3f× %s (want >= %.2f)", sc, r, targetBase, minRateRatio))
	}
	if r := float64(h.cpuPerReq()) / float64(b.cpuPerReq()); !strings.HasSuffix(sc, "-newconn") && r > maxCPURatio {
		out = append(out, fmt.Sprintf("%s CPU/req %.3f× %s (want <= %.2f)", sc, r, targetBase, maxCPURatio))
	}
	if p := pct(h.app, 99); p >= maxAppP99 {
		out = append(out, fmt.Sprintf("%s h3rum app p99 %s (want < %s)", sc, fmtDur(p), fmtDur(maxAppP99)))
	}
	return out
}

// metric is one value of a benchmark line, with its unit.
type metric struct {
	v    float64
	unit string
}

// benchLine is a result in Go's benchmark format: name, iterations, then
// value-unit pairs.
func benchLine(name string, iters int, ms ...metric) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\t%d", name, max(iters, 1))
	for _, m := range ms {
		fmt.Fprintf(&b, "\t%.6g %s", m.v, m.unit)
	}
	return b.String()
}

// total merges the runs of one server.
func total(rs []result) result {
	var t result
	for _, r := range rs {
		t.reqs += r.reqs
		t.errs += r.errs
		t.elapsed += r.elapsed
		t.cpu += r.cpu
		t.lat = append(t.lat, r.lat...)
		t.app = append(t.app, r.app...)
	}
	return t
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return -1
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	default:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
