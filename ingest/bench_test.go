package ingest

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkIngest measures, in one run against the local ClickHouse,
// (1) raw clickhouse-go batch inserts of sample rows and (2) beacons posted
// to POST /beacon over loopback (1+1+5+5 = 12 samples each) until every
// row is in ClickHouse, and reports both rates and their ratio. Each
// iteration runs both workloads once; use -benchtime=1x.
func BenchmarkIngest(b *testing.B) {
	conn := testDB(b)
	const (
		rawBatches   = 10
		rawBatchRows = 20004 // whole runs of 12
		beacons      = 20000
		clients      = 64
	)
	var cols sampleColumns
	for range rawBatchRows / 12 {
		run := testRun(b, "raw")
		cols.add(&run)
	}
	body := wireReport(randomRunID(), "bench", 1, 5)
	idAt := bytes.Index(body, []byte(`"id":"`)) + len(`"id":"`)

	for b.Loop() {
		conn.Exec(context.Background(), "TRUNCATE TABLE samples")
		start := time.Now()
		for range rawBatches {
			if err := insertColumns(context.Background(), conn, &cols); err != nil {
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
		beaconRate := float64(beacons) / stored.Seconds()
		b.ReportMetric(rawRate, "raw_samples/s")
		b.ReportMetric(beaconRate, "beacons/s")
		b.ReportMetric(beaconRate*12, "beacon_samples/s")
		b.ReportMetric(beaconRate*12/rawRate, "ratio")
		b.ReportMetric(float64(beacons)/acked.Seconds(), "acked_beacons/s")
		b.ReportMetric(counterValue(b, p.m.fsyncs), "fsyncs")
	}
}
