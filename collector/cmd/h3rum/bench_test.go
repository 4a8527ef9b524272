package main

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkProbeUnderIngest measures what ingest costs the probe, in one
// run of the whole collector (in-process serve, its own ClickHouse):
// /probe latency over HTTP/2 on a quiet server, then the same while 16
// clients post 5+5+2-sample reports to /beacon as fast as it takes them.
// It reports p50/p99 of both, their ratio (target < 1.2× at p99), the
// beacons/s reached, and the process's peak RSS (target < 256 MiB; the
// load generator lives in the same process, so this is an upper bound).
// Run: go test ./collector/cmd/h3rum -run '^$' -bench ProbeUnderIngest -benchtime 1x
func BenchmarkProbeUnderIngest(b *testing.B) {
	for b.Loop() {
		benchProbeUnderIngest(b)
	}
}

func benchProbeUnderIngest(b *testing.B) {
	ts := startServe(b)
	probeClient := insecureClient()
	probe := func(n int) []time.Duration {
		lat := make([]time.Duration, 0, n)
		for i := 0; i < n; i++ {
			start := time.Now()
			resp, err := probeClient.Get(ts.h3 + "/probe")
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat
	}
	pct := func(l []time.Duration, p float64) float64 {
		return float64(l[int(p*float64(len(l)-1))].Microseconds()) / 1000
	}
	probe(200) // warm the connection
	quiet := probe(3000)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var accepted atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	c := insecureClient()
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000 && ctx.Err() == nil; i++ {
				if code, err := postBeacon(ctx, c, ts.h3, mustReport("bench")); err == nil && code == http.StatusNoContent {
					accepted.Add(1)
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // let ingest reach full speed
	loaded := probe(3000)
	cancel()
	wg.Wait()
	elapsed := time.Since(start)

	b.ReportMetric(pct(quiet, 0.5), "quiet-p50-ms")
	b.ReportMetric(pct(quiet, 0.99), "quiet-p99-ms")
	b.ReportMetric(pct(loaded, 0.5), "ingest-p50-ms")
	b.ReportMetric(pct(loaded, 0.99), "ingest-p99-ms")
	b.ReportMetric(pct(loaded, 0.99)/pct(quiet, 0.99), "p99-ratio")
	b.ReportMetric(float64(accepted.Load())/elapsed.Seconds(), "beacons/s")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MiB")
}

// peakRSS is the process's peak resident set size, in bytes (VmHWM).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
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
