package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// TestMigrateOutcomeInPlace upgrades a database of the release before the
// outcome column (migrations 1–3, with rows in it): the migrations derive
// the stored rows' outcome and the rollup's in place, and reports grouped
// by outcome see the old rows.
func TestMigrateOutcomeInPlace(t *testing.T) {
	ctx := context.Background()
	conn, err := store.Open(ctx, storetest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, applied_at DateTime('UTC')) ENGINE = MergeTree ORDER BY version"); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:3] {
		if err := conn.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		b, err := conn.PrepareBatch(ctx, "INSERT INTO schema_migrations (version, name, applied_at)")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Append(uint32(m.Version), m.Name, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		if err := b.Send(); err != nil {
			t.Fatal(err)
		}
	}
	// Rows as the earlier release wrote them: no outcome column.
	old, err := conn.PrepareBatch(ctx, "INSERT INTO samples (time, site, run_id, seq, phase, want, got, duration_ms)")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for i, wg := range [][2]string{{"h2", "h2"}, {"h3", "h3"}, {"h3", "h2"}, {"h3", "h1"}, {"h2", "unknown"}} {
		if err := old.Append(at, "s", uuid.UUID{byte(i)}, uint8(0), "parallel", wg[0], wg[1], float32(10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Send(); err != nil {
		t.Fatal(err)
	}
	applied, err := store.Migrate(ctx, conn)
	if err != nil {
		t.Fatalf("migrating the old database: %v", err)
	}
	if len(applied) != len(ms)-3 {
		t.Errorf("applied %v, want the %d newer migrations", applied, len(ms)-3)
	}
	for _, table := range []string{"samples", "samples_hourly"} {
		rows, err := conn.Query(ctx, "SELECT toString(want), toString(got), toString(outcome) FROM "+table+" ORDER BY want, got")
		if err != nil {
			t.Fatal(err)
		}
		got := map[[2]string]string{}
		for rows.Next() {
			var w, g, o string
			if err := rows.Scan(&w, &g, &o); err != nil {
				t.Fatal(err)
			}
			got[[2]string{w, g}] = o
		}
		rows.Close()
		want := map[[2]string]string{{"h2", "h2"}: "h2", {"h3", "h3"}: "h3", {"h3", "h2"}: "wanted_h3_got_h2",
			{"h3", "h1"}: "wanted_h3_got_h2", {"h2", "unknown"}: "other"}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: want=%s got=%s has outcome %q, want %q", table, k[0], k[1], got[k], w)
			}
		}
	}
	// New rows go through the recreated view with their outcome.
	run := storetest.Run(t, "s")
	var b store.Batch
	b.Add(&run)
	if err := b.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, conn, "SELECT countMerge(samples) FROM samples_hourly WHERE outcome = 'h3'"); n != 6 {
		t.Errorf("rollup holds %d h3 samples, want the old 1 and the new run's 5", n)
	}
}
