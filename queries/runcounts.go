package queries

import (
	"context"
	"fmt"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

// exactRunCounts reads points_runs_counts.sql: the runs of every group ×
// outcome × batch order of points_raw.sql's shape (totals over orders with
// order "", over outcomes with outcome "" and order "", the grand total
// with group "" too), counted exactly from the runs table, and the runs
// of each trend window × group × batch order holding a kept H2 and a kept
// H3 request (trendCell).
func exactRunCounts(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window) (map[[3]string]uint64, map[trendCell][2]uint64, error) {
	st, err := runCountsQuery(o, w)
	if err != nil {
		return nil, nil, err
	}
	counts := map[[3]string]uint64{}
	byWindow := map[trendCell][2]uint64{}
	var (
		c trendCell
		n = make([]uint64, 1+len(query.RunCountOutcomes)) // n_any, then by outcome
	)
	dest := []any{&c.t, &c.grp, &c.ord}
	for i := range n {
		dest = append(dest, &n[i])
	}
	err = st.Each(ctx, conn, "run counts", func(rows driver.Rows) error {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		var h2h3 [2]uint64
		for i, k := range n {
			oc := ""
			if i > 0 {
				switch query.RunCountOutcomes[i-1] {
				case store.OutcomeH2:
					h2h3[0] = k
				case store.OutcomeH3:
					h2h3[1] = k
				}
				oc = query.RunCountOutcomes[i-1].String()
				if k == 0 {
					continue // as the rows of points_raw.sql: none for an outcome without runs
				}
			}
			counts[[3]string{c.grp, oc, c.ord}] += k
			counts[[3]string{c.grp, oc, ""}] += k // a run has one batch order
			if oc == "" {
				counts[[3]string{"", "", ""}] += k // and one group
			}
		}
		byWindow[c] = h2h3
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return counts, byWindow, nil
}

// runCountsQuery returns exactRunCounts' query. Reports from the rollup
// (the only ones that count runs apart from their point estimates) read
// run_counts for the window's whole hours (points_runs_counts_rollup.sql);
// a selection that keeps other requests than every one of a run's (which
// run_counts counted) reads the runs table (points_runs_counts.sql).
func runCountsQuery(o *model.Options, w query.Window) (query.Stmt, error) {
	if query.KeptSQL(o) != "outcomes" {
		return prepare("points_runs_counts.sql", o, w, nil)
	}
	return prepare("points_runs_counts_rollup.sql", o, w, nil)
}

// trendCell is a window × group × batch order of the trend.
type trendCell struct {
	t        uint32
	grp, ord string
}

// handoff passes a value from one section of the report to another that
// runs beside it: the section that computes it sets it once (the zero
// value when it could not), and wait returns it, or the context's cause
// if that ends first.
type handoff[T any] struct {
	ready chan struct{}
	once  sync.Once
	v     T
}

func newHandoff[T any]() *handoff[T] { return &handoff[T]{ready: make(chan struct{})} }

// set hands v over; only the first call counts.
func (h *handoff[T]) set(v T) {
	h.once.Do(func() {
		h.v = v
		close(h.ready)
	})
}

// wait returns the value once it is set.
func (h *handoff[T]) wait(ctx context.Context) (T, error) {
	select {
	case <-h.ready:
		return h.v, nil
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}

// groupRuns are a group's runs in the point estimates, counted apart from
// them, for the bootstrap's fetch to start before they are done; point says
// the group has an outcome the bootstrap reads (h2, h3 or the fallback).
type groupRuns struct {
	runs  int
	point bool
}

// groupRunsOf is the groups of counts (exactRunCounts), the grand total
// left out.
func groupRunsOf(counts map[[3]string]uint64) map[string]groupRuns {
	out := map[string]groupRuns{}
	for k, n := range counts {
		if k[0] == "" || k[2] != "" {
			continue
		}
		g := out[k[0]]
		switch k[1] {
		case "":
			g.runs = int(n)
		case store.OutcomeH2.String(), store.OutcomeH3.String(), store.OutcomeWantedH3GotH2.String():
			g.point = g.point || n > 0
		}
		out[k[0]] = g
	}
	return out
}

// windowRuns hands the trend from the rollup the runs per trendCell that
// the point estimates counted (by outcome: h2, h3); nil when the count
// failed.
type windowRuns = handoff[map[trendCell][2]uint64]

// withExactRuns reads the rollup's rows with read and hands them to add
// with their run counts replaced by exact ones (exactRunCounts), read
// beside the rollup's query; the counts per trend window go to wr, and per
// group to gr as soon as they are read. The rollup's HyperLogLog states estimate,
// and the engines hash run ids differently; a report's counts are exact.
func withExactRuns(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, read func(add pointRow) error, wr *windowRuns, gr *handoff[map[string]groupRuns]) func(add pointRow) error {
	return func(add pointRow) error {
		type result struct {
			counts map[[3]string]uint64
			err    error
		}
		done := make(chan result, 1)
		go func() {
			c, byWindow, err := exactRunCounts(ctx, conn, o, w)
			if err != nil {
				byWindow = nil
			}
			wr.set(byWindow)
			if err == nil {
				gr.set(groupRunsOf(c))
			}
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
