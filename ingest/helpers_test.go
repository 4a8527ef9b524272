package ingest

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/spool"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// wireReport returns a realistic report for site (1+1 warm-ups, two
// parallel batches of 5) with a fresh run id.
func wireReport(site string) []byte {
	return beacontest.Report(beacontest.Run{ID: randomRunID(), Site: site})
}

func randomRunID() string {
	var id [16]byte
	for i := range id {
		id[i] = byte(rand.IntN(256))
	}
	return hex.EncodeToString(id[:])
}

// testRun is a realistic enriched run for site.
func testRun(t testing.TB, site string) store.Run { return storetest.Run(t, site) }

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// testDB returns a connection to a fresh, migrated database on a ClickHouse
// server shared by the package's tests.
func testDB(t testing.TB) driver.Conn { return storetest.DB(t) }

// deadConn is a connection to a port nothing listens on: ClickHouse "down".
func deadConn(t testing.TB) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{"127.0.0.1:1"}, DialTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func startPipeline(t testing.TB, p *Pipeline) *Pipeline {
	t.Helper()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		p.Shutdown(ctx)
	})
	return p
}

func countRows(t testing.TB, conn driver.Conn, query string, args ...any) uint64 {
	t.Helper()
	var n uint64
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// waitFor polls cond until it holds or a generous deadline passes; it does
// not measure speed, only that the state is reached.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func counterValue(t testing.TB, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue() + m.GetGauge().GetValue()
}

// replayCopy starts a pipeline on a copy of the spool in dir as it is now,
// as a process started after a crash finds it, and waits until it has
// replayed every record.
func replayCopy(t testing.TB, conn driver.Conn, dir string) *Pipeline {
	t.Helper()
	replay := t.TempDir()
	segs, err := listSegments(dir)
	if err != nil || len(segs) == 0 {
		t.Fatalf("spool segments %v, %v: want the inserted records still on disk", segs, err)
	}
	for _, id := range segs {
		b, err := os.ReadFile(filepath.Join(dir, segmentName(id)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(replay, segmentName(id)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := startPipeline(t, &Pipeline{Conn: conn, Dir: replay, FlushInterval: 20 * time.Millisecond})
	waitFor(t, "the replay", func() bool { return p.Stats().SpoolBytes == 0 })
	return p
}

// listSegments returns the ids of the spool segments in dir, oldest first.
func listSegments(dir string) ([]uint64, error) { return spool.ListSegments(dir) }

// segmentName is the file name of spool segment id.
func segmentName(id uint64) string { return spool.SegmentName(id) }
