package queries

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/queries/stats"
)

// Run computes the report for opts (validated and defaulted in place of a
// copy) from the ClickHouse behind conn: what Estimate and AddRuns do, but
// the sections that need only the design start beside the point
// estimates.
func Run(ctx context.Context, conn driver.Conn, opts Options) (*Report, error) {
	rep, err := begin(ctx, conn, opts)
	if err != nil {
		return nil, err
	}
	first := rep.sectionsOf(estimatePart)
	a, b := lanes(rep.sectionsOf(completePart))
	all := [][]section{append(first[:1:1], rep.sectionsOf(runsPart)...), append(first[1:], a...), b}
	if err := rep.complete(ctx, conn, all); err != nil {
		return nil, err
	}
	return rep, nil
}

// Estimate computes the first part of the report: counts, percentiles and
// their differences, availability per request and the timeline, from the
// rollup where it answers — what the dashboard paints first. AddRuns adds
// what reads raw rows beyond the window's edges: failures, the per-run
// samples (confidence intervals and the paired view), the excluded runs,
// the intention-to-treat view, handshakes, NEL and the script errors.
func Estimate(ctx context.Context, conn driver.Conn, opts Options) (*Report, error) {
	rep, err := begin(ctx, conn, opts)
	if err != nil {
		return nil, err
	}
	for _, sec := range rep.sectionsOf(estimatePart) {
		start := time.Now()
		if err := sec.run(ctx, rep, conn); err != nil {
			return nil, err
		}
		rep.Stages = append(rep.Stages, Stage{sec.name, time.Since(start)})
	}
	rep.finish()
	if err := rep.checkFinite(); err != nil {
		return nil, err
	}
	return rep, nil
}

// begin validates opts and chooses the report's design (the designs
// stage); it reports whether the point estimates come from the rollup.
func begin(ctx context.Context, conn driver.Conn, opts Options) (*Report, error) {
	o := opts
	if err := o.Validate(); err != nil {
		return nil, err
	}
	useRollup := false
	switch o.Source {
	case SourceRollup:
		if !o.rollupAnswers() {
			return nil, invalid("the rollup holds only the default selection grouped by continent, country or none")
		}
		useRollup = true
	case SourceAuto:
		// The window runs up to Until: whole hours from the rollup, the
		// partial hours at its edges from raw rows, which the hour-sorted
		// table reads without scanning the rest of the day.
		useRollup = o.rollupAnswers()
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	w := newWindow(o.Since, o.Until, now)
	rep := &Report{
		Version: ReportVersion,
		Since:   o.Since,
		Until:   o.Until,
		Site:    o.Site,
		By:      o.By,
		MinRuns: o.MinRuns,
		Filters: Filters{IncludeWarmup: o.IncludeWarmup, IncludeFailed: o.IncludeFailed, IncludeBots: o.IncludeBots,
			IncludeExcluded: o.IncludeExcluded, Continent: o.Continent, Country: o.Country, HeadlineOnly: o.Headline},
		Source:            "raw",
		Percentiles:       percentiles[:],
		ExactBelowSamples: ExactBelowSamples,
		CI:                CIMethod{Method: "none", Level: 0.95, MinTailRuns: MinTailRuns},
		Verdicts:          []Verdict{},
		Groups:            []Group{},
		Timeline:          []Hour{},
		groups:            &groupSet{m: map[string]*Group{}},
	}
	if o.Replicates > 0 {
		rep.CI = CIMethod{Method: "cluster_bootstrap_runs", Level: 0.95, Replicates: o.Replicates,
			MaxRunsPerGroup: o.MaxRunsPerGroup, Seed: o.Seed, MinTailRuns: MinTailRuns}
	}
	if useRollup {
		rep.Source = "rollup"
	}
	// The point estimates count the runs the trend from the rollup shows
	// (points and trend agree on that condition) and, from the rollup,
	// read the curves.
	rep.windowRuns = newHandoff[map[trendCell][2]uint64]()
	rep.rollupCurves = newHandoff[[]curveRow]()
	rep.groupRuns = newHandoff[map[string]groupRuns]()
	rep.pointsDone = newHandoff[struct{}]()
	start := time.Now()
	ds, err := designs(ctx, conn, &o, w)
	if err != nil {
		return nil, err
	}
	rep.Designs = ds
	switch {
	case o.Design.Set || o.Design.All:
	case len(ds) > 0:
		o.Design = ds[0].Design
	default:
		o.Design.All = true // no run in the window: nothing to choose from
	}
	rep.Design = o.Design
	rep.Stages = append(rep.Stages, Stage{"designs", time.Since(start)})
	rep.opts, rep.win, rep.useRollup = o, w, useRollup
	return rep, nil
}

// AddRuns completes a report made by Estimate: failures, the bootstrap
// confidence intervals and the paired view, the excluded runs and
// availability per run, the intention-to-treat view, handshakes, NEL and
// the script errors. The bootstrap runs beside the other sections, so
// that ClickHouse answers them while Go computes it.
func (rep *Report) AddRuns(ctx context.Context, conn driver.Conn) error {
	if rep.groups == nil {
		return errors.New("AddRuns needs a report made by Estimate")
	}
	if rep.done {
		return nil
	}
	a, b := lanes(rep.sectionsOf(completePart))
	return rep.complete(ctx, conn, [][]section{rep.sectionsOf(runsPart), a, b})
}

// complete runs lanes at once, the sections of each in order, then sets
// what excluded counted for the others and finishes the report. The first
// error stops the other lanes.
func (rep *Report) complete(ctx context.Context, conn driver.Conn, lanes [][]section) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	elapsed := map[string]time.Duration{}
	var wg sync.WaitGroup
	for _, lane := range lanes {
		wg.Go(func() {
			for _, sec := range lane {
				start := time.Now()
				if err := sec.run(ctx, rep, conn); err != nil {
					cancel(err)
					return
				}
				mu.Lock()
				elapsed[sec.name] = time.Since(start)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	for g, c := range rep.perRun {
		g.Availability = c.availability
		if rep.ittFromRollup && g.ITT != nil {
			g.ITT.H2.setRuns(c.ittRuns[0], c.ittFailedRuns[0])
			g.ITT.H3.setRuns(c.ittRuns[1], c.ittFailedRuns[1])
		}
	}
	if rep.Trend != nil {
		rep.Trend.setAvailability(rep.windowAvail)
	}
	for _, lane := range lanes {
		for _, sec := range lane {
			rep.Stages = append(rep.Stages, Stage{sec.name, elapsed[sec.name]})
		}
	}
	rep.done = true
	rep.finish()
	return rep.checkFinite()
}

// checkFinite fails a report holding a NaN or an infinity where it is
// built, so that no output — the API, the CLI's JSON, the pages — ever
// receives one.
func (rep *Report) checkFinite() error {
	if err := checkFinite(rep); err != nil {
		return fmt.Errorf("computing the report: %w", err)
	}
	return nil
}

// finish turns the groups into the report's sorted Groups.
func (rep *Report) finish() {
	rep.Groups = rep.Groups[:0]
	for _, g := range rep.groups.all() {
		finishGroup(g, &rep.opts)
		rep.Groups = append(rep.Groups, *g)
	}
	slices.SortFunc(rep.Groups, func(a, b Group) int {
		if c := cmp.Compare(b.Runs, a.Runs); c != 0 {
			return c
		}
		return cmp.Compare(a.Group, b.Group)
	})
	rule := rep.opts.verdictRule()
	rep.Verdicts = make([]Verdict, 0, len(rep.Groups))
	for i := range rep.Groups {
		rep.Verdicts = append(rep.Verdicts, rule.Judge(&rep.Groups[i]))
	}
}

// finishGroup sets the comparison fields that need both protocols.
func finishGroup(g *Group, o *Options) {
	if g.Handshakes == nil {
		g.Handshakes = []Handshake{}
	}
	g.TooSmall = g.H2 == nil || g.H3 == nil || g.H2.TooSmall || g.H3.TooSmall
	if g.Availability == nil {
		g.Availability = availability(g) // per request; the complete report has it per run
	}
	if g.H2 != nil && g.H3 != nil && len(g.Diff) == 0 {
		// Bootstrap did not run (no intervals wanted): point differences only.
		g.Diff = pointDiffs(g.H2, g.H3)
	}
}

func pointDiffs(h2, h3 *Stats) []Diff {
	out := make([]Diff, len(percentiles))
	for i, p := range percentiles {
		a, b := h2.Percentiles[i], h3.Percentiles[i]
		out[i] = Diff{P: p, MS: round3(b.MS - a.MS), Pct: round3(stats.PctChange(a.MS, b.MS)), Insufficient: a.Insufficient || b.Insufficient}
	}
	return out
}

// round3 rounds to 0.001 (a microsecond, or a thousandth of a percent).
func round3(v float64) float64 { return math.Round(v*1000)/1000 + 0 } // + 0 turns -0 into 0

func ptr(v float64) *float64 {
	v = round3(v)
	return &v
}
