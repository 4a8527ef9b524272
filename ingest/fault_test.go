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

	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// faultDowntime is how long TestFaultClickHouseStop keeps ClickHouse down:
// long enough for several failed insert attempts and a spool that outgrows
// the in-memory queue.
const faultDowntime = 30 * time.Second

// TestFaultClickHouseStop posts beacons from a bounded load generator
// while the ClickHouse child is stopped and started again: every
// acknowledged sample must end up in ClickHouse exactly once.
func TestFaultClickHouseStop(t *testing.T) {
	l := storetest.Private(t)
	conn := storetest.Open(t, l.DSN())
	p := &Pipeline{Conn: conn, Dir: t.TempDir(), FlushInterval: 100 * time.Millisecond, QueueRuns: 256,
		InsertTimeout: 5 * time.Second}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&Handler{Sink: p})
	t.Cleanup(srv.Close)

	const workers, maxPerWorker = 4, 8000
	var acked, refused atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			client := &http.Client{Timeout: 30 * time.Second}
			for range maxPerWorker {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Post(srv.URL+"/beacon", "text/plain", bytes.NewReader(wireReport("fault")))
				if err != nil {
					refused.Add(1)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusNoContent {
					acked.Add(1)
				} else {
					refused.Add(1)
				}
				time.Sleep(2 * time.Millisecond) // a steady load, not a flood
			}
		})
	}
	time.Sleep(time.Second)
	stopCtx, cancelStop := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelStop()
	if err := l.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	beforeDown := acked.Load()
	time.Sleep(faultDowntime)
	duringDown := acked.Load() - beforeDown
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown did not drain: %v", err)
	}
	if duringDown == 0 {
		t.Error("no report was acknowledged while ClickHouse was down")
	}
	want := uint64(acked.Load() * 12)
	final := countRows(t, conn, "SELECT count() FROM samples FINAL")
	distinct := countRows(t, conn, "SELECT uniqExact(run_id, seq) FROM samples")
	if final != want || distinct != want {
		t.Errorf("acknowledged %d samples; ClickHouse has %d (FINAL), %d distinct", want, final, distinct)
	}
	t.Logf("acknowledged %d runs (%d while ClickHouse was down %v), refused %d; insert errors %v",
		acked.Load(), duringDown, faultDowntime, refused.Load(), counterValue(t, p.m.insertErrors))
}
