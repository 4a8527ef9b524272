package queries

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
	"github.com/h3rum/h3rum/queries/synth"
)

// TestTrendGridWithThePointEstimates checks that the trend's grid read in
// the point estimates' pass over the rollup (what Run does) is the one
// quantiles_rollup.sql reads (Estimate, then AddRuns): the same cells
// with the same runs, quantiles within the t-digest's error from merging
// the same states in another order; by hour and by day, over whole hours
// and with edges, by continent and by country.
func TestTrendGridWithThePointEstimates(t *testing.T) {
	conn := newDB(t)
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	load(t, conn, synth.All(synth.Config{Seed: 11, Runs: 3000, Start: start, Span: 5 * 24 * time.Hour}))
	ctx := context.Background()
	for _, c := range []struct {
		name         string
		since, until time.Time
		by           string
	}{
		{"whole hours", start.Add(2 * time.Hour), start.Add(30 * time.Hour), "continent"},
		{"edges", start.Add(2*time.Hour + 17*time.Minute), start.Add(30*time.Hour + 41*time.Minute), "continent"},
		{"edges by country", start.Add(2*time.Hour + 17*time.Minute), start.Add(30*time.Hour + 41*time.Minute), "country"},
		{"by day, edges", start.Add(5 * time.Minute), start.Add(4*24*time.Hour + 7*time.Hour + 30*time.Minute), "continent"},
	} {
		rep, err := begin(ctx, conn, model.Options{Since: c.since, Until: c.until, By: c.by, Source: model.SourceRollup})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		grid := newHandoff[[]gridRow]()
		if err := points(ctx, conn, &rep.opts, rep.win, rep.useRollup, rep.groups.get, rep.windowRuns, rep.rollupCurves, grid, rep.groupRuns); err != nil {
			t.Fatalf("%s: points: %v", c.name, err)
		}
		rows, _ := grid.wait(ctx)
		if len(rows) == 0 {
			t.Fatalf("%s: the point estimates handed the trend no grid", c.name)
		}
		hourly := query.TrendHourly(&rep.opts)
		if hourly != (c.until.Sub(c.since) <= query.TrendHourlyUpTo) {
			t.Fatalf("%s: hourly %v", c.name, hourly)
		}
		with, runsWith, err := trendCells(ctx, conn, &rep.opts, rep.win, hourly, rep.windowRuns, grid)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		own, runsOwn, err := trendCells(ctx, conn, &rep.opts, rep.win, hourly, rep.windowRuns, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(with) != len(own) || len(with) < 2 {
			t.Fatalf("%s: %d cells with the point estimates, %d from quantiles_rollup.sql", c.name, len(with), len(own))
		}
		for g, n := range runsOwn {
			if runsWith[g] != n {
				t.Errorf("%s: group %s: %d runs with the point estimates, %d from quantiles_rollup.sql", c.name, g, runsWith[g], n)
			}
		}
		for k, o := range own {
			w := with[k]
			if w == nil {
				t.Errorf("%s: cell %v missing with the point estimates", c.name, k)
				continue
			}
			for side := range o {
				if w[side].runs != o[side].runs || w[side].ok != o[side].ok {
					t.Errorf("%s: cell %v side %d: runs %d ok %v with the point estimates, %d %v from quantiles_rollup.sql",
						c.name, k, side, w[side].runs, w[side].ok, o[side].runs, o[side].ok)
					continue
				}
				for ord := range o[side].q {
					for i, q := range o[side].q[ord] {
						if p := w[side].q[ord][i]; math.Abs(p-q) > 1+0.03*math.Abs(q) {
							t.Errorf("%s: cell %v side %d order %d level %g: %.3f with the point estimates, %.3f from quantiles_rollup.sql",
								c.name, k, side, ord, query.TrendGrid[i], p, q)
						}
					}
				}
			}
		}
	}
}
