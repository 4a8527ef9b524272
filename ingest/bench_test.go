package ingest

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h3rum/h3rum/ingest/store"
)

// BenchmarkIngest measures, in one run against the local ClickHouse,
// (1) raw clickhouse-go batch inserts of sample rows and (2) beacons posted
// to POST /beacon over loopback (1+1+5+5 = 12 samples each) until every
// row is in ClickHouse, and reports both rates and their ratio. Each
// iteration runs both workloads once, one after the other, and the medians
// over iterations are reported, because a single raw measurement on a
// shared machine swings by 2×: use -benchtime=3x or more.
func BenchmarkIngest(b *testing.B) {
	conn := testDB(b)
	const (
		rawBatches   = 10
		rawBatchRows = 20004 // whole runs of 12
		beacons      = 20000
		clients      = 64
	)
	var raw store.Batch
	for range rawBatchRows / 12 {
		run := testRun(b, "raw")
		raw.Add(&run)
	}
	body := wireReport("bench")
	idAt := bytes.Index(body, []byte(`"id":"`)) + len(`"id":"`)

	var raws, rates, ackedRates, fsyncs []float64
	for b.Loop() {
		conn.Exec(context.Background(), "TRUNCATE TABLE samples")
		start := time.Now()
		for range rawBatches {
			if err := raw.Insert(context.Background(), conn); err != nil {
				b.Fatal(err)
			}
		}
		rawRate := float64(rawBatches*rawBatchRows) / time.Since(start).Seconds()

		conn.Exec(context.Background(), "TRUNCATE TABLE samples")
		p := &Pipeline{Conn: conn, Dir: b.TempDir(), FlushInterval: 200 * time.Millisecond}
		if err := p.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(&Handler{Sink: p})
		tr := &http.Transport{MaxIdleConnsPerHost: clients}
		client := &http.Client{Transport: tr}
		var next, failed atomic.Int64
		var wg sync.WaitGroup
		start = time.Now()
		for range clients {
			wg.Go(func() {
				buf := bytes.Clone(body)
				for next.Add(1) <= beacons {
					copy(buf[idAt:], randomRunID())
					resp, err := client.Post(srv.URL+"/beacon", "text/plain", bytes.NewReader(buf))
					if err != nil || resp.StatusCode != http.StatusNoContent {
						failed.Add(1)
					}
					if resp != nil {
						resp.Body.Close()
					}
				}
			})
		}
		wg.Wait()
		acked := time.Since(start)
		want := uint64((beacons - failed.Load()) * 12)
		for countRows(b, conn, "SELECT count() FROM samples") < want {
			time.Sleep(10 * time.Millisecond)
		}
		stored := time.Since(start)
		srv.Close()
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		p.Shutdown(ctx)
		cancel()
		if failed.Load() > 0 {
			b.Errorf("%d of %d beacons failed", failed.Load(), beacons)
		}
		raws = append(raws, rawRate)
		rates = append(rates, float64(beacons)/stored.Seconds())
		ackedRates = append(ackedRates, float64(beacons)/acked.Seconds())
		fsyncs = append(fsyncs, counterValue(b, p.m.fsyncs))
	}
	rawMedian, rate := median(raws), median(rates)
	b.ReportMetric(rawMedian, "raw_samples/s")
	b.ReportMetric(rate, "beacons/s")
	b.ReportMetric(rate*12, "beacon_samples/s")
	b.ReportMetric(rate*12/rawMedian, "ratio")
	b.ReportMetric(median(ackedRates), "acked_beacons/s")
	b.ReportMetric(median(fsyncs), "fsyncs")
	b.Logf("raw samples/s %.0f, beacons/s %.0f (per iteration)", raws, rates)
}

// median of xs (sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
