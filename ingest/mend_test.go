package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// TestUnresolvedHourMended leaves Complete an hour it cannot settle: a
// block of another writer lacks from every derived table (its views never
// ran) in the hour of a block this collector's insert left in doubt. The
// in-doubt block is completed where it can be, the hour is recorded to
// mend, kept across a restart, left alone while it is not yet old enough,
// and then rebuilt from samples: every derived table matches samples and
// holds each run once.
func TestUnresolvedHourMended(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	at := time.Now().UTC().Truncate(time.Hour).Add(-3*time.Hour + 10*time.Minute)
	runAt := func(site string, received time.Time) store.Run {
		r := testRun(t, site)
		r.Received = received
		r.Report.Samples[len(r.Report.Samples)-1].Error = "timeout"
		return r
	}

	// Another writer's block, stored in samples alone.
	var other store.Batch
	for range 3 {
		r := runAt("mend", at)
		other.Add(&r)
	}
	reattach := storetest.DetachViews(t, db, nil)
	if err := other.Insert(ctx, db); err != nil {
		t.Fatal(err)
	}
	reattach()

	// This collector's block, cut after two of the views.
	conn := &cutConn{Conn: db, t: t, got: []string{"runs", "run_counts"}}
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	p := startPipeline(t, &Pipeline{Conn: conn, Dir: dir, FlushInterval: 20 * time.Millisecond, Registerer: reg})
	conn.arm.Store(true)
	for range 4 {
		if err := p.Accept(ctx, runAt("mend", at.Add(time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the cut insert", func() bool { return conn.cuts.Load() == 1 })
	waitFor(t, "the cut insert's completion", func() bool { return counterValue(t, p.doubt.unresolved.WithLabelValues("samples_rollup")) > 0 })
	waitFor(t, "the runs in samples", func() bool { return countRows(t, db, "SELECT uniqExact(run_id) FROM samples") == 7 })
	hour := at.Truncate(time.Hour)
	if got := p.mender.due(hour.Add(time.Hour + store.RepairMinAge)); len(got) != 1 || !got[0].Equal(hour) {
		t.Fatalf("hours due to mend: %v, want %s", got, hour)
	}
	if got := p.mender.due(hour.Add(time.Hour + store.RepairMinAge - time.Second)); len(got) != 0 {
		t.Errorf("hours due before they are old enough: %v", got)
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	diffs, err := store.Check(ctx, db, at.Add(-time.Hour), at.Add(time.Hour))
	if err != nil || len(diffs) == 0 {
		t.Fatalf("before mending, Check: %v, %v", diffs, err)
	}

	// The next process finds the hour and mends it.
	reg = prometheus.NewRegistry()
	p = startPipeline(t, &Pipeline{Conn: db, Dir: dir, FlushInterval: 20 * time.Millisecond, Registerer: reg})
	if err := p.mendDue(ctx, hour.Add(time.Hour+store.RepairMinAge-time.Second)); err != nil {
		t.Fatal(err)
	}
	if after, _ := store.Check(ctx, db, at.Add(-time.Hour), at.Add(time.Hour)); len(after) != len(diffs) {
		t.Errorf("mended an hour too recent: %v, then %v", diffs, after)
	}
	if err := p.mendDue(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	derivedExact(t, db, 7)
	if got := p.mender.due(time.Now()); len(got) != 0 {
		t.Errorf("hours still to mend: %v", got)
	}
	if v := counterValue(t, p.mender.repaired.WithLabelValues("samples_rollup")); v != 1 {
		t.Errorf("samples_rollup mended %v times, want 1 hour", v)
	}
	if v := counterValue(t, p.mender.repaired.WithLabelValues("run_facts")); v != 3 {
		t.Errorf("run_facts mended with %v runs, want the other writer's 3 (Complete added the cut block's)", v)
	}
	if m, err := openMender(dir, nil); err != nil || len(m.hours) != 0 {
		t.Errorf("the record after mending: %v, %v", m.hours, err)
	}
}

// TestCollectorsInDoubtAtOnce: two collectors writing into the same hour
// and site both stop in the middle of an insert (each cut between other
// views), and only the first comes back. Its completion finds the other's
// hole beside its own, settles what it can and records the hour; mending
// it rebuilds the hour with both blocks. The second, back later, finds
// nothing left to do.
func TestCollectorsInDoubtAtOnce(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	at := time.Now().UTC().Truncate(time.Hour).Add(-2*time.Hour + 20*time.Minute)
	// crash runs a collector until its insert of n runs is cut after the
	// views of got, and returns its directory as the crash left it.
	stored := 0
	crash := func(got []string, n int) string {
		conn := &cutConn{Conn: db, t: t, got: got}
		dir, crashed := t.TempDir(), t.TempDir()
		conn.cut = func() {
			conn.dead.Store(true)
			copyDir(t, dir, crashed)
		}
		// Inserts wait until every run is spooled, so that the cut insert
		// is all n runs and the crash's copy holds them.
		ready := make(chan struct{})
		p := startPipeline(t, &Pipeline{Conn: conn, Dir: dir, FlushInterval: 20 * time.Millisecond, Ready: ready})
		for i := range n {
			r := testRun(t, "fleet")
			r.Received = at.Add(time.Duration(i) * time.Second)
			r.Report.Samples[len(r.Report.Samples)-1].Error = "timeout"
			if err := p.Accept(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		conn.arm.Store(true)
		close(ready)
		waitFor(t, "the cut insert", func() bool { return conn.cuts.Load() == 1 })
		if got := countRows(t, db, "SELECT uniqExact(run_id) FROM samples WHERE site = 'fleet'"); got != uint64(n+stored) {
			t.Fatalf("the cut insert stored %d runs in all, want %d", got, n+stored)
		}
		stored += n
		return crashed
	}
	first := crash([]string{"runs", "samples_rollup", "run_counts"}, 3)
	second := crash([]string{"run_facts", "run_fact_counts", "failure_counts", "itt_rollup"}, 4)

	p := startPipeline(t, &Pipeline{Conn: db, Dir: first, FlushInterval: 20 * time.Millisecond, Registerer: prometheus.NewRegistry()})
	waitFor(t, "the first collector's completion", func() bool { return len(p.mender.due(time.Now())) > 0 })
	if diffs, err := store.Check(ctx, db, at.Add(-time.Hour), at.Add(time.Hour)); err != nil || len(diffs) == 0 {
		t.Fatalf("after the first completion, Check: %v, %v", diffs, err)
	}
	if err := p.mendDue(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if left := p.mender.due(time.Now()); len(left) > 0 {
		t.Errorf("hours still to mend: %v", left)
	}
	// The tables that held the first block and lacked the second: the
	// others lacked the first alone, which its completion added.
	for _, table := range []string{"samples_rollup", "run_counts"} {
		if v := counterValue(t, p.mender.repaired.WithLabelValues(table)); v != 1 {
			t.Errorf("%s rebuilt %v times, want once", table, v)
		}
	}
	derivedExact(t, db, 7)

	p = startPipeline(t, &Pipeline{Conn: db, Dir: second, FlushInterval: 20 * time.Millisecond, Registerer: prometheus.NewRegistry()})
	if err := p.Shutdown(ctx); err != nil { // it completes, then replays its spool
		t.Fatal(err)
	}
	for _, table := range store.DerivedTables() {
		if c, u := counterValue(t, p.doubt.completedRuns.WithLabelValues(table)), counterValue(t, p.doubt.unresolved.WithLabelValues(table)); c != 0 || u != 0 {
			t.Errorf("the second collector's completion of %s: %v added, %v unresolved; want nothing to do", table, c, u)
		}
	}
	if due := p.mender.due(time.Now()); len(due) > 0 {
		t.Errorf("the second collector has hours to mend: %v", due)
	}
	derivedExact(t, db, 7)
}
