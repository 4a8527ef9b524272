package ingest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
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
	srv := httptest.NewServer(&Handler{Sink: p, RateLimit: Unlimited})
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

// TestFaultClickHouseKilledUnderLoad kills the managed ClickHouse ten
// times (SIGKILL; its supervisor starts it again) while runs are accepted
// at a bounded rate and inserted every 30 ms: a kill often lands between
// samples and the views. Every acknowledged run must be stored, and every
// derived table must count each stored run once.
func TestFaultClickHouseKilledUnderLoad(t *testing.T) {
	l := storetest.Private(t)
	l.Supervise()
	conn := storetest.Open(t, l.DSN())
	reg := prometheus.NewRegistry()
	p := startPipeline(t, &Pipeline{Conn: conn, Dir: t.TempDir(), FlushInterval: 30 * time.Millisecond,
		InsertTimeout: 5 * time.Second, Registerer: reg})

	const workers, maxPerWorker = 3, 3000
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range maxPerWorker {
				select {
				case <-stop:
					return
				default:
				}
				run := testRun(t, fmt.Sprintf("kill%d", w))
				if i%5 == 0 {
					run.Report.Samples[len(run.Report.Samples)-1].Error = "timeout"
				}
				if err := p.Accept(context.Background(), run); err == nil {
					mu.Lock()
					acked = append(acked, uuid.UUID(run.Report.RunID).String())
					mu.Unlock()
				}
				time.Sleep(3 * time.Millisecond)
			}
		})
	}
	rng := rand.New(rand.NewPCG(44, 4))
	for range 10 {
		time.Sleep(time.Duration(300+rng.IntN(900)) * time.Millisecond)
		waitFor(t, "ClickHouse to be up again", l.Up)
		if pid := l.PID(); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	close(stop)
	wg.Wait()
	waitFor(t, "ClickHouse to be up again", l.Up)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown did not drain: %v", err)
	}
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	stored := countRows(t, conn, "SELECT uniqExact(run_id) FROM samples")
	missing := countRows(t, conn, "SELECT count() FROM (SELECT arrayJoin(@ids) AS id) WHERE id NOT IN (SELECT toString(run_id) FROM samples)",
		clickhouse.Named("ids", acked))
	if missing != 0 || stored < uint64(n) {
		t.Errorf("acknowledged %d runs; samples holds %d runs, %d of the acknowledged missing", n, stored, missing)
	}
	derivedExact(t, conn, int(stored))
	reportCountsEveryRun(t, conn)
	var completed, unresolved float64
	for _, table := range store.DerivedTables() {
		completed += counterValue(t, p.doubt.completedRuns.WithLabelValues(table))
		unresolved += counterValue(t, p.doubt.unresolved.WithLabelValues(table))
	}
	t.Logf("acknowledged %d runs, stored %d; %d restarts; insert errors %v; derived tables completed %v times, %v unresolved",
		n, stored, l.Restarts(), counterValue(t, p.m.insertErrors), completed, unresolved)
}

// reportCountsEveryRun checks the report itself over the hours the runs
// arrived in: from the rollup (the runs and count tables, the rollup) and
// from raw rows it counts the runs and samples its headline selects in
// samples, every design pooled.
func reportCountsEveryRun(t *testing.T, conn driver.Conn) {
	t.Helper()
	var runs, samples uint64
	if err := conn.QueryRow(context.Background(), `SELECT uniqExact(run_id), count() FROM samples
		WHERE phase = 'parallel' AND error = '' AND exclusions = 0 AND bot = 0 AND source = 'browser'`).Scan(&runs, &samples); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, src := range []model.Source{model.SourceRollup, model.SourceRaw} {
		o := model.Options{Since: now.Truncate(time.Hour).Add(-time.Hour), Until: now.Truncate(time.Hour).Add(2 * time.Hour),
			By: "none", Source: src, Design: model.Design{All: true}, Replicates: -1, Now: now}
		rep, err := queries.Run(context.Background(), conn, o)
		if err != nil {
			t.Fatalf("report from %s: %v", src, err)
		}
		var gotRuns, gotSamples int
		for _, g := range rep.Groups {
			gotRuns, gotSamples = gotRuns+g.Runs, gotSamples+g.Samples
		}
		if uint64(gotRuns) != runs || uint64(gotSamples) != samples {
			t.Errorf("the report from %s counts %d runs and %d samples; samples holds %d and %d of its headline", src, gotRuns, gotSamples, runs, samples)
		}
	}
}
