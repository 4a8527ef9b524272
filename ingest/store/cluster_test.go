package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/nel"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// columnsOf returns table's columns as "name type default" lines.
func columnsOf(t *testing.T, conn driver.Conn, table string) []string {
	t.Helper()
	rows, err := conn.Query(context.Background(),
		"SELECT name, type, default_kind, default_expression FROM system.columns WHERE database = currentDatabase() AND table = ? ORDER BY name", table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n, ty, k, e string
		if err := rows.Scan(&n, &ty, &k, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", n, ty, k, e))
	}
	return out
}

func engineOf(t *testing.T, conn driver.Conn, table string) (engine, sortingKey string) {
	t.Helper()
	if err := conn.QueryRow(context.Background(), "SELECT engine, sorting_key FROM system.tables WHERE database = currentDatabase() AND name = ?", table).Scan(&engine, &sortingKey); err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return engine, sortingKey
}

// TestCluster migrates a real 2 × 2 cluster, checks that its tables are
// the single-server schema spread over the cluster, and writes through the
// Distributed table: every server counts the rows, replicas agree, the
// rollup follows, and a replayed batch is left out as on one server.
func TestCluster(t *testing.T) {
	c := storetest.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conns := make([]driver.Conn, len(c.Servers))
	for i := range c.Servers {
		conn, err := store.Open(ctx, c.DSN(t, i, "h3rum"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns[i] = conn
	}
	var ddlWait string
	if err := conns[0].QueryRow(ctx, "SELECT value FROM system.settings WHERE name = 'distributed_ddl_task_timeout'").Scan(&ddlWait); err != nil || ddlWait != "900" {
		t.Errorf("distributed_ddl_task_timeout %q, %v; want the cluster's 900", ddlWait, err)
	}
	if _, err := store.MigrateCluster(ctx, conns[0], store.Cluster{Name: "not a name", Dial: c.Dial(t, "h3rum")}); err == nil {
		t.Error("a cluster name with spaces was accepted")
	}
	cluster := store.Cluster{Name: storetest.ClusterName, Dial: c.Dial(t, "h3rum")}
	applied, err := store.MigrateCluster(ctx, conns[0], cluster)
	ms, _ := store.ClusterMigrations()
	if err != nil || len(applied) != len(ms) {
		c.LogTails(t)
		t.Fatalf("migrating the cluster applied %v, %v; want all %d", applied, err, len(ms))
	}
	// MigrateCluster returns once every replica has settled.
	for i, conn := range conns {
		if err := store.CaughtUp(ctx, conn); err != nil {
			t.Errorf("server %d right after MigrateCluster: %v", i+1, err)
		}
	}
	// Any server knows the cluster's migrations.
	if again, err := store.MigrateCluster(ctx, conns[3], cluster); err != nil || len(again) != 0 {
		t.Fatalf("migrating again from another shard applied %v, %v", again, err)
	}

	// The schema is the single server's, spread over the cluster.
	single := storetest.DB(t)
	for _, tc := range []struct{ local, dist string }{{"samples_local", "samples"}, {"samples_rollup_local", "samples_rollup"}, {"runs_local", "runs"}, {"nel_reports_local", "nel_reports"}} {
		want := columnsOf(t, single, tc.dist)
		for i, conn := range conns {
			for _, table := range []string{tc.local, tc.dist} {
				if got := columnsOf(t, conn, table); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("server %d %s columns differ from the single server's %s:\n got %v\nwant %v", i+1, table, tc.dist, got, want)
				}
			}
		}
		_, wantKey := engineOf(t, single, tc.dist)
		if engine, key := engineOf(t, conns[2], tc.local); key != wantKey || engine[:10] != "Replicated" {
			t.Errorf("%s: engine %s, key %q; want Replicated…, %q", tc.local, engine, key, wantKey)
		}
		if engine, _ := engineOf(t, conns[1], tc.dist); engine != "Distributed" {
			t.Errorf("%s: engine %s, want Distributed", tc.dist, engine)
		}
	}

	// Writes through the Distributed table from one server.
	var b store.Batch
	var runs []*store.Run
	for range 40 {
		r := storetest.Run(t, "cluster")
		runs = append(runs, &r)
		b.Add(&r)
	}
	if err := b.Insert(ctx, conns[0]); err != nil {
		t.Fatal(err)
	}
	count := func(conn driver.Conn, q string) uint64 {
		t.Helper()
		var n uint64
		if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rows := uint64(b.Rows())
	// Both shards hold runs, and the replicas of a shard the same rows. The
	// insert returned once one replica of each shard stored its rows, either
	// one; replication to the other is asynchronous: wait for it.
	var shard [2]uint64
	for s := range 2 {
		for _, table := range []string{"samples_local", "samples_rollup_local"} {
			q := "SELECT count() FROM " + table
			deadline := time.Now().Add(90 * time.Second)
			a, b := count(conns[2*s], q), count(conns[2*s+1], q)
			for a != b && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
				a, b = count(conns[2*s], q), count(conns[2*s+1], q)
			}
			if a != b {
				t.Errorf("shard %d %s: replicas hold %d and %d rows", s+1, table, a, b)
			}
			if table == "samples_local" {
				shard[s] = max(a, b)
			}
		}
	}
	if shard[0] == 0 || shard[1] == 0 || shard[0]+shard[1] != rows {
		t.Errorf("shards hold %v rows, want both some and %d in all", shard, rows)
	}
	for i, conn := range conns {
		if n := count(conn, "SELECT count() FROM samples"); n != rows {
			t.Errorf("server %d counts %d rows through samples, want %d", i+1, n, rows)
		}
		if n := count(conn, "SELECT toUInt64(countMerge(samples)) FROM samples_rollup"); n != 40*10 {
			t.Errorf("server %d: rollup holds %d parallel samples, want 400", i+1, n)
		}
	}
	// The runs table holds each run once with its parallel samples, as on
	// one server: through the view, and from its backfill (0029) once the
	// runs are as runs stored before it (without samples). Mutations work
	// in the background: wait for them.
	runsOf := func(conn driver.Conn) string {
		t.Helper()
		var n, samples, failed uint64
		if err := conn.QueryRow(ctx, "SELECT count(), sum(length(durations)), sum(arrayCount(e -> e != '', errors)) FROM runs").Scan(&n, &samples, &failed); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d runs, %d samples, %d failed", n, samples, failed)
	}
	// Mutations and the replicas' fetches run in the background; a Distributed
	// read may ask a replica that is still behind, and each read picks a
	// replica afresh: one read that agrees says nothing of the next. So a
	// step is done when 10 reads in a row agree (with two replicas a lagging
	// one escapes them with odds of 1 in 1024). Under the whole suite's load
	// one step took over 30 s to reach every replica.
	waitRuns := func(step, want string) {
		t.Helper()
		for i, conn := range conns {
			deadline := time.Now().Add(90 * time.Second)
			got, agree := "", 0
			for agree < 10 && time.Now().Before(deadline) {
				if got = runsOf(conn); got == want {
					agree++
					continue
				}
				agree = 0
				time.Sleep(200 * time.Millisecond)
			}
			if agree < 10 {
				t.Errorf("server %d, %s: runs holds %s, want %s", i+1, step, got, want)
			}
		}
	}
	if err := b.Insert(ctx, single); err != nil { // the batch is unchanged by an insert
		t.Fatal(err)
	}
	wantRuns := runsOf(single)
	waitRuns("through the view", wantRuns)
	fill := strings.NewReplacer("/*CLUSTER*/", storetest.ClusterName, "/*DATABASE*/", "h3rum")
	if err := conns[1].Exec(ctx, fill.Replace("ALTER TABLE /*DATABASE*/.runs_local ON CLUSTER /*CLUSTER*/ UPDATE durations = arrayFilter(x -> 0, durations), "+
		"outcomes = arrayFilter(x -> 0, outcomes), wants = arrayFilter(x -> 0, wants), errors = arrayFilter(x -> 0, errors) WHERE 1")); err != nil {
		t.Fatal(err)
	}
	waitRuns("without samples", "40 runs, 0 samples, 0 failed")
	i := slices.IndexFunc(ms, func(m store.Migration) bool { return m.Name == "0029_runs_backfill.sql" })
	if i < 0 {
		t.Fatal("no runs backfill among the cluster's migrations")
	}
	backfill := ms[i]
	for _, st := range backfill.Statements() {
		if err := conns[2].Exec(ctx, fill.Replace(st)); err != nil {
			t.Fatalf("backfill: %v", err)
		}
	}
	waitRuns("backfilled", wantRuns)

	// A replay finds every run stored, from any server.
	stored, err := store.Stored(ctx, conns[3], runs)
	if err != nil || len(stored) != len(runs) {
		t.Errorf("Stored found %d of %d runs, err %v", len(stored), len(runs), err)
	}

	// Retention drops an expired month on every server. Runs of a year
	// ago land on both shards.
	var old store.Batch
	for range 10 {
		r := storetest.Run(t, "cluster")
		r.Received = time.Now().UTC().AddDate(-1, 0, 0)
		old.Add(&r)
	}
	if err := old.Insert(ctx, conns[1]); err != nil {
		t.Fatal(err)
	}
	for s := range 2 { // replicated, the views' tables too, so that any replica lists the old month
		for _, table := range []string{"samples_local", "samples_rollup_local", "runs_local", "run_facts_local", "run_counts_local", "run_fact_counts_local", "failure_counts_local", "itt_rollup_local", "handshake_rollup_local", "handshake_requests_local"} {
			q := "SELECT count() FROM " + table
			deadline := time.Now().Add(30 * time.Second)
			for count(conns[2*s], q) != count(conns[2*s+1], q) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	if _, err := store.DropExpiredOnCluster(ctx, conns[0], "bad name", 30*24*time.Hour, time.Now()); err == nil {
		t.Error("retention accepted a bad cluster name")
	}
	dropped, err := store.DropExpiredOnCluster(ctx, conns[0], storetest.ClusterName, 30*24*time.Hour, time.Now())
	if err != nil || len(dropped) < 2 {
		t.Fatalf("retention on the cluster dropped %v, %v; want samples_local and samples_rollup_local partitions", dropped, err)
	}
	for i, conn := range conns { // mutations run in the background
		deadline := time.Now().Add(60 * time.Second)
		for count(conn, "SELECT count() FROM samples_local WHERE time < now() - 86400*30") != 0 && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		for _, table := range []string{"samples_local", "run_facts_local", "run_counts_local", "run_fact_counts_local", "failure_counts_local"} {
			col := "time"
			if table == "run_counts_local" || table == "run_fact_counts_local" || table == "failure_counts_local" {
				col = "hour"
			}
			q := "SELECT count() FROM " + table + " WHERE " + col + " < now() - 86400*30"
			for count(conn, q) != 0 && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
			}
			if n := count(conn, q); n != 0 {
				t.Errorf("server %d keeps %d expired rows in %s", i+1, n, table)
			}
		}
		if n := count(conn, "SELECT count() FROM samples"); n != rows {
			t.Errorf("server %d counts %d rows after retention, want the %d recent ones", i+1, n, rows)
		}
	}
	clusterCompleteInDoubt(t, c, conns)
	clusterRepair(t, c, conns)
}

// clusterCompleteInDoubt cuts an insert through the Distributed table
// between the views on shard 1 (its views of every table but runs
// detached on both replicas) while shard 2's second replica is down, as
// a replica that dies mid-insert leaves it: Complete then completes shard
// 1's tables on a replica that has caught up, and every derived table
// matches samples through the Distributed tables, once the replica is
// back too.
func clusterCompleteInDoubt(t *testing.T, c *storetest.Cluster, conns []driver.Conn) {
	t.Helper()
	ctx := context.Background()
	dial := c.Dial(t, "h3rum")
	at := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Hour).Add(10 * time.Minute)
	var runs []*store.Run
	var b store.Batch
	for i := range 30 {
		r := storetest.Run(t, "cut")
		r.Received = at.Add(time.Duration(i) * time.Second)
		r.Report.Samples[0].Reused = false // a new connection, for handshake_rollup and handshake_requests
		if i%4 == 0 {
			r.Report.Samples[len(r.Report.Samples)-1].Error = "timeout"
		}
		runs = append(runs, &r)
		b.Add(&r)
	}
	c.Servers[3].Kill()
	reattach := []func(){storetest.DetachViews(t, conns[0], []string{"runs"}), storetest.DetachViews(t, conns[1], []string{"runs"})}
	if err := b.Insert(ctx, conns[2]); err != nil {
		t.Fatal(err)
	}
	for _, f := range reattach {
		f()
	}
	cluster := store.Cluster{Name: storetest.ClusterName, Dial: dial}
	done, err := store.Complete(ctx, conns[2], cluster, store.BlockOf(runs))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range done {
		if d.Unresolved != 0 || (d.Completed == 0) != (d.Table == "runs") {
			t.Errorf("completing the cut on the cluster: %+v", d)
		}
	}
	if err := c.Servers[3].Start(ctx); err != nil {
		t.Fatal(err)
	}
	clusterExact(t, conns, at, "after Complete")
	again, err := store.Complete(ctx, conns[0], cluster, store.BlockOf(runs))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range again {
		if d.Completed != 0 || d.Unresolved != 0 {
			t.Errorf("completing again on the cluster: %+v", d)
		}
	}
}

// clusterExact fails t unless every server reads every derived table equal
// to samples over the hour of at, through the Distributed tables.
func clusterExact(t *testing.T, conns []driver.Conn, at time.Time, step string) {
	t.Helper()
	from, to := at.Truncate(time.Hour), at.Truncate(time.Hour).Add(time.Hour)
	for i, conn := range conns {
		// A Distributed read picks a replica afresh: ten that agree in a row.
		deadline, agree := time.Now().Add(90*time.Second), 0
		var diffs []store.Difference
		var err error
		for agree < 10 && time.Now().Before(deadline) {
			diffs, err = store.Check(context.Background(), conn, from, to)
			if err == nil && len(diffs) == 0 {
				agree++
				continue
			}
			agree = 0
			time.Sleep(200 * time.Millisecond)
		}
		if agree < 10 {
			t.Errorf("server %d: derived tables differ from samples %s: %v, %v", i+1, step, diffs, err)
		}
	}
}

// clusterRepair damages an old hour on both shards — shard 1's run_counts
// and runs emptied of the hour, shard 2's samples_rollup given its rows
// twice more, in one block that no deduplication drops — and repairs it
// with Repair, shard by shard: every server then reads every derived table
// equal to samples. The same damage is repaired
// again: the rebuilt rows, equal to the first repair's, must not be
// dropped as a block the replicated table has seen.
func clusterRepair(t *testing.T, c *storetest.Cluster, conns []driver.Conn) {
	t.Helper()
	ctx := context.Background()
	at := time.Now().UTC().Add(-96 * time.Hour).Truncate(time.Hour).Add(20 * time.Minute)
	var b store.Batch
	for i := range 30 {
		r := storetest.Run(t, "repair")
		r.Received = at.Add(time.Duration(i) * time.Second)
		r.Report.Samples[0].Reused = false
		if i%3 == 0 {
			r.Report.Samples[len(r.Report.Samples)-1].Error = "timeout"
		}
		b.Add(&r)
	}
	if err := b.Insert(ctx, conns[2]); err != nil {
		t.Fatal(err)
	}
	clusterExact(t, conns, at, "after the insert")
	hour := []any{clickhouse.Named("from", at.Truncate(time.Hour).Unix()), clickhouse.Named("to", at.Truncate(time.Hour).Add(time.Hour).Unix())}
	cluster := store.Cluster{Name: storetest.ClusterName, Dial: c.Dial(t, "h3rum")}
	for round := range 2 {
		// Each replica holds the hour before it is damaged: the copy
		// below reads the server's own table.
		for i, conn := range conns {
			deadline := time.Now().Add(60 * time.Second)
			for store.CaughtUp(ctx, conn) != nil {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: server %d has not caught up after a minute", round+1, i+1)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		for _, st := range []struct {
			conn driver.Conn
			sql  string
		}{
			{conns[0], "ALTER TABLE run_counts_local DELETE WHERE hour >= toDateTime(@from, 'UTC') AND hour < toDateTime(@to, 'UTC')"},
			{conns[1], "ALTER TABLE runs_local DELETE WHERE time >= toDateTime(@from, 'UTC') AND time < toDateTime(@to, 'UTC')"},
			{conns[3], "INSERT INTO samples_rollup_local SELECT * FROM (SELECT * FROM samples_rollup_local WHERE hour >= toDateTime(@from, 'UTC') AND hour < toDateTime(@to, 'UTC') " +
				"UNION ALL SELECT * FROM samples_rollup_local WHERE hour >= toDateTime(@from, 'UTC') AND hour < toDateTime(@to, 'UTC'))"},
		} {
			if err := st.conn.Exec(ctx, st.sql, hour...); err != nil {
				t.Fatalf("round %d: %s: %v", round+1, st.sql, err)
			}
		}
		// The damage reaches both replicas of each shard before the
		// repair looks: a deletion is a mutation, applied in the
		// background on each replica.
		for i, conn := range conns {
			deadline := time.Now().Add(60 * time.Second)
			for countRows(t, conn, "SELECT count() FROM system.mutations WHERE database = currentDatabase() AND is_done = 0") != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("server %d: the damage's deletions are not applied after a minute", i+1)
				}
				time.Sleep(100 * time.Millisecond)
			}
			for store.CaughtUp(ctx, conn) != nil { // SYNC REPLICA alone may return before the fetch
				if time.Now().After(deadline) {
					t.Fatalf("server %d: the damage has not reached every replica after a minute", i+1)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		diffs, err := store.Check(ctx, conns[1], at.Truncate(time.Hour), at.Truncate(time.Hour).Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, d := range diffs {
			got[d.Table] = true
		}
		for _, table := range []string{"runs", "run_counts", "samples_rollup"} {
			if !got[table] {
				t.Errorf("round %d: Check does not show the damage to %s: %+v", round+1, table, diffs)
			}
		}
		repaired, err := store.Repair(ctx, conns[1], cluster, diffs, time.Now())
		if err != nil {
			t.Fatalf("round %d: Repair on the cluster: %v", round+1, err)
		}
		for _, r := range repaired {
			if (r.Table == "runs") != (r.Added > 0) || (r.Table != "runs") != r.Rebuilt || r.TooRecent {
				t.Errorf("round %d: repaired %+v", round+1, r)
			}
		}
		clusterExact(t, conns, at, fmt.Sprintf("after repair %d", round+1))
	}
	if _, err := store.Repair(ctx, conns[1], store.Cluster{Name: storetest.ClusterName}, nil, time.Now()); !errors.Is(err, store.ErrRepairOnCluster) {
		t.Errorf("Repair on a cluster without Dial: %v", err)
	}
}

// TestClusterNELStored stores NEL batches through the second replica of
// shard 1 while the first fetches nothing of nel_reports: read through the
// first's Distributed table, which prefers its own copy, the batches of
// shard 1 look missing, and a retry would store them twice.
// Cluster.NELStored reads each shard on a replica that has caught up and
// finds every batch, and none that was not stored.
func TestClusterNELStored(t *testing.T) {
	c := storetest.StartCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns := make([]driver.Conn, len(c.Servers))
	for i := range c.Servers {
		conn, err := store.Open(ctx, c.DSN(t, i, "h3rum"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns[i] = conn
	}
	cluster := store.Cluster{Name: storetest.ClusterName, Dial: c.Dial(t, "h3rum")}
	if _, err := store.MigrateCluster(ctx, conns[0], cluster); err != nil {
		c.LogTails(t)
		t.Fatalf("migrating the cluster: %v", err)
	}
	if err := conns[0].Exec(ctx, "SYSTEM STOP FETCHES nel_reports_local"); err != nil {
		t.Fatal(err)
	}
	defer conns[0].Exec(context.Background(), "SYSTEM START FETCHES nel_reports_local")

	now := time.Now().UTC().Truncate(time.Second)
	var rows store.NELRows
	var batches []*store.NELBatch
	for i := range 16 {
		b := nelBatch(now.Add(-time.Duration(i)*time.Second), nel.Report{Origin: "https://h3.example", Type: "ok", Phase: "application",
			Protocol: "h3", ElapsedMS: 5, SamplingFraction: 0.5})
		batches = append(batches, b)
		rows.Add(b)
	}
	if err := rows.Insert(ctx, conns[1]); err != nil {
		t.Fatal(err)
	}
	onShard1 := countRows(t, conns[1], "SELECT uniqExact(batch_id) FROM nel_reports_local")
	if onShard1 == 0 || onShard1 == uint64(len(batches)) {
		t.Fatalf("shard 1 holds %d of the %d batches; want some on each shard", onShard1, len(batches))
	}
	if n := countRows(t, conns[0], "SELECT count() FROM nel_reports_local"); n != 0 {
		t.Fatalf("the replica that fetches nothing holds %d rows", n)
	}
	seen, err := store.NELStored(ctx, conns[0], batches)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) > len(batches)-int(onShard1) { // shard 2's may be missing too: only one of its replicas has them yet
		t.Errorf("through the lagging replica's Distributed table %d batches look stored; shard 1's %d should not", len(seen), onShard1)
	}

	absent := nelBatch(now, nel.Report{Origin: "https://h2.example", Type: "ok", Phase: "application", Protocol: "h2", SamplingFraction: 1})
	for _, i := range []int{0, 3} { // each waits for the lagging replica (10 s) before it reads the other
		stored, err := cluster.NELStored(ctx, conns[i], append(batches, absent))
		if err != nil {
			t.Fatalf("server %d: %v", i+1, err)
		}
		if len(stored) != len(batches) || stored[absent.ID] {
			t.Errorf("server %d: Cluster.NELStored found %d of %d batches, the absent one %v", i+1, len(stored), len(batches), stored[absent.ID])
		}
	}
}
