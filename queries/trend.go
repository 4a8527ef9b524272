package queries

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
	"github.com/h3rum/h3rum/queries/stats"
)

func init() {
	register(section{
		name: "trend", part: completePart, cost: heavy,
		files: []string{"trend.sql", "quantiles_rollup.sql", "quantiles_runs.sql"},
		reads: []source{fromRaw, fromRollup, fromRunsTable},
		run: func(ctx context.Context, rep *build, conn driver.Conn) (err error) {
			rep.Trend, err = trend(ctx, conn, &rep.opts, rep.win, rep.windowRuns, rep.rollupTrend)
			return err
		},
	})
}

// trendMethod says how the trend's intervals are computed.
const trendMethod = "rank interval per protocol with runs as the sample size, H2 and H3 independent (conservative)"

// trend reads the report's trend (sql/trend.sql and the sources beside
// it); its availability per window comes from excluded, set by complete
// (setAvailability).
func trend(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, wr *windowRuns, grid *handoff[[]gridRow]) (*model.Trend, error) {
	hourly := query.TrendHourly(o)
	tr := &model.Trend{Step: "day", Groups: []model.TrendGroup{}, Method: trendMethod, Windows: []time.Time{}}
	step := 24 * time.Hour
	if hourly {
		tr.Step, step = "hour", time.Hour
	}
	first := o.Since.UTC().Truncate(step)
	for t := first; t.Before(o.Until); t = t.Add(step) {
		tr.Windows = append(tr.Windows, t)
	}
	cells, runsOf, err := trendCells(ctx, conn, o, w, hourly, wr, grid)
	if err != nil {
		return nil, err
	}
	for _, name := range largest(runsOf, maxGroups) {
		tg := model.TrendGroup{Group: name, Points: make([]model.TrendPoint, len(tr.Windows))}
		for i, start := range tr.Windows {
			var c [2]trendSide
			if cc := cells[trendKey{uint32(start.Unix()), name}]; cc != nil {
				c = *cc
			}
			tg.Points[i] = trendPoint(c)
		}
		tr.Groups = append(tr.Groups, tg)
	}
	return tr, nil
}

// trendKey is a window × group of the trend.
type trendKey struct {
	t   uint32
	grp string
}

// trendSide is one protocol's runs and curves, by batch order, in a
// window × group.
type trendSide struct {
	runs int
	q    [2][]float64
	ok   [2]bool
}

// trendCells reads the trend's curves from the source o's selection
// allows: each window × group's H2 and H3 sides, and each group's runs.
func trendCells(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, hourly bool, wr *windowRuns, grid *handoff[[]gridRow]) (map[trendKey]*[2]trendSide, map[string]int, error) {
	cells := map[trendKey]*[2]trendSide{} // by outcome: h2, h3
	runsOf := map[string]int{}
	add := func(t uint32, grp, oc, ord string, runs uint64, qs []float32) {
		k, ok := orderIndex(ord)
		if !ok || len(qs) != len(query.TrendGrid) {
			return
		}
		c := cells[trendKey{t, grp}]
		if c == nil {
			c = &[2]trendSide{}
			cells[trendKey{t, grp}] = c
		}
		s := &c[0]
		if oc == model.OutcomeH3 {
			s = &c[1]
		}
		s.runs += int(runs)
		runsOf[grp] += int(runs)
		s.q[k], s.ok[k] = make([]float64, len(qs)), true
		for i, x := range qs {
			s.q[k][i] = float64(x)
		}
	}
	var err error
	switch {
	case query.RollupAnswers(o) && o.Source != model.SourceRaw && query.RunsTableSelects(o):
		err = trendFromRollup(ctx, conn, o, w, hourly, wr, grid, add)
	case query.RunsTableSelects(o):
		err = trendFromRuns(ctx, conn, o, w, hourly, add)
	default:
		err = trendFromSamples(ctx, conn, o, w, hourly, add)
	}
	return cells, runsOf, err
}

// largest returns the n names with the most runs, most first, as the
// charts draw them.
func largest(runsOf map[string]int, n int) []string {
	names := make([]string, 0, len(runsOf))
	for g := range runsOf {
		names = append(names, g)
	}
	slices.SortFunc(names, func(a, b string) int {
		if runsOf[a] != runsOf[b] {
			return runsOf[b] - runsOf[a]
		}
		return strings.Compare(a, b)
	})
	return names[:min(len(names), n)]
}

// trendPoint is a window × group's H3 − H2 at each percentile, from its
// two sides, with a normal interval from each curve's rank error.
func trendPoint(c [2]trendSide) model.TrendPoint {
	pt := model.TrendPoint{Diff: make([]model.TrendDiff, len(percentiles)), RunsH2: c[0].runs, RunsH3: c[1].runs}
	var curve [2][]float64
	for j := range c {
		curve[j] = make([]float64, len(query.TrendGrid))
		if !balance(&c[j].q, c[j].ok, curve[j]) {
			curve[j] = nil
		}
	}
	for pi, p := range percentiles {
		d := &pt.Diff[pi]
		d.P = p
		if curve[0] == nil || curve[1] == nil || !stats.Sufficient(c[0].runs, p) || !stats.Sufficient(c[1].runs, p) {
			d.Insufficient = true
			continue
		}
		m2, se2, ok2 := stats.RankEstimate(query.TrendGrid, curve[0], p/100, c[0].runs)
		m3, se3, ok3 := stats.RankEstimate(query.TrendGrid, curve[1], p/100, c[1].runs)
		if !ok2 || !ok3 {
			d.Insufficient = true
			continue
		}
		const z = 1.959963984540054
		diff, half := m3-m2, z*math.Hypot(se2, se3)
		d.MS, d.CILowMS, d.CIHighMS = model.Ptr(model.Round3(diff)), model.Ptr(model.Round3(diff-half)), model.Ptr(model.Round3(diff+half))
	}
	return pt
}

// trendFromSamples reads sql/trend.sql: a row per window × group ×
// outcome × batch order.
func trendFromSamples(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, hourly bool, add func(t uint32, grp, oc, ord string, runs uint64, qs []float32)) error {
	st, err := prepare("trend.sql", o, w, func(s *query.Shape) { s.Hourly = hourly })
	if err != nil {
		return err
	}
	return st.Each(ctx, conn, "trend", func(rows driver.Rows) error {
		var (
			t            uint32
			grp, oc, ord string
			runs         uint64
			qs           []float32
		)
		if err := rows.Scan(&t, &grp, &oc, &ord, &runs, &qs); err != nil {
			return err
		}
		add(t, grp, oc, ord, runs, qs)
		return nil
	})
}

// trendFromRuns reads sql/quantiles_runs.sql: a row per window × group ×
// batch order, both protocols side by side.
func trendFromRuns(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, hourly bool, add func(t uint32, grp, oc, ord string, runs uint64, qs []float32)) error {
	grid := func(s *query.Shape) { s.Hourly, s.GridLevels = hourly, s.TrendLevels() }
	return gridRowsFromRuns(ctx, conn, o, w, grid, "trend", add)
}

// gridRowsFromRuns reads sql/quantiles_runs.sql with the windows and
// levels grid chooses, handing add each protocol's curve of a row that
// has runs of it; what names the reader in an error.
func gridRowsFromRuns(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, grid func(*query.Shape), what string, add func(t uint32, grp, oc, ord string, runs uint64, qs []float32)) error {
	st, err := prepare("quantiles_runs.sql", o, w, grid)
	if err != nil {
		return err
	}
	return st.Each(ctx, conn, what, func(rows driver.Rows) error {
		var (
			t              uint32
			grp, ord       string
			runsH2, runsH3 uint64
			qH2, qH3       []float32
		)
		if err := rows.Scan(&t, &grp, &ord, &runsH2, &qH2, &runsH3, &qH3); err != nil {
			return err
		}
		if runsH2 > 0 {
			add(t, grp, model.OutcomeH2, ord, runsH2, qH2)
		}
		if runsH3 > 0 {
			add(t, grp, model.OutcomeH3, ord, runsH3, qH3)
		}
		return nil
	})
}

// gridRow is a row of the trend's quantile grid from the rollup: a
// window × group × batch order's outcome (h2, h3), at query.TrendGrid.
type gridRow struct {
	c  trendCell
	oc string
	qs []float32
}

// trendFromRollup reads the trend's grid from the rollup, a row per
// window × group × outcome × batch order: the rows the point estimates
// handed grid, or where they read none (nil: grid nil, or an estimate
// without the trend) sql/quantiles_rollup.sql. It takes the runs of each
// cell, counted exactly with the point estimates
// (points_runs_counts.sql), from wr. A cell of the rollup without runs
// there is left out, not shown without runs: the rollup's current hour
// holds every row stored so far, also those received after Until or
// between the two queries, which the runs table's window does not count.
func trendFromRollup(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, hourly bool, wr *windowRuns, grid *handoff[[]gridRow], add func(t uint32, grp, oc, ord string, runs uint64, qs []float32)) error {
	runs, err := wr.wait(ctx)
	if err != nil {
		return err
	}
	if runs == nil {
		return errors.New("trend: the point estimates did not count the runs per window")
	}
	addRow := func(r gridRow) {
		i := 0
		if r.oc == model.OutcomeH3 {
			i = 1
		}
		if n := runs[r.c][i]; n > 0 {
			add(r.c.t, r.c.grp, r.oc, r.c.ord, n, r.qs)
		}
	}
	if grid != nil {
		rows, err := grid.wait(ctx)
		if err != nil {
			return err
		}
		if rows != nil {
			for _, r := range rows {
				addRow(r)
			}
			return nil
		}
	}
	st, err := prepare("quantiles_rollup.sql", o, w, func(s *query.Shape) { s.Hourly, s.GridLevels = hourly, s.TrendLevels() })
	if err != nil {
		return err
	}
	return st.Each(ctx, conn, "trend", func(rows driver.Rows) error {
		var r gridRow
		if err := rows.Scan(&r.c.t, &r.c.grp, &r.oc, &r.c.ord, &r.qs); err != nil {
			return err
		}
		addRow(r)
		return nil
	})
}

// setTrendAvailability sets each of tr's points' HTTP/3 availability from
// avail, the runs per window × group that excluded counted (nil where the runs
// table does not hold the selection: the points keep none).
func setTrendAvailability(tr *model.Trend, avail map[trendCell]*model.Availability) {
	for gi := range tr.Groups {
		tg := &tr.Groups[gi]
		for i, start := range tr.Windows {
			tg.Points[i].Availability = avail[trendCell{t: uint32(start.Unix()), grp: tg.Group}]
		}
	}
}

// maxGroups bounds the groups a chart draws (the dashboard's tables show
// all): the trend keeps the largest.
const maxGroups = 12
