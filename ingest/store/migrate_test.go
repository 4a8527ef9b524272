package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// TestMigrateInPlace upgrades a database of the release before the outcome
// column (migrations 1–3, with rows in its tables): the rows survive the
// move to the hour-sorted table with their outcome derived, old rows are
// marked unchecked (plus what a row shows by itself), the rollup is rebuilt
// from them keyed by design, and new rows reach it through the new view.
func TestMigrateInPlace(t *testing.T) {
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
	old, err := conn.PrepareBatch(ctx, "INSERT INTO samples (time, site, run_id, seq, phase, want, got, duration_ms, bot, param_parallel, param_warmup, beacon_version)")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for i, wg := range [][2]string{{"h2", "h2"}, {"h3", "h3"}, {"h3", "h2"}, {"h3", "h1"}, {"h2", "unknown"}} {
		bot := uint8(i / 4) // the last row is a bot's
		if err := old.Append(at, "s", uuid.UUID{byte(i)}, uint8(0), "parallel", wg[0], wg[1], float32(10), bot, uint8(5), uint8(3), "1.2.0"); err != nil {
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
	want := map[[2]string]string{{"h2", "h2"}: "h2", {"h3", "h3"}: "h3", {"h3", "h2"}: "wanted_h3_got_h2",
		{"h3", "h1"}: "wanted_h3_got_h2", {"h2", "unknown"}: "other"}
	rows, err := conn.Query(ctx, "SELECT toString(want), toString(got), toString(outcome), exclusions, beacon_major FROM samples")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var w, g, o string
		var x uint8
		var major uint16
		if err := rows.Scan(&w, &g, &o, &x, &major); err != nil {
			t.Fatal(err)
		}
		n++
		wantX := uint8(store.ExcludeUnchecked)
		if g == "unknown" {
			wantX |= uint8(store.ExcludeBot)
		}
		if o != want[[2]string{w, g}] || x != wantX || major != 1 {
			t.Errorf("samples: want=%s got=%s has outcome %q, exclusions %d, major %d; want %q, %d, 1", w, g, o, x, major, want[[2]string{w, g}], wantX)
		}
	}
	rows.Close()
	if n != 5 {
		t.Errorf("%d rows after the move, want 5", n)
	}
	if n := countRows(t, conn, "SELECT toUInt64(countMerge(samples)) FROM samples_rollup WHERE exclusions >= 128 AND param_parallel = 5 AND beacon_major = 1"); n != 5 {
		t.Errorf("the rebuilt rollup holds %d old samples, want 5", n)
	}
	// Applying again is a no-op; new rows go through the new view with
	// their outcome and no exclusions.
	if again, err := store.Migrate(ctx, conn); err != nil || len(again) != 0 {
		t.Errorf("second migrate applied %v, %v", again, err)
	}
	run := storetest.RunOf(t, beacontest.Run{Site: "s", Warmup: 2})
	var b store.Batch
	b.Add(&run)
	if err := b.Insert(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, conn, "SELECT toUInt64(countMerge(samples)) FROM samples_rollup WHERE outcome = 'h3' AND exclusions = 0"); n != 5 {
		t.Errorf("rollup holds %d clean h3 samples of the new run, want 5", n)
	}
	// The rollup is keyed by batch order (0022–0026): the run's parallel
	// samples sit under its order.
	q := fmt.Sprintf("SELECT toUInt64(countMerge(samples)) FROM samples_rollup WHERE param_order = '%s' AND exclusions = 0", run.Report.Params.Order)
	if n := countRows(t, conn, q); n != 10 {
		t.Errorf("rollup holds %d samples of the new run under its order %q, want 10", n, run.Report.Params.Order)
	}
}
