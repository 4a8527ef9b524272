// Package queries computes h3rum's regional HTTP/3-versus-HTTP/2 report
// from ClickHouse: the registry of its sections, their SQL and how their
// rows fill the model (queries/model), and the order they run in.
package queries

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

// Run computes the report for opts (validated and defaulted in place of a
// copy) from the ClickHouse behind conn: what Estimate and AddRuns do, but
// the sections that need only the design start beside the point
// estimates.
func Run(ctx context.Context, conn driver.Conn, opts model.Options) (*model.Report, error) {
	rep, err := begin(ctx, conn, opts)
	if err != nil {
		return nil, err
	}
	first := rep.sectionsOf(estimatePart)
	complete := rep.sectionsOf(completePart)
	if slices.ContainsFunc(complete, func(s section) bool { return s.name == "trend" }) {
		// The point estimates read the trend's grid in their pass over
		// the rollup; Estimate does not, to paint first sooner.
		rep.rollupTrend = newHandoff[[]gridRow]()
	}
	a, b := lanes(complete)
	all := [][]section{first[:1], rep.sectionsOf(runsPart), append(first[1:], a...), b}
	if err := rep.complete(ctx, conn, all); err != nil {
		return nil, err
	}
	return rep.Report, nil
}

// Estimate computes the first part of the report: counts, percentiles and
// their differences, availability per request and the timeline, from the
// rollup where it answers — what the dashboard paints first. AddRuns adds
// what reads raw rows beyond the window's edges: failures, the per-run
// samples (confidence intervals and the paired view), the excluded runs,
// the intention-to-treat view, handshakes, NEL and the script errors.
func Estimate(ctx context.Context, conn driver.Conn, opts model.Options) (*Pending, error) {
	rep, err := begin(ctx, conn, opts)
	if err != nil {
		return nil, err
	}
	for _, sec := range rep.sectionsOf(estimatePart) {
		start := time.Now()
		if err := sec.run(ctx, rep, conn); err != nil {
			return nil, err
		}
		rep.Stages = append(rep.Stages, model.Stage{Name: sec.name, Elapsed: time.Since(start)})
	}
	rep.finish(false)
	if err := rep.checkFinite(); err != nil {
		return nil, err
	}
	return &Pending{Report: rep.Report, b: rep}, nil
}

// Pending is a report made by Estimate, which AddRuns completes: the
// estimate, and what its sections handed on to the others.
type Pending struct {
	*model.Report
	b *build
}

// build is a report being computed: the model its sections fill, and
// what they hand each other.
type build struct {
	*model.Report
	opts          model.Options
	win           query.Window
	useRollup     bool // the point estimates come from the rollup
	groups        *groupSet
	perRun        map[*model.Group]perRunCounts     // from excluded, set once the bootstrap and the intention-to-treat view are done
	ittFromRollup bool                              // the intention-to-treat view came from the rollup, without run counts
	windowRuns    *windowRuns                       // the trend's runs per window, counted with the point estimates
	rollupCurves  *handoff[[]curveRow]              // the curves' rows, read with the point estimates from the rollup
	rollupTrend   *handoff[[]gridRow]               // the trend's quantile grid, read with them where Run reads the trend (nil: the trend reads its own)
	groupRuns     *handoff[map[string]groupRuns]    // the groups' runs, as soon as counted (nil: from the groups once the points are done)
	pointsDone    *handoff[struct{}]                // set once the point estimates are in the groups
	windowAvail   map[trendCell]*model.Availability // the trend's availability per window × group, from excluded
}

// begin validates opts and chooses the report's design (the designs
// stage); it reports whether the point estimates come from the rollup.
func begin(ctx context.Context, conn driver.Conn, opts model.Options) (*build, error) {
	o := opts
	if err := o.Validate(); err != nil {
		return nil, err
	}
	useRollup := false
	switch o.Source {
	case model.SourceRollup:
		if !query.RollupAnswers(&o) {
			return nil, fmt.Errorf("%w: the rollup holds only the default selection grouped by continent, country or none", model.ErrInvalidOptions)
		}
		useRollup = true
	case model.SourceAuto:
		// The window runs up to Until: whole hours from the rollup, the
		// partial hours at its edges from its five-minute twins and the
		// minutes left from the runs table, whose time-sorted key reads
		// them without scanning the rest of the day.
		useRollup = query.RollupAnswers(&o)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	w := query.NewWindow(o.Since, o.Until, now)
	rep := &build{Report: &model.Report{
		Version: model.ReportVersion,
		Since:   o.Since,
		Until:   o.Until,
		Site:    o.Site,
		By:      o.By,
		MinRuns: o.MinRuns,
		Filters: model.Filters{IncludeWarmup: o.IncludeWarmup, IncludeFailed: o.IncludeFailed, IncludeBots: o.IncludeBots,
			IncludeExcluded: o.IncludeExcluded, Continent: o.Continent, Country: o.Country, HeadlineOnly: o.Headline},
		Source:            "raw",
		Percentiles:       percentiles[:],
		ExactBelowSamples: model.ExactBelowSamples,
		CI:                model.CIMethod{Method: "none", Level: 0.95, MinTailRuns: model.MinTailRuns},
		Verdicts:          []model.Verdict{},
		Groups:            []model.Group{},
		Timeline:          []model.Hour{},
	}, groups: &groupSet{m: map[string]*model.Group{}}}
	if o.Replicates > 0 {
		rep.CI = model.CIMethod{Method: "cluster_bootstrap_runs", Level: 0.95, Replicates: o.Replicates,
			MaxRunsPerGroup: o.MaxRunsPerGroup, Seed: o.Seed, MinTailRuns: model.MinTailRuns}
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
	rep.Stages = append(rep.Stages, model.Stage{Name: "designs", Elapsed: time.Since(start)})
	rep.opts, rep.win, rep.useRollup = o, w, useRollup
	return rep, nil
}

// AddRuns completes a report made by Estimate: failures, the bootstrap
// confidence intervals and the paired view, the excluded runs and
// availability per run, the intention-to-treat view, handshakes, NEL and
// the script errors. The bootstrap runs beside the other sections, so
// that ClickHouse answers them while Go computes it.
func (p *Pending) AddRuns(ctx context.Context, conn driver.Conn) error {
	rep := p.b
	if rep == nil {
		return errors.New("AddRuns needs a report made by Estimate")
	}
	if rep.Complete() {
		return nil
	}
	a, b := lanes(rep.sectionsOf(completePart))
	return rep.complete(ctx, conn, [][]section{rep.sectionsOf(runsPart), a, b})
}

// complete runs lanes at once, the sections of each in order, then sets
// what excluded counted for the others and finishes the report. The first
// error stops the other lanes.
func (rep *build) complete(ctx context.Context, conn driver.Conn, lanes [][]section) error {
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
			g.ITT.H2.SetRuns(c.ittRuns[0], c.ittFailedRuns[0])
			g.ITT.H3.SetRuns(c.ittRuns[1], c.ittFailedRuns[1])
		}
	}
	if rep.Trend != nil {
		setTrendAvailability(rep.Trend, rep.windowAvail)
	}
	for _, lane := range lanes {
		for _, sec := range lane {
			rep.Stages = append(rep.Stages, model.Stage{Name: sec.name, Elapsed: elapsed[sec.name]})
		}
	}
	rep.finish(true)
	return rep.checkFinite()
}

// checkFinite fails a report holding a NaN or an infinity where it is
// built, so that no output — the API, the CLI's JSON, the pages — ever
// receives one.
func (rep *build) checkFinite() error {
	if err := model.CheckFinite(rep.Report); err != nil {
		return fmt.Errorf("computing the report: %w", err)
	}
	return nil
}

// finish completes the report from its groups (Report.Finish);
// complete is whether it is.
func (rep *build) finish(complete bool) {
	rep.Finish(rep.groups.all(), rep.opts, complete)
}
