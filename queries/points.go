package queries

import (
	"context"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

func init() {
	register(section{
		name: "points", part: estimatePart, cost: heavy,
		files: []string{"points_raw.sql", "points_rollup.sql", "points_runs.sql", "points_runs_counts.sql", "points_runs_counts_rollup.sql"},
		reads: []source{fromRaw, fromRollup, fromRunsTable},
		run: func(ctx context.Context, rep *build, conn driver.Conn) error {
			if err := points(ctx, conn, &rep.opts, rep.win, rep.useRollup, rep.groups.get, rep.windowRuns, rep.rollupCurves, rep.rollupTrend, rep.groupRuns); err != nil {
				return err
			}
			rep.groupRuns.set(nil) // where no count came first: the bootstrap takes the groups'
			if rep.rollupTrend != nil {
				rep.rollupTrend.set(nil) // where the trend was not read: it reads its own
			}
			rep.pointsDone.set(struct{}{})
			return nil
		},
	})
}

// points reads counts and percentiles per group, outcome and batch order;
// an outcome's percentiles are the mean of its two orders' (order.go).
// Raw reports whose selection the runs table holds read it instead of the
// samples (points_runs.sql): a row per run, and exact run counts; reports
// from the rollup take their run counts from it too (withExactRuns).
func points(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, useRollup bool, get func(string) *model.Group, wr *windowRuns, cv *handoff[[]curveRow], tr *handoff[[]gridRow], gr *handoff[map[string]groupRuns]) error {
	read := func(add pointRow) error { return pointsFromSamples(ctx, conn, o, w, useRollup, cv, tr, add) }
	if !useRollup && query.RunsTableSelects(o) {
		read = func(add pointRow) error { return pointsFromRuns(ctx, conn, o, w, add) }
	}
	if useRollup && query.RunsTableSelects(o) {
		read = withExactRuns(ctx, conn, o, w, read, wr, gr)
	}
	return pointsInto(o, read, get)
}

// pointsInto fills the groups from the rows read hands its add.
func pointsInto(o *model.Options, read func(add pointRow) error, get func(string) *model.Group) error {
	type byOrder struct {
		s  *model.Stats
		q  [2][]float64
		ok [2]bool
	}
	var outcomes []*byOrder
	index := map[[2]string]*byOrder{}
	at := func(grp, outcome string) *byOrder {
		k := [2]string{grp, outcome}
		b := index[k]
		if b == nil {
			b = &byOrder{s: &model.Stats{Percentiles: make([]model.Percentile, len(percentiles))}}
			for i, p := range percentiles {
				b.s.Percentiles[i].P = p
			}
			index[k] = b
			outcomes = append(outcomes, b)
			g := get(grp)
			switch outcome {
			case model.OutcomeH2:
				g.H2 = b.s
			case model.OutcomeH3:
				g.H3 = b.s
			case model.OutcomeWantedH3GotH2:
				g.WantedH3GotH2 = b.s
			default:
				g.Other = b.s
			}
		}
		return b
	}
	// add takes one row of points_raw.sql's shape: a group × outcome ×
	// order, or with outcome or order empty the totals over them.
	add := func(grp, outcome, order string, runs, nSamples uint64, qs []float32) {
		switch {
		case grp == "":
			return // the grand total of WITH ROLLUP
		case outcome == "":
			g := get(grp)
			g.Runs, g.Samples = int(runs), int(nSamples)
			return
		}
		b := at(grp, outcome)
		k, ok := orderIndex(order)
		if !ok { // the outcome's totals over both orders
			b.s.Runs, b.s.Samples = int(runs), int(nSamples)
			return
		}
		b.q[k], b.ok[k] = make([]float64, len(percentiles)), len(qs) == len(percentiles)
		for i := range qs {
			b.q[k][i] = float64(qs[i])
		}
		if k == orderH2First {
			b.s.RunsByOrder.H2First = int(runs)
		} else {
			b.s.RunsByOrder.H3First = int(runs)
		}
	}
	if err := read(add); err != nil {
		return err
	}
	for _, b := range outcomes {
		s := b.s
		v := make([]float64, len(percentiles))
		if balance(&b.q, b.ok, v) {
			for i := range v {
				s.Percentiles[i].MS = model.Round3(v[i])
			}
		}
		s.TooSmall = s.Runs < o.MinRuns
		// Judged on the reported runs until the bootstrap counts the runs
		// its intervals come from (model.Settle).
		s.MarkSufficiency(s.Runs)
	}
	return nil
}

// pointRow is points(…)'s add: one row of points_raw.sql's shape.
type pointRow func(grp, outcome, order string, runs, nSamples uint64, qs []float32)

// pointsFromSamples reads points_raw.sql or points_rollup.sql. From the
// rollup it reads every row at query.CurveGrid, hands add the percentiles
// among them and cv the H2 and H3 rows of each batch order, the
// distribution's curves (set even when the read fails, so that the
// curves never wait on it). With tr, the trend's handoff where the trend
// reads the rollup (trendFromRollup), it reads the trend's quantile grid
// in the same pass (query.Shape.Trend) and hands tr its rows.
func pointsFromSamples(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, useRollup bool, cv *handoff[[]curveRow], tr *handoff[[]gridRow], add pointRow) error {
	// The runs table counts runs exactly where it holds the selection
	// (withExactRuns), which the rollup's HyperLogLog states cannot.
	exact := query.RunsTableSelects(o)
	trend := useRollup && exact && tr != nil
	st, err := prepare(query.SourceFile("points", useRollup), o, w, func(s *query.Shape) {
		s.ExactRuns = exact
		if trend {
			s.WithTrend()
		}
	})
	if err != nil {
		return err
	}
	var curveRows []curveRow
	if useRollup { // the query merges the t-digests at query.CurveGrid (MergeLevels)
		defer func() { cv.set(curveRows) }()
	}
	levels := len(query.CurveGrid)
	var trendRows []gridRow
	if trend {
		levels, trendRows = len(query.MergeGrid), []gridRow{}
		defer func() { tr.set(trendRows) }()
	}
	return st.Each(ctx, conn, "percentiles", func(rows driver.Rows) error {
		var (
			grp, outcome, order string
			runs, nSamples      uint64
			qs                  []float32
			t                   uint32
		)
		dest := []any{&grp, &outcome, &order, &runs, &nSamples, &qs}
		if trend {
			dest = append(dest, &t)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		if useRollup {
			if len(qs) != levels {
				return fmt.Errorf("%d quantiles in a row, want %d levels", len(qs), levels)
			}
			if trend {
				if t != 0 { // a window's row: the trend's, not the point estimates'
					if outcome == model.OutcomeH2 || outcome == model.OutcomeH3 {
						trendRows = append(trendRows, gridRow{trendCell{t, grp, order}, outcome, pick(qs, query.TrendAt)})
					}
					return nil
				}
				qs = pick(qs, query.CurveAt)
			}
			if _, ok := orderIndex(order); ok && (outcome == model.OutcomeH2 || outcome == model.OutcomeH3) {
				curveRows = append(curveRows, curveRow{grp, outcome, order, qs})
			}
			qs = atPercentiles(qs)
		}
		add(grp, outcome, order, runs, nSamples, qs)
		return nil
	})
}

// pick returns qs at the indices at.
func pick(qs []float32, at []int) []float32 {
	out := make([]float32, len(at))
	for i, j := range at {
		out[i] = qs[j]
	}
	return out
}

// pointsFromRuns reads points_runs.sql, a row per group × order with the
// outcomes side by side, and hands add the rows points_raw.sql would
// return, totals included.
func pointsFromRuns(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, add pointRow) error {
	st, err := prepare("points_runs.sql", o, w, nil)
	if err != nil {
		return err
	}
	type counts struct{ runs, samples uint64 }
	groups := map[string]*counts{}
	byOutcome := map[[2]string]*counts{}
	var seen []string // groups and outcomes in their first row's order
	var keys [][2]string
	names := [4]string{model.OutcomeH2, model.OutcomeH3, model.OutcomeWantedH3GotH2, model.OutcomeOther}
	err = st.Each(ctx, conn, "percentiles", func(rows driver.Rows) error {
		var (
			grp, ord string
			runs, n  [5]uint64 // by names, then all outcomes
			qs       [4][]float32
		)
		if err := rows.Scan(&grp, &ord,
			&runs[0], &n[0], &qs[0], &runs[1], &n[1], &qs[1], &runs[2], &n[2], &qs[2], &runs[3], &n[3], &qs[3],
			&runs[4], &n[4]); err != nil {
			return err
		}
		g := groups[grp]
		if g == nil {
			g = &counts{}
			groups[grp] = g
			seen = append(seen, grp)
		}
		g.runs, g.samples = g.runs+runs[4], g.samples+n[4]
		for i, oc := range names {
			if n[i] == 0 {
				continue
			}
			add(grp, oc, ord, runs[i], n[i], qs[i])
			k := [2]string{grp, oc}
			c := byOutcome[k]
			if c == nil {
				c = &counts{}
				byOutcome[k] = c
				keys = append(keys, k)
			}
			// A run has one batch order: its runs over both orders add up.
			c.runs, c.samples = c.runs+runs[i], c.samples+n[i]
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		add(k[0], k[1], "", byOutcome[k].runs, byOutcome[k].samples, nil)
	}
	for _, grp := range seen {
		if g := groups[grp]; g.samples > 0 { // a group whose requests all failed is not one
			add(grp, "", "", g.runs, g.samples, nil)
		}
	}
	return nil
}
