package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/beacon"
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
	conn := emptyDB(t)
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	applyReleased(t, conn, "migrations", upTo(3), nil)
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

// TestMigrateRunsFailures upgrades a database whose runs table predates
// its failed-request columns (the release at 0042, with a run stored):
// the stored run gets its failed requests' origins and codes, and runs
// stored after through the rebuilt view get theirs.
func TestMigrateRunsFailures(t *testing.T) {
	ctx := context.Background()
	conn := emptyDB(t)
	// The run is stored by today's Batch, which writes every column of
	// today's samples table: the later migrations that only add samples
	// columns come first (Migrate then skips them).
	applyReleased(t, conn, "migrations", withTodaysColumns(t, upTo(42)), nil)
	// A run with two failed requests, one to each origin.
	failing := func() store.Run {
		run := storetest.Run(t, "s")
		var h2, h3 bool
		for i := range run.Report.Samples {
			s := &run.Report.Samples[i]
			if s.Phase != beacon.PhaseParallel || (s.Want == beacon.ProtoH2 && h2) || (s.Want == beacon.ProtoH3 && h3) {
				continue
			}
			h2, h3 = h2 || s.Want == beacon.ProtoH2, h3 || s.Want == beacon.ProtoH3
			s.Error, s.Got = "timeout-"+string(s.Want), beacon.ProtoUnknown
		}
		return run
	}
	insert := func(run store.Run) {
		var b store.Batch
		b.Add(&run)
		if err := b.Insert(ctx, conn); err != nil {
			t.Fatal(err)
		}
	}
	insert(failing())
	if _, err := store.Migrate(ctx, conn); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	insert(failing())
	insert(storetest.Run(t, "s")) // none failed
	failures := func() string {
		rows, err := conn.Query(ctx, "SELECT toString(arraySort(failed_wants)), toString(arraySort(failed_errors)) FROM runs ORDER BY length(failed_errors) DESC")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var w, e string
			if err := rows.Scan(&w, &e); err != nil {
				t.Fatal(err)
			}
			out = append(out, w+" "+e)
		}
		return fmt.Sprint(out)
	}
	want := "[['h2','h3'] ['timeout-h2','timeout-h3'] ['h2','h3'] ['timeout-h2','timeout-h3'] [] []]"
	// The stored run's values are computed on read until the mutation
	// writes them, then read: the same either way. Mutations run in the
	// background; under the whole suite's load they wait their turn.
	deadline := time.Now().Add(90 * time.Second)
	for countRows(t, conn, "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = 'runs' AND is_done = 0") > 0 && time.Now().Before(deadline) {
		if got := failures(); got != want {
			t.Fatalf("during the backfill, runs hold failed requests %s, want %s", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := failures(); got != want {
		t.Errorf("runs hold failed requests %s, want %s", got, want)
	}
	if n := countRows(t, conn, "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = 'runs' AND is_done = 0"); n != 0 {
		t.Errorf("%d mutations of runs still running", n)
	}
}

func TestMigrateAppliesOnceThenNoop(t *testing.T) {
	ctx := context.Background()
	conn := emptyDB(t)

	all, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	applied, err := store.Migrate(ctx, conn)
	if err != nil {
		t.Fatalf("first migrate: %v", err)
	}
	if len(applied) != len(all) || len(all) == 0 {
		t.Fatalf("first migrate applied %v, want all %d migrations", applied, len(all))
	}
	again, err := store.Migrate(ctx, conn)
	if err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if len(again) != 0 {
		t.Fatalf("second migrate applied %v, want none", again)
	}
	var tables []string
	rows, err := conn.Query(ctx, "SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	for _, want := range []string{"samples", "samples_rollup", "samples_rollup_mv", "schema_migrations"} {
		if !slices.Contains(tables, want) {
			t.Errorf("table %s missing after migrate; have %v", want, tables)
		}
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if int(n) != len(all) {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(all))
	}
}

// TestMigrateResumesAfterAddColumn upgrades the release at 0048 whose
// migration 0049 (an ADD COLUMN) ran but was not recorded, as when the
// process stops between the two: the step runs again with its column
// already there, and the upgrade goes on to the end. (Where the column is
// missing the step adds it: TestUpgradeFromEveryRelease runs 0049 so.)
func TestMigrateResumesAfterAddColumn(t *testing.T) {
	ctx := context.Background()
	conn := emptyDB(t)
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	at := slices.IndexFunc(ms, func(m store.Migration) bool { return m.Version == 49 })
	if at < 0 || !strings.Contains(ms[at].SQL, "ADD COLUMN run_flags") {
		t.Fatal("migration 0049 is not the run_flags ADD COLUMN")
	}
	applyReleased(t, conn, "migrations", upTo(48), nil)
	for _, st := range ms[at].Statements() { // 0049, not recorded
		if err := conn.Exec(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	applied, err := store.Migrate(ctx, conn)
	if err != nil {
		t.Fatalf("upgrading after the interrupted 0049: %v", err)
	}
	if len(applied) != len(ms)-at || applied[0] != ms[at].Name {
		t.Errorf("applied %v, want %s and every later step", applied, ms[at].Name)
	}
	sameSchema(t, "resumed", schemaOf(t, conn), schemaOf(t, storetest.DB(t)))
}
