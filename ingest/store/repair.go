package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Repair is the operator's answer to a difference that Complete did not
// resolve (a hole from before the in-doubt record, several collectors in
// doubt at once): each differing hour of a table is rebuilt from samples.
// A rebuild reads samples as it is, so an insert landing in the hour while
// it runs can be counted twice or not at all; Repair therefore leaves alone
// the hours that ended less than RepairMinAge before now, and the caller
// checks again afterwards (a rebuild that raced shows as a difference, and
// a second Repair rebuilds it).

// RepairMinAge is how long after its end an hour may be repaired: longer
// than a run waits in the collector's memory and than an insert's retries,
// so that only a spool replayed after a long ClickHouse outage still
// writes into it.
const RepairMinAge = 15 * time.Minute

// mutationTimeout bounds how long Repair waits for ClickHouse to apply the
// deletion of an hour of an hourly table.
const mutationTimeout = 2 * time.Minute

// Repaired is what Repair did to one hour of one derived table.
type Repaired struct {
	Table string
	Hour  time.Time
	// Added is the runs added to a per-run table; the runs it holds and
	// samples lacks are left there (Check still shows them).
	Added uint64
	// Rebuilt says that an hourly table's rows of the hour were replaced
	// by its view's rows over samples' rows of the hour.
	Rebuilt bool
	// TooRecent says that the hour ended less than RepairMinAge before
	// now, so it was left as it is.
	TooRecent bool
}

// ErrRepairOnCluster is Repair's answer on a cluster it cannot reach
// server by server.
var ErrRepairOnCluster = errors.New("repairing derived tables on a cluster needs each of its servers reachable: each shard's tables are rebuilt on one of its replicas")

// Repair rebuilds from samples each table and hour of diffs (as Check
// returns them) that ended RepairMinAge or more before now. A per-run
// table (runs, run_facts) gets the runs of the hour that samples holds and
// it lacks. An hourly table's rows of the hour are deleted (an ALTER …
// DELETE mutation, awaited) and its view's SELECT over samples' rows of
// the hour is inserted in their place. Both are idempotent: repairing an
// hour that matches leaves it as it is.
//
// On a cluster each shard is checked and repaired apart, on its own
// tables, on a replica that has caught up with the others (as Complete
// does): replication carries the rows and the deletion to the other
// replicas, and the deletion cannot touch the rebuilt rows, which are
// inserted after it. A Cluster without Dial is refused with
// ErrRepairOnCluster.
func Repair(ctx context.Context, conn driver.Conn, cluster Cluster, diffs []Difference, now time.Time) ([]Repaired, error) {
	if cluster.Name == "" {
		q, err := derivedQueries()
		if err != nil {
			return nil, err
		}
		return repairOn(ctx, conn, q, diffs, now)
	}
	if cluster.Dial == nil {
		return nil, ErrRepairOnCluster
	}
	q, err := localDerivedQueries()
	if err != nil {
		return nil, err
	}
	shards, err := clusterShards(ctx, conn, cluster.Name)
	if err != nil {
		return nil, err
	}
	out := make([]Repaired, len(diffs))
	var from, to time.Time
	for i, d := range diffs {
		out[i] = Repaired{Table: d.Table, Hour: d.Hour.UTC().Truncate(time.Hour)}
		out[i].TooRecent = out[i].Hour.Add(time.Hour + RepairMinAge).After(now)
		if from.IsZero() || out[i].Hour.Before(from) {
			from = out[i].Hour
		}
		if end := out[i].Hour.Add(time.Hour); end.After(to) {
			to = end
		}
	}
	for _, replicas := range shards {
		err := cluster.onCaughtUp(ctx, replicas, append([]string{"samples"}, DerivedTables()...), func(conn driver.Conn) error {
			// The shard's own differences among those asked for: the
			// others' rows are not its to rebuild.
			local, err := checkWith(ctx, conn, q, from, to)
			if err != nil {
				return err
			}
			local = slices.DeleteFunc(local, func(l Difference) bool {
				return !slices.ContainsFunc(diffs, func(d Difference) bool { return d.Table == l.Table && d.Hour.UTC().Truncate(time.Hour).Equal(l.Hour) })
			})
			done, err := repairOn(noDedup(ctx), conn, q, local, now)
			for _, r := range done {
				i := slices.IndexFunc(out, func(o Repaired) bool { return o.Table == r.Table && o.Hour.Equal(r.Hour) })
				out[i].Added += r.Added
				out[i].Rebuilt = out[i].Rebuilt || r.Rebuilt
			}
			return err
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// repairOn is Repair on one server's tables, as q names them.
func repairOn(ctx context.Context, conn driver.Conn, q *derivedSQL, diffs []Difference, now time.Time) ([]Repaired, error) {
	var out []Repaired
	var err error
	for _, d := range diffs {
		i := slices.IndexFunc(derivedTables, func(t derivedTable) bool { return t.Name == d.Table })
		if i < 0 {
			return out, fmt.Errorf("repairing %s: not a table filled from samples", d.Table)
		}
		hour := d.Hour.UTC().Truncate(time.Hour)
		r := Repaired{Table: d.Table, Hour: hour}
		if hour.Add(time.Hour + RepairMinAge).After(now) {
			r.TooRecent = true
			out = append(out, r)
			continue
		}
		args := []any{clickhouse.Named("from", hour.Unix()), clickhouse.Named("to", hour.Add(time.Hour).Unix())}
		if derivedTables[i].Measure == "" {
			r.Added, err = q.repairRuns(ctx, conn, i, args)
		} else {
			err = q.rebuildHour(ctx, conn, i, args)
			r.Rebuilt = err == nil
		}
		if err != nil {
			return out, fmt.Errorf("repairing %s at %s: %w", d.Table, hour.Format(time.DateTime), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// repairRuns inserts into per-run table i the runs of the hour args bound
// that samples holds and it lacks, and returns how many.
func (q *derivedSQL) repairRuns(ctx context.Context, conn driver.Conn, i int, args []any) (uint64, error) {
	var lacking uint64
	if err := conn.QueryRow(ctx, q.lackingInWindow[i], args...).Scan(&lacking); err != nil {
		return 0, fmt.Errorf("counting the runs it lacks: %w", err)
	}
	if lacking == 0 {
		return 0, nil
	}
	st, err := q.repairStatement(ctx, conn, i, "repair runs")
	if err != nil {
		return 0, err
	}
	if err := conn.Exec(ctx, st, args...); err != nil {
		return 0, fmt.Errorf("inserting the runs it lacks: %w", err)
	}
	return lacking, nil
}

// rebuildHour replaces hourly table i's rows of the hour args bound with
// its view's rows over samples' rows of that hour.
func (q *derivedSQL) rebuildHour(ctx context.Context, conn driver.Conn, i int, args []any) error {
	x := derivedQuery{Table: q.tables[i], Time: derivedTables[i].Time}
	clear, err := execute(q.t, "clear hour", x)
	if err != nil {
		return err
	}
	if err := conn.Exec(ctx, clear, args...); err != nil {
		return fmt.Errorf("deleting the hour: %w", err)
	}
	if err := q.awaitMutations(ctx, conn, i); err != nil {
		return err
	}
	st, err := q.repairStatement(ctx, conn, i, "complete block")
	if err != nil {
		return err
	}
	if err := conn.Exec(ctx, st, args...); err != nil {
		return fmt.Errorf("inserting the hour from samples: %w", err)
	}
	return nil
}

// awaitMutations waits until ClickHouse has applied every mutation of
// derived table i: an ALTER … DELETE returns before its rows are gone on
// 18.16, and inserting the rebuilt hour before they are would lose it.
func (q *derivedSQL) awaitMutations(ctx context.Context, conn driver.Conn, i int) error {
	pending, err := execute(q.t, "mutations pending", derivedQuery{})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(mutationTimeout)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		var n uint64
		if err := conn.QueryRow(ctx, pending, clickhouse.Named("table", q.tables[i])).Scan(&n); err != nil {
			return fmt.Errorf("waiting for the deletion: %w", err)
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the deletion of the hour is still not applied after %s (see system.mutations); nothing was inserted, so run the repair again", mutationTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// repairStatement renders the INSERT name for derived table i over
// samples' rows of @from to @to.
func (q *derivedSQL) repairStatement(ctx context.Context, conn driver.Conn, i int, name string) (string, error) {
	columns, err := q.viewColumns(ctx, conn, i)
	if err != nil {
		return "", err
	}
	return execute(q.t, name, derivedQuery{Table: q.tables[i], Columns: columns, Fill: q.fillWindow[i]})
}
