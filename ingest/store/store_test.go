package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// emptyDB is a connection to a new database without any table, closed
// when the test ends: where a test makes the schema itself.
func emptyDB(t testing.TB) driver.Conn {
	t.Helper()
	conn, err := store.Open(context.Background(), storetest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func countRows(t testing.TB, conn driver.Conn, query string) uint64 {
	t.Helper()
	var n uint64
	if err := conn.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestInsertIdempotent(t *testing.T) {
	conn := storetest.DB(t)
	var batch store.Batch
	for range 10 {
		run := storetest.Run(t, "idem")
		batch.Add(&run)
	}
	for i := range 2 {
		if err := batch.Insert(context.Background(), conn); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if n := countRows(t, conn, "SELECT count() FROM samples"); n != 240 {
		t.Fatalf("%d rows stored, want two copies of 120", n)
	}
	if n := countRows(t, conn, "SELECT count() FROM samples FINAL"); n != 120 {
		t.Errorf("SELECT count() FROM samples FINAL = %d, want 120 (one copy)", n)
	}
}

func TestRetentionDropsOldPartitions(t *testing.T) {
	conn := storetest.DB(t)
	now := time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)
	var batch store.Batch
	for _, at := range []time.Time{now, now.AddDate(0, -1, -10), now.AddDate(0, -3, 0), now.AddDate(-1, 0, 0)} {
		run := storetest.Run(t, "ret")
		run.Received = at
		run.Report.Samples[0].Reused = false // a new connection, for handshake_rollup and handshake_requests
		batch.Add(&run)
	}
	if err := batch.Insert(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	const retention = 60 * 24 * time.Hour
	dropped, err := store.DropExpired(context.Background(), conn, retention, now)
	if err != nil {
		t.Fatal(err)
	}
	// Cutoff 2025-04-16: March 2025 and June 2024 are wholly older; April is not.
	want := []string{"handshake_requests/202406", "handshake_requests/202503", "handshake_rollup/202406", "handshake_rollup/202503", "handshake_rollup_5m/202406", "handshake_rollup_5m/202503", "itt_rollup/202406", "itt_rollup/202503", "itt_rollup_5m/202406", "itt_rollup_5m/202503", "run_counts/202406", "run_counts/202503", "run_counts_5m/202406", "run_counts_5m/202503", "run_fact_counts/202406", "run_fact_counts/202503", "run_fact_counts_5m/202406", "run_fact_counts_5m/202503", "run_facts/202406", "run_facts/202503", "runs/202406", "runs/202503", "runs_by_id/202406", "runs_by_id/202503", "samples/202406", "samples/202503", "samples_rollup/202406", "samples_rollup/202503", "samples_rollup_5m/202406", "samples_rollup_5m/202503"}
	if !reflect.DeepEqual(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	if n := countRows(t, conn, "SELECT count() FROM samples"); n != 24 {
		t.Errorf("%d rows left, want the 24 of May and June", n)
	}
	if n := countRows(t, conn, "SELECT count() FROM run_facts"); n != 2 {
		t.Errorf("run_facts holds %d runs, want the 2 of May and June", n)
	}
	if n := countRows(t, conn, "SELECT sum(runs) FROM run_counts"); n != 2 {
		t.Errorf("run_counts counts %d runs, want the 2 of May and June", n)
	}
	if dropped, err := store.DropExpired(context.Background(), conn, retention, now); err != nil || len(dropped) != 0 {
		t.Errorf("second run dropped %v, %v; want nothing", dropped, err)
	}
}

// TestAgentRunsStayApart: an agent's run is stored with its handshake
// samples, as the agent's, and neither reaches the browser rollup or the
// runs table, which the browser reports read.
func TestAgentRunsStayApart(t *testing.T) {
	conn := storetest.DB(t)
	browser := storetest.Run(t, "apart")
	agent := storetest.Run(t, "apart")
	agent.Source = store.SourceAgent
	agent.Handshakes = []beacon.Sample{
		{Seq: 0, Phase: beacon.PhaseHandshake, Want: beacon.ProtoH3, Got: beacon.ProtoH3, Duration: 20, Connect: 10,
			Server: beacon.ServerTiming{Present: true, Proto: beacon.ProtoH3}},
		{Seq: 1, Phase: beacon.PhaseHandshake, Want: beacon.ProtoH3, Got: beacon.ProtoH3, Duration: 10, Connect: 10,
			Server: beacon.ServerTiming{Present: true, Proto: beacon.ProtoH3, Resumed: true, EarlyData: true}},
	}
	var batch store.Batch
	batch.Add(&browser)
	batch.Add(&agent)
	if err := batch.Insert(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	perRun := uint64(len(browser.Report.Samples))
	for q, want := range map[string]uint64{
		"SELECT count() FROM samples WHERE source = 'browser'":                                   perRun,
		"SELECT count() FROM samples WHERE source = 'agent' AND phase != 'handshake'":            perRun,
		"SELECT count() FROM samples WHERE source = 'agent' AND phase = 'handshake'":             2,
		"SELECT count() FROM samples WHERE phase = 'handshake' AND seq IN (64, 65) AND cold = 0": 2,
		"SELECT count() FROM samples WHERE phase = 'handshake' AND srv_early = 1":                1,
		"SELECT countMerge(samples) FROM samples_rollup":                                         uint64(2 * browser.Report.Params.Parallel),
		"SELECT count() FROM samples_rollup WHERE source = 'agent'":                              0,
		"SELECT count() FROM runs":                          1,
		"SELECT count() FROM runs WHERE source = 'browser'": 1,
	} {
		if n := countRows(t, conn, q); n != want {
			t.Errorf("%s = %d, want %d", q, n, want)
		}
	}
}

// BenchmarkStored measures the exactly-once check of a replayed batch of
// 1667 runs (20 004 rows), half of them stored and the other half spread
// over an hour that holds 40 such batches of the site's runs.
func BenchmarkStored(b *testing.B) {
	conn := storetest.DB(b)
	ctx := context.Background()
	const perBatch, batches = 1667, 40
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	run := func(i int) *store.Run {
		r := storetest.Run(b, "stored")
		r.Received = at.Add(time.Duration(i) * time.Hour / (batches * perBatch))
		return &r
	}
	var replay []*store.Run
	for k := range batches {
		var batch store.Batch
		for i := range perBatch {
			r := run(k*perBatch + i)
			batch.Add(r)
			if k == batches/2 && i%2 == 0 {
				replay = append(replay, r)
			}
		}
		if err := batch.Insert(ctx, conn); err != nil {
			b.Fatal(err)
		}
	}
	stored := len(replay)
	for i := range perBatch - stored {
		replay = append(replay, run(i*batches))
	}
	for b.Loop() {
		found, err := store.Stored(ctx, conn, replay)
		if err != nil || len(found) != stored {
			b.Fatalf("Stored found %d of %d, err %v", len(found), stored, err)
		}
	}
}

func TestOpenRejectsBadDSN(t *testing.T) {
	for _, dsn := range []string{"http://127.0.0.1:8123/db", "::not a dsn"} {
		if c, err := store.Open(context.Background(), dsn); err == nil {
			c.Close()
			t.Errorf("store.Open(%q) succeeded", dsn)
		}
	}
}

func TestOpenCreatesMissingDatabase(t *testing.T) {
	l := storetest.Private(t)
	dsn := l.DSNFor("fresh_db")
	conn, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open with a missing database: %v", err)
	}
	defer conn.Close()
	var db string
	if err := conn.QueryRow(context.Background(), "SELECT currentDatabase()").Scan(&db); err != nil || db != "fresh_db" {
		t.Fatalf("currentDatabase() = %q, %v; want fresh_db", db, err)
	}
}
