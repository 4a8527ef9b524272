package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkProbeUnderIngest measures what ingest costs the probe when one
// collector process does both (`serve`, --role all) on this machine's
// CPUs, beside its own ClickHouse: /probe latency over HTTP/2 on a quiet
// server, then the same while a load generator posts 5+5+2-sample reports
// to its /beacon from 16 clients as fast as it takes them. The load
// generator and the probe client are processes of their own, as in
// BenchmarkProbeUnderIngestSplit, so that the two figures differ only in
// where the roles run. It reports p50/p99 of both, their ratio (target <
// 1.2× at p99 with the roles apart), the beacons/s reached, and the
// collector's peak RSS (target < 256 MiB).
// Run: go test ./collector/cmd/h3rum -run '^$' -bench ProbeUnderIngest -benchtime 1x
func BenchmarkProbeUnderIngest(b *testing.B) {
	for b.Loop() {
		benchProbeUnderIngest(b)
	}
}

func benchProbeUnderIngest(b *testing.B) {
	srv := startServeProcessOn(b, "", b.TempDir(), "--flush-interval", "200ms")
	probe := prober(b, srv.origin)
	probe(200) // warm the connection
	quiet := probe(3000)
	loaded := probeUnderLoad(b, "", srv.origin, probe)
	reportProbe(b, quiet, loaded)
	b.ReportMetric(float64(peakRSS(srv.cmd.Process.Pid))/(1<<20), "peak-RSS-MiB")
}

// probeUnderLoad starts the load generator process on cpus ("" for any)
// posting reports to ingest, times 3000 probes while it runs, and reports
// the beacons/s it reached.
func probeUnderLoad(b *testing.B, cpus, ingest string, probe func(n int) []time.Duration) []time.Duration {
	bin, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	const loadSeconds = 15
	gen := exec.Command(bin)
	if cpus != "" {
		gen = exec.Command("taskset", "-c", cpus, bin)
	}
	gen.Env = append(os.Environ(), loadgenEnv+"="+ingest, loadgenSecondsEnv+"="+strconv.Itoa(loadSeconds))
	var genOut strings.Builder
	gen.Stdout, gen.Stderr = &genOut, &genOut
	start := time.Now()
	if err := gen.Start(); err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Second) // let ingest reach full speed
	loaded := probe(3000)
	if err := gen.Wait(); err != nil {
		b.Fatalf("load generator: %v: %s", err, genOut.String())
	}
	elapsed := time.Since(start)
	accepted, err := strconv.Atoi(strings.TrimSpace(genOut.String()))
	if err != nil || accepted == 0 {
		b.Fatalf("load generator accepted %q beacons", genOut.String())
	}
	b.ReportMetric(float64(accepted)/elapsed.Seconds(), "beacons/s")
	return loaded
}

// reportProbe reports the quiet and loaded latencies' p50 and p99 and the
// p99 ratio.
func reportProbe(b *testing.B, quiet, loaded []time.Duration) {
	b.ReportMetric(durationPct(quiet, 0.5), "quiet-p50-ms")
	b.ReportMetric(durationPct(quiet, 0.99), "quiet-p99-ms")
	b.ReportMetric(durationPct(loaded, 0.5), "ingest-p50-ms")
	b.ReportMetric(durationPct(loaded, 0.99), "ingest-p99-ms")
	b.ReportMetric(durationPct(loaded, 0.99)/durationPct(quiet, 0.99), "p99-ratio")
}

// prober returns a func that times n sequential /probe requests to origin
// over one HTTP/2 connection and returns the latencies, sorted.
func prober(b *testing.B, origin string) func(n int) []time.Duration {
	client := insecureClient()
	return func(n int) []time.Duration {
		lat := make([]time.Duration, 0, n)
		for range n {
			start := time.Now()
			resp, err := client.Get(origin + "/probe")
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat
	}
}

// pct is the p-quantile of sorted latencies, in ms.
func durationPct(l []time.Duration, p float64) float64 {
	return float64(l[int(p*float64(len(l)-1))].Microseconds()) / 1000
}

// peakRSS is a process's peak resident set size, in bytes (VmHWM).
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkProbeUnderIngestSplit is BenchmarkProbeUnderIngest with the
// roles apart, as on an edge host and an ingest host: `serve --role probe`
// on CPU 0 with the probe client (this process), `serve --role ingest`,
// its ClickHouse and a load generator process on CPU 1. The p99 ratio is
// the probe's isolation from ingest when they do not share a machine's
// CPU (target < 1.2×); the single-process figure is what --role all
// trades for simplicity.
// Run: go test ./collector/cmd/h3rum -run '^$' -bench ProbeUnderIngestSplit -benchtime 1x
func BenchmarkProbeUnderIngestSplit(b *testing.B) {
	if runtime.NumCPU() < 2 {
		b.Skip("needs two CPUs to put the roles apart")
	}
	for b.Loop() {
		benchProbeUnderIngestSplit(b)
	}
}

func benchProbeUnderIngestSplit(b *testing.B) {
	ingest := startServeProcessOn(b, "1", b.TempDir(), "--role", "ingest", "--flush-interval", "200ms")
	probeSrv := startServeProcessOn(b, "0", b.TempDir(), "--role", "probe", "--ingest-url", ingest.origin)
	restore, err := pinProcess(0)
	if err != nil {
		b.Fatal(err)
	}
	defer restore()

	probe := prober(b, probeSrv.origin)
	probe(200)
	quiet := probe(3000)
	loaded := probeUnderLoad(b, "1", ingest.origin, probe)
	reportProbe(b, quiet, loaded)
}

// The load generator's process: this test binary, told by the
// environment to post reports to an ingest origin for a number of
// seconds and print how many were accepted (TestMain).
const (
	loadgenEnv        = "H3RUM_BENCH_LOADGEN"
	loadgenSecondsEnv = "H3RUM_BENCH_LOADGEN_SECONDS"
)

func loadgen(origin string, seconds int) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds)*time.Second)
	defer cancel()
	var accepted atomic.Int64
	var wg sync.WaitGroup
	c := insecureClient()
	for range 16 {
		wg.Go(func() {
			for i := 0; i < 50000 && ctx.Err() == nil; i++ {
				if code, err := postBeacon(ctx, c, origin, mustReport("bench")); err == nil && code == http.StatusNoContent {
					accepted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	fmt.Println(accepted.Load())
	return 0
}

// pinProcess moves every thread of this process to the given CPUs (threads
// started later inherit it) and returns a func that gives them back the
// CPUs they had.
func pinProcess(cpus ...int) (restore func(), err error) {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		return nil, err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("pinning thread %d: %w", tid, err)
		}
	}
	return func() {
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				unix.SchedSetaffinity(tid, &before)
			}
		}
	}, nil
}
