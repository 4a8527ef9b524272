package store_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/google/uuid"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// TestRepairRebuildsHours makes every kind of difference Check reports,
// on 18.16 and 26.x: runs missing from each derived table (blocks cut
// between the views, in two hours so that every table is short), and an
// hour whose hourly tables hold a block twice (a replay fed to the views
// again, folded in samples). Repair makes Check find nothing and every
// derived table equal to a database where nothing was cut; repairing the
// same hours again changes nothing.
func TestRepairRebuildsHours(t *testing.T) {
	for _, engine := range []storetest.Engine{storetest.Managed, storetest.Chdb} {
		t.Run(string(engine), func(t *testing.T) {
			ctx := context.Background()
			faulty, clean := storetest.DBOn(t, engine), storetest.DBOn(t, engine)
			rng := rand.New(rand.NewPCG(44, 3))
			at := time.Date(2026, 12, 1, 9, 10, 0, 0, time.UTC)
			hourly := []string{"samples_rollup", "run_counts", "run_fact_counts", "failure_counts", "itt_rollup", "handshake_rollup", "handshake_requests",
				"samples_rollup_5m", "run_counts_5m", "run_fact_counts_5m", "failure_counts_5m", "itt_rollup_5m", "handshake_rollup_5m"}
			both := func(runs []*store.Run) {
				insertRuns(t, faulty, runs)
				insertRuns(t, clean, runs)
			}
			cut := func(runs []*store.Run, got []string) {
				runs[0].Report.Samples[len(runs[0].Report.Samples)-1].Error = "timeout" // for failure_counts
				insertRuns(t, clean, runs)
				insertCut(t, faulty, runs, got)
			}
			// 09:00: most tables short of a block; 10:00: the others.
			both(derivedRuns(t, rng, "repair", at, 3))
			cut(derivedRuns(t, rng, "repair", at.Add(time.Minute), 3), []string{"runs", "run_counts", "run_counts_5m"})
			cut(derivedRuns(t, rng, "other", at.Add(2*time.Minute), 2), nil)
			both(derivedRuns(t, rng, "repair", at.Add(time.Hour), 2))
			cut(derivedRuns(t, rng, "repair", at.Add(time.Hour+time.Minute), 3),
				[]string{"run_facts", "samples_rollup", "run_fact_counts", "failure_counts", "itt_rollup", "handshake_rollup", "handshake_requests",
					"samples_rollup_5m", "run_fact_counts_5m", "failure_counts_5m", "itt_rollup_5m", "handshake_rollup_5m"})
			// 11:00: a block the hourly tables got twice.
			twice := derivedRuns(t, rng, "repair", at.Add(2*time.Hour), 4)
			twice[0].Report.Samples[len(twice[0].Report.Samples)-1].Error = "timeout"
			both(twice)
			insertCut(t, faulty, twice, hourly)
			for _, table := range []string{"samples", "runs", "run_facts"} {
				storetest.Fold(t, faulty, table)
			}

			from, to := at.Add(-time.Hour), at.Add(4*time.Hour)
			diffs, err := store.Check(ctx, faulty, from, to)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, d := range diffs {
				seen[d.Table] = true
			}
			if len(seen) != len(store.DerivedTables()) {
				t.Fatalf("the holes reach %d tables, want all: %+v", len(seen), diffs)
			}
			extra := 0
			for _, d := range diffs {
				if d.Hour.Equal(at.Truncate(time.Hour).Add(2*time.Hour)) && d.Present > d.Expected {
					extra++
				}
			}
			if extra != len(hourly) {
				t.Errorf("%d hourly tables hold the 11:00 block twice, want %d: %+v", extra, len(hourly), diffs)
			}

			repaired, err := store.Repair(ctx, faulty, store.Cluster{}, diffs, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(repaired) != len(diffs) {
				t.Errorf("repaired %d of %d differences: %+v", len(repaired), len(diffs), repaired)
			}
			for _, r := range repaired {
				perRun := !slices.Contains(hourly, r.Table)
				if r.TooRecent || r.Rebuilt == perRun || (perRun && r.Added == 0) {
					t.Errorf("repair %+v", r)
				}
			}
			if after, err := store.Check(ctx, faulty, from, to); err != nil || len(after) != 0 {
				t.Errorf("Check after Repair: %+v, %v", after, err)
			}
			sameDerived(t, faulty, clean)

			// Repairing the same hours again: the per-run tables lack
			// nothing, the hourly ones are rebuilt to the same rows.
			again, err := store.Repair(ctx, faulty, store.Cluster{}, diffs, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range again {
				if r.Added != 0 {
					t.Errorf("repaired again: %+v", r)
				}
			}
			sameDerived(t, faulty, clean)
			if after, err := store.Check(ctx, faulty, from, to); err != nil || len(after) != 0 {
				t.Errorf("Check after a second Repair: %+v, %v", after, err)
			}
		})
	}
}

// TestRepairLeavesRecentHoursAndClusters: an hour that ended less than
// RepairMinAge ago may still receive inserts, and a cluster's tables are
// per shard; Repair changes neither.
func TestRepairLeavesRecentHoursAndClusters(t *testing.T) {
	ctx := context.Background()
	conn := storetest.DB(t)
	now := time.Now().UTC()
	runs := derivedRuns(t, rand.New(rand.NewPCG(44, 4)), "recent", now.Add(-time.Minute), 2)
	insertCut(t, conn, runs, nil)
	diffs, err := store.Check(ctx, conn, now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil || len(diffs) == 0 {
		t.Fatalf("Check: %+v, %v", diffs, err)
	}
	if _, err := store.Repair(ctx, conn, store.Cluster{Name: "cluster"}, diffs, now); !errors.Is(err, store.ErrRepairOnCluster) {
		t.Errorf("Repair on a cluster: %v", err)
	}
	repaired, err := store.Repair(ctx, conn, store.Cluster{}, diffs, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range repaired {
		if !r.TooRecent || r.Rebuilt || r.Added != 0 {
			t.Errorf("recent hour repaired: %+v", r)
		}
	}
	if after, _ := store.Check(ctx, conn, now.Add(-time.Hour), now.Add(time.Hour)); len(after) != len(diffs) {
		t.Errorf("differences before %d, after %d", len(diffs), len(after))
	}
}

// TestRepairKeepsRunsSamplesLacks: a run a per-run table holds and samples
// does not is reported, not deleted.
func TestRepairKeepsRunsSamplesLacks(t *testing.T) {
	ctx := context.Background()
	conn := storetest.DB(t)
	at := time.Date(2026, 12, 2, 8, 5, 0, 0, time.UTC)
	runs := derivedRuns(t, rand.New(rand.NewPCG(44, 5)), "gone", at, 2)
	insertRuns(t, conn, runs)
	// The second run's samples are gone; the runs table keeps its row.
	gone := runs[1].Report.RunID
	if err := conn.Exec(ctx, "ALTER TABLE samples DELETE WHERE toString(run_id) = @id", clickhouse.Named("id", uuid.UUID(gone).String())); err != nil {
		t.Fatal(err)
	}
	waitMutations(t, conn, "samples")
	diffs, err := store.Check(ctx, conn, at.Add(-time.Hour), at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Repair(ctx, conn, store.Cluster{}, diffs, time.Now()); err != nil {
		t.Fatal(err)
	}
	after, err := store.Check(ctx, conn, at.Add(-time.Hour), at.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, d := range after {
		if d.Present != d.Expected+1 {
			t.Errorf("after Repair: %+v", d)
		}
		left = append(left, d.Table)
	}
	if !slices.Equal(left, []string{"runs", "runs_by_id", "run_facts"}) {
		t.Errorf("still differing after Repair: %v, want the per-run tables", left)
	}
}

func waitMutations(t *testing.T, conn driver.Conn, table string) {
	t.Helper()
	for range 200 {
		if countRows(t, conn, "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND table = '"+table+"' AND is_done = 0") == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("mutations of %s not done", table)
}
