package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

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
	want := []string{"runs/202406", "runs/202503", "samples/202406", "samples/202503", "samples_rollup/202406", "samples_rollup/202503"}
	if !reflect.DeepEqual(dropped, want) {
		t.Errorf("dropped %v, want %v", dropped, want)
	}
	if n := countRows(t, conn, "SELECT count() FROM samples"); n != 24 {
		t.Errorf("%d rows left, want the 24 of May and June", n)
	}
	if dropped, err := store.DropExpired(context.Background(), conn, retention, now); err != nil || len(dropped) != 0 {
		t.Errorf("second run dropped %v, %v; want nothing", dropped, err)
	}
}
