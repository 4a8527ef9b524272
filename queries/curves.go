package queries

import (
	"context"
	"fmt"
	"slices"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

func init() {
	register(section{
		name: "curves", part: completePart, cost: heavy,
		files: []string{"curves.sql", "quantiles_runs.sql"},
		reads: []source{fromRaw, fromRunsTable}, // and the rollup's, read with the point estimates
		run: func(ctx context.Context, rep *build, conn driver.Conn) error {
			return curves(ctx, conn, &rep.opts, rep.win, rep.rollupCurves, rep.groups.get)
		},
	})
}

// curvePercentiles is where each reported percentile is in query.CurveGrid.
var curvePercentiles = func() (ix [len(percentiles)]int) {
	for i, p := range percentiles {
		j := slices.Index(query.CurveGrid, p)
		if j < 0 {
			panic(fmt.Sprintf("query.CurveGrid lacks the percentile %v", p))
		}
		ix[i] = j
	}
	return ix
}()

// atPercentiles picks the reported percentiles out of qs, quantiles at
// query.CurveGrid.
func atPercentiles(qs []float32) []float32 {
	out := make([]float32, len(curvePercentiles))
	for i, j := range curvePercentiles {
		out[i] = qs[j]
	}
	return out
}

// curveRow is one group × outcome × batch order's quantiles at
// query.CurveGrid.
type curveRow struct {
	grp, oc, ord string
	qs           []float32
}

// curves reads every group's quantile curves: where the point estimates
// came from the rollup, from the rows they read at query.CurveGrid (cv); else
// from the runs table where it holds the selection
// (sql/quantiles_runs.sql), else from the samples (sql/curves.sql).
func curves(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, cv *handoff[[]curveRow], get func(string) *model.Group) error {
	type key struct{ grp, oc string }
	type byOrder struct {
		v  [2][]float64
		ok [2]bool
	}
	acc := map[key]*byOrder{}
	var keys []key
	add := func(grp, oc, ord string, qs []float32) {
		k, ok := orderIndex(ord)
		if !ok || len(qs) != len(query.CurveGrid) {
			return
		}
		b := acc[key{grp, oc}]
		if b == nil {
			b = &byOrder{}
			acc[key{grp, oc}] = b
			keys = append(keys, key{grp, oc})
		}
		b.v[k], b.ok[k] = make([]float64, len(qs)), true
		for i, x := range qs {
			b.v[k][i] = float64(x)
		}
	}
	var err error
	switch {
	case query.RollupAnswers(o) && o.Source != model.SourceRaw: // as the point estimates chose (begin)
		var rows []curveRow
		if rows, err = cv.wait(ctx); err == nil {
			for _, r := range rows {
				add(r.grp, r.oc, r.ord, r.qs)
			}
		}
	case query.RunsTableSelects(o):
		err = curvesFromRuns(ctx, conn, o, w, add)
	default:
		err = curvesFromSamples(ctx, conn, o, w, add)
	}
	if err != nil {
		return err
	}
	for _, k := range keys {
		b := acc[k]
		out := make([]float64, len(query.CurveGrid))
		if !balance(&b.v, b.ok, out) {
			continue
		}
		for i := range out {
			out[i] = model.Round3(out[i])
		}
		g := get(k.grp)
		if g.Curves == nil {
			g.Curves = &model.Curves{Levels: query.CurveGrid}
		}
		if k.oc == model.OutcomeH2 {
			g.Curves.H2 = out
		} else {
			g.Curves.H3 = out
		}
	}
	return nil
}

// curvesFromSamples reads sql/curves.sql: a row per group × outcome ×
// batch order.
func curvesFromSamples(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, add func(grp, oc, ord string, qs []float32)) error {
	st, err := prepare("curves.sql", o, w, nil)
	if err != nil {
		return err
	}
	return st.Each(ctx, conn, "quantile curves", func(rows driver.Rows) error {
		var (
			grp, oc, ord string
			qs           []float32
		)
		if err := rows.Scan(&grp, &oc, &ord, &qs); err != nil {
			return err
		}
		add(grp, oc, ord, qs)
		return nil
	})
}

// curvesFromRuns reads sql/quantiles_runs.sql over the whole window: a row
// per group × batch order with both protocols' curves.
func curvesFromRuns(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, add func(grp, oc, ord string, qs []float32)) error {
	grid := func(s *query.Shape) { s.OneWindow, s.GridLevels = true, s.CurveLevels() }
	return gridRowsFromRuns(ctx, conn, o, w, grid, "quantile curves",
		func(_ uint32, grp, oc, ord string, _ uint64, qs []float32) { add(grp, oc, ord, qs) })
}
