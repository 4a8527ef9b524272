package queries

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
)

// exactRunCounts reads points_runs_counts.sql: the runs of every group ×
// outcome × batch order of points_raw.sql's shape (totals over orders with
// order "", over outcomes with outcome "" and order "", the grand total
// with group "" too), counted exactly from the runs table.
func exactRunCounts(ctx context.Context, conn driver.Conn, o *Options, w window) (map[[3]string]uint64, error) {
	const name = "points_runs_counts.sql"
	q, err := query(name, o)
	if err != nil {
		return nil, err
	}
	counts := map[[3]string]uint64{}
	err = eachRowOf(ctx, conn, q, runsArgs(o, w), "run counts ("+name+")", func(rows driver.Rows) error {
		var (
			grp, ord string
			n        = make([]uint64, 1+len(runCountOutcomes)) // n_any, then by outcome
		)
		dest := []any{&grp, &ord}
		for i := range n {
			dest = append(dest, &n[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		for i, c := range n {
			oc := ""
			if i > 0 {
				oc = runCountOutcomes[i-1].String()
				if c == 0 {
					continue // as the rows of points_raw.sql: none for an outcome without runs
				}
			}
			counts[[3]string{grp, oc, ord}] += c
			counts[[3]string{grp, oc, ""}] += c // a run has one batch order
			if oc == "" {
				counts[[3]string{"", "", ""}] += c // and one group
			}
		}
		return nil
	})
	return counts, err
}

// runCountOutcomes are the outcomes points_runs_counts.sql counts runs
// of, in its columns' order after n_any.
var runCountOutcomes = []store.Outcome{store.OutcomeH2, store.OutcomeH3, store.OutcomeWantedH3GotH2, store.OutcomeOther}

// outcomeCountsSQL is /*OUTCOME COUNTS*/: per outcome of runCountOutcomes,
// the runs whose kept outcomes hold its code in the outcomes column's Enum8.
var outcomeCountsSQL = func() string {
	var b strings.Builder
	for i, oc := range runCountOutcomes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "countIf(has(kept, %d)) AS n_%s", int8(oc), oc)
	}
	return b.String()
}()

// withExactRuns reads the rollup's rows with read and hands them to add
// with their run counts replaced by exact ones (exactRunCounts), read
// beside the rollup's query. The rollup's HyperLogLog states estimate,
// and the engines hash run ids differently; a report's counts are exact.
func withExactRuns(ctx context.Context, conn driver.Conn, o *Options, w window, read func(add pointRow) error) func(add pointRow) error {
	return func(add pointRow) error {
		type result struct {
			counts map[[3]string]uint64
			err    error
		}
		done := make(chan result, 1)
		go func() {
			c, err := exactRunCounts(ctx, conn, o, w)
			done <- result{c, err}
		}()
		type row struct {
			grp, outcome, order string
			nSamples            uint64
			qs                  []float32
		}
		var buf []row
		err := read(func(grp, outcome, order string, _, nSamples uint64, qs []float32) {
			buf = append(buf, row{grp, outcome, order, nSamples, qs})
		})
		r := <-done
		if err != nil {
			return err
		}
		if r.err != nil {
			return r.err
		}
		for _, x := range buf {
			runs, ok := r.counts[[3]string{x.grp, x.outcome, x.order}]
			if !ok {
				return fmt.Errorf("run counts: group %q, outcome %q, order %q in the rollup but no run of it in the runs table", x.grp, x.outcome, x.order)
			}
			add(x.grp, x.outcome, x.order, runs, x.nSamples, x.qs)
		}
		return nil
	}
}
