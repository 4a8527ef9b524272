package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// TestDerivedTablesAreTheViews holds store's list of derived tables to the
// schema: every view that fills a table from samples is on it.
func TestDerivedTablesAreTheViews(t *testing.T) {
	conn := storetest.DB(t)
	views := strings.Fields(rowsText(t, conn, "SELECT name FROM system.tables WHERE database = currentDatabase() AND engine = 'MaterializedView' ORDER BY name"))
	var want []string
	for _, name := range store.DerivedTables() {
		want = append(want, name+"_mv")
	}
	slices.Sort(want)
	if !slices.Equal(views, want) {
		t.Errorf("views %v, derived tables' views %v", views, want)
	}
}

// TestCompleteAfterCutBetweenViews stores blocks of runs as a server
// killed in the middle of an insert leaves them: samples holds the block,
// and only some of the derived tables got their part (a cut point, the
// views that ran before it). Complete then makes every derived table hold
// exactly what a database without faults holds for the same blocks. The
// cuts cover no view, every view (the reply lost) and 26 subsets between
// (each table, then, cut out of about 13 blocks and not of 13 others);
// the blocks share hours and sites, so that each is completed against
// tables holding the others.
func TestCompleteAfterCutBetweenViews(t *testing.T) {
	ctx := context.Background()
	faulty, clean := storetest.DB(t), storetest.DB(t)
	tables := store.DerivedTables()
	rng := rand.New(rand.NewPCG(44, 1))
	at := time.Date(2026, 12, 1, 9, 50, 0, 0, time.UTC)
	cuts := [][]string{nil, tables}
	for len(cuts) < 28 {
		var got []string
		for _, name := range tables {
			if rng.IntN(2) == 0 {
				got = append(got, name)
			}
		}
		cuts = append(cuts, got)
	}
	runs := 0
	for i, got := range cuts {
		block := derivedRuns(t, rng, fmt.Sprintf("cut%d", i%3), at.Add(time.Duration(i)*37*time.Second), 1+rng.IntN(4))
		runs += len(block)
		insertRuns(t, clean, block)
		insertCut(t, faulty, block, got)
		done, err := store.Complete(ctx, faulty, store.Cluster{}, store.BlockOf(block))
		if err != nil {
			t.Fatalf("cut %d: %v", i, err)
		}
		for _, c := range done {
			if c.Unresolved != 0 {
				t.Errorf("cut %d (views that ran: %v): %s left %d hours unresolved", i, got, c.Table, c.Unresolved)
			}
			if slices.Contains(got, c.Table) && c.Completed != 0 {
				t.Errorf("cut %d: %s held the block, yet %d were added", i, c.Table, c.Completed)
			}
		}
		if i%4 != 0 {
			continue
		}
		// Run again, as after a completion whose outcome is in doubt: nothing changes.
		again, err := store.Complete(ctx, faulty, store.Cluster{}, store.BlockOf(block))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range again {
			if c.Completed != 0 || c.Unresolved != 0 {
				t.Errorf("cut %d, completed again: %+v", i, c)
			}
		}
	}
	sameDerived(t, faulty, clean)
	if n := countRows(t, faulty, "SELECT count() FROM runs"); n != uint64(runs) {
		t.Errorf("runs holds %d rows for %d runs", n, runs)
	}
	diffs, err := store.Check(ctx, faulty, at.Add(-time.Hour), at.Add(3*time.Hour))
	if err != nil || len(diffs) != 0 {
		t.Errorf("Check after the completions: %v, %v", diffs, err)
	}
}

// TestCompleteLargeBlock completes a block whose hour names 7 000 runs,
// as a block of short runs can: the statements that bind its run ids are
// over half a megabyte, beyond the server's default max_query_size, and
// the runs the views missed are completed.
func TestCompleteLargeBlock(t *testing.T) {
	ctx := context.Background()
	faulty, clean := storetest.DB(t), storetest.DB(t)
	rng := rand.New(rand.NewPCG(44, 2))
	at := time.Date(2026, 12, 1, 9, 10, 0, 0, time.UTC)
	runs := derivedRuns(t, rng, "large", at, 4)
	insertRuns(t, clean, runs)
	insertCut(t, faulty, runs, nil)
	block := store.BlockOf(runs)
	for i := range 7000 - len(block) {
		var id [16]byte
		for j := range id {
			id[j] = byte(rng.Uint32())
		}
		block = append(block, store.BlockRun{ID: id, Site: "large", Received: at.Add(time.Duration(i) * 100 * time.Millisecond)})
	}
	done, err := store.Complete(ctx, faulty, store.Cluster{}, block)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range done {
		if c.Unresolved != 0 || c.Completed == 0 {
			t.Errorf("%s: %d completed, %d unresolved; want the block's hour completed", c.Table, c.Completed, c.Unresolved)
		}
	}
	sameDerived(t, faulty, clean)
}

// TestCheckFindsHoles is Check's side: a block cut before the views is
// reported, table by table, in its hour, until Complete fills it.
func TestCheckFindsHoles(t *testing.T) {
	ctx := context.Background()
	conn := storetest.DB(t)
	rng := rand.New(rand.NewPCG(44, 2))
	at := time.Date(2026, 12, 1, 14, 10, 0, 0, time.UTC)
	insertRuns(t, conn, derivedRuns(t, rng, "holes", at, 3))
	block := derivedRuns(t, rng, "holes", at.Add(time.Minute), 2)
	block[0].Report.Samples[len(block[0].Report.Samples)-1].Error = "timeout" // for failure_counts
	insertCut(t, conn, block, []string{"runs", "run_counts"})
	diffs, err := store.Check(ctx, conn, at.Add(-time.Hour), at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var short []string
	for _, d := range diffs {
		if !d.Hour.Equal(at.Truncate(time.Hour)) || d.Present >= d.Expected {
			t.Errorf("difference %+v: want the hour %s, short", d, at.Truncate(time.Hour))
		}
		short = append(short, d.Table)
	}
	slices.Sort(short)
	want := []string{"failure_counts", "failure_counts_5m", "handshake_requests", "handshake_rollup", "handshake_rollup_5m", "itt_rollup", "itt_rollup_5m",
		"run_counts_5m", "run_fact_counts", "run_fact_counts_5m", "run_facts", "runs_by_id", "samples_rollup", "samples_rollup_5m"}
	if !slices.Equal(short, want) {
		t.Errorf("tables short: %v, want %v", short, want)
	}
	// As on a cluster: the holes are reported, nothing is inserted.
	looked, err := store.Complete(ctx, conn, store.Cluster{Name: "cluster"}, store.BlockOf(block))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range looked {
		if c.Completed != 0 || (c.Unresolved == 0) != slices.Contains([]string{"runs", "run_counts"}, c.Table) {
			t.Errorf("on a cluster, %+v", c)
		}
	}
	if again, _ := store.Check(ctx, conn, at.Add(-time.Hour), at.Add(time.Hour)); len(again) != len(diffs) {
		t.Errorf("on a cluster, Complete changed the differences: %v, then %v", diffs, again)
	}
	if _, err := store.Complete(ctx, conn, store.Cluster{}, store.BlockOf(block)); err != nil {
		t.Fatal(err)
	}
	if diffs, err := store.Check(ctx, conn, at.Add(-time.Hour), at.Add(time.Hour)); err != nil || len(diffs) != 0 {
		t.Errorf("after Complete: %v, %v", diffs, err)
	}
}

// derivedRuns returns n browser runs of site received from at on, each
// with a failed request now and then, so that every derived table gets
// rows.
func derivedRuns(t *testing.T, rng *rand.Rand, site string, at time.Time, n int) []*store.Run {
	t.Helper()
	var out []*store.Run
	for i := range n {
		run := storetest.RunOf(t, beacontest.Run{Site: site, Warmup: 2, Alt: i % (int(beacon.MaxAltSvc) + 1)})
		run.Received = at.Add(time.Duration(i) * time.Second)
		run.Geo.Continent, run.Geo.Country, run.Browser = "EU", "DE", "Chrome"
		if rng.IntN(3) == 0 {
			run.Geo.Continent, run.Geo.Country = "NA", "US"
		}
		for k := range run.Report.Samples {
			s := &run.Report.Samples[k]
			s.Duration = float64(20 + rng.IntN(200))
			s.Reused = s.Phase != beacon.PhaseWarmup // a warm-up opens its connection (handshake_rollup, handshake_requests)
		}
		if rng.IntN(4) == 0 {
			run.Report.Samples[len(run.Report.Samples)-1].Error = "timeout"
		}
		out = append(out, &run)
	}
	return out
}

// insertCut inserts runs into samples as a server that stopped after the
// views of the tables in got leaves them.
func insertCut(t *testing.T, conn driver.Conn, runs []*store.Run, got []string) {
	t.Helper()
	reattach := storetest.DetachViews(t, conn, got)
	defer reattach()
	insertRuns(t, conn, runs)
}

// sameDerived compares every derived table of a and b, row by row after
// merging each key's rows.
func sameDerived(t *testing.T, a, b driver.Conn) {
	t.Helper()
	for _, q := range derivedContents {
		if x, y := rowsText(t, a, q), rowsText(t, b, q); x != y || x == "" {
			t.Errorf("%s\nafter faults:\n%s\nwithout:\n%s", q, x, y)
		}
	}
}

// derivedContents reads each derived table whole, one text line a key.
var derivedContents = []string{
	"SELECT toString(tuple(site, toString(run_id), time, h3n, h3ok, durations, errors)) AS k FROM runs ORDER BY k",
	"SELECT toString(tuple(site, toString(run_id), time, collector, h3_wanted, first_known, first_h3, later_h3, alt_svc)) AS k FROM run_facts ORDER BY k",
	"SELECT toString(tuple(hour, site, continent, outcome, want, failed, exclusions, countMerge(samples), uniqHLL12Merge(runs), arrayMap(x -> round(x, 3), quantilesTDigestMerge(0.5, 0.75, 0.9, 0.95, 0.99)(duration)))) AS k FROM samples_rollup GROUP BY hour, site, continent, outcome, want, failed, exclusions ORDER BY k",
	"SELECT toString(tuple(hour, site, continent, exclusions, sum(runs), sum(runs_h2), sum(runs_h3), sum(runs_failed_h2))) AS k FROM run_counts GROUP BY hour, site, continent, exclusions ORDER BY k",
	"SELECT toString(tuple(hour, site, continent, sum(runs), sum(runs_h3_wanted), sum(errors_idle))) AS k FROM run_fact_counts GROUP BY hour, site, continent ORDER BY k",
	"SELECT toString(tuple(hour, site, continent, want, error, sum(failures))) AS k FROM failure_counts GROUP BY hour, site, continent, want, error ORDER BY k",
	"SELECT toString(tuple(hour, site, continent, want, failed, countMerge(samples), arrayMap(x -> round(x, 3), quantilesTDigestMerge(0.5, 0.75, 0.9, 0.95, 0.99)(duration)))) AS k FROM itt_rollup GROUP BY hour, site, continent, want, failed ORDER BY k",
}
