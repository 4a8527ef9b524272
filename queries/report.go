package queries

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Run computes the report for opts (validated and defaulted in place of a
// copy) from the ClickHouse behind conn: what Estimate and AddRuns do, but
// the sections that need only the design start beside the point
// estimates.
func Run(ctx context.Context, conn driver.Conn, opts Options) (*Report, error) {
	rep, useRollup, err := begin(ctx, conn, opts)
	if err != nil {
		return nil, err
	}
	boot, others := rep.sections(conn)
	a, b := split(others)
	lanes := [][]section{{rep.pointsSection(conn, useRollup), boot}, append([]section{rep.timelineSection(conn)}, a...), b}
	if err := rep.complete(ctx, lanes, "points", "timeline"); err != nil {
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
	rep, useRollup, err := begin(ctx, conn, opts)
	if err != nil {
		return nil, err
	}
	if err := rep.estimate(ctx, conn, useRollup); err != nil {
		return nil, err
	}
	rep.finish()
	if err := rep.checkFinite(); err != nil {
		return nil, err
	}
	return rep, nil
}

// begin validates opts and chooses the report's design (the designs
// stage); it reports whether the point estimates come from the rollup.
func begin(ctx context.Context, conn driver.Conn, opts Options) (*Report, bool, error) {
	o := opts
	if err := o.Validate(); err != nil {
		return nil, false, err
	}
	useRollup := false
	switch o.Source {
	case SourceRollup:
		if !o.rollupAnswers() {
			return nil, false, invalid("the rollup holds only the default selection grouped by continent, country or none")
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
		return nil, false, err
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
	rep.opts, rep.win = o, w
	return rep, useRollup, nil
}

// estimate reads the point estimates, then the timeline.
func (rep *Report) estimate(ctx context.Context, conn driver.Conn, useRollup bool) error {
	for _, sec := range []section{rep.pointsSection(conn, useRollup), rep.timelineSection(conn)} {
		start := time.Now()
		if err := sec.run(ctx); err != nil {
			return err
		}
		rep.Stages = append(rep.Stages, Stage{sec.name, time.Since(start)})
	}
	return nil
}

// pointsSection reads the counts and point estimates into the groups.
func (rep *Report) pointsSection(conn driver.Conn, useRollup bool) section {
	return section{"points", func(ctx context.Context) error {
		if err := points(ctx, conn, &rep.opts, rep.win, useRollup, rep.groups.get, rep.windowRuns, rep.rollupCurves, rep.groupRuns); err != nil {
			return err
		}
		rep.groupRuns.set(nil) // where no count came first: the bootstrap takes the groups'
		rep.pointsDone.set(struct{}{})
		return nil
	}}
}

// timelineSection reads the timeline, which touches no group.
func (rep *Report) timelineSection(conn driver.Conn) section {
	return section{"timeline", func(ctx context.Context) error {
		o := &rep.opts
		tl, err := timeline(ctx, conn, o, rep.win, o.rollupAnswers() && o.Source != SourceRaw)
		rep.Timeline = tl
		return err
	}}
}

// AddRuns completes a report made by Estimate: failures, the bootstrap
// confidence intervals and the paired view, the excluded runs and
// availability per run, the intention-to-treat view, handshakes, NEL and
// the script errors.
// The bootstrap runs beside the other sections, so that ClickHouse
// answers them while Go computes it.
func (rep *Report) AddRuns(ctx context.Context, conn driver.Conn) error {
	if rep.groups == nil {
		return errors.New("AddRuns needs a report made by Estimate")
	}
	if rep.done {
		return nil
	}
	boot, others := rep.sections(conn)
	a, b := split(others)
	return rep.complete(ctx, [][]section{{boot}, a, b})
}

// split deals the sections that need the design only into two lanes
// beside the bootstrap's: the heaviest at 10 M samples (first contact and
// the script errors, one pass over run_facts; the trend and the curves,
// over the rollup, the runs table or raw rows) alternate, so that
// ClickHouse works on up to three of the report's queries at once. One
// lane of them all took 3.1 s at 10 M samples on 18.16, the sum of their
// times.
func split(others []section) (a, b []section) {
	heavy := map[string]int{"run_facts": 0, "trend": 1, "curves": 2}
	for _, s := range others {
		if i, ok := heavy[s.name]; ok && i%2 == 1 {
			b = append(b, s)
		} else if ok {
			a = append(a, s)
		}
	}
	for i, s := range others {
		if _, ok := heavy[s.name]; !ok {
			if i%2 == 0 {
				b = append(b, s)
			} else {
				a = append(a, s)
			}
		}
	}
	return a, b
}

// section is one step of the complete report, named as its stage.
type section struct {
	name string
	run  func(ctx context.Context) error
}

// sections returns the bootstrap and the complete report's other sections,
// which need the design only. Each writes fields of its own; what excluded
// counts for the others (availability per run, which replaces the
// per-request share the bootstrap sets, and the intention-to-treat view's
// runs when it came from the rollup) is kept in rep.perRun until all are
// done.
func (rep *Report) sections(conn driver.Conn) (boot section, others []section) {
	o, w, get := &rep.opts, rep.win, rep.groups.get
	boot = section{"runs", func(ctx context.Context) error {
		// The fetch starts once the groups' runs are counted, which the
		// exact counts from the rollup are before the point estimates; the
		// bootstrap, once those are in the groups.
		counts, err := rep.groupRuns.wait(ctx)
		if err != nil {
			return err
		}
		return perRun(ctx, conn, o, w, counts, func(ctx context.Context) ([]*Group, error) {
			_, err := rep.pointsDone.wait(ctx)
			return rep.groups.all(), err
		})
	}}
	others = []section{
		{"itt", func(ctx context.Context) (err error) {
			rep.ittFromRollup, err = itt(ctx, conn, o, w, get)
			return err
		}},
		{"failures", func(ctx context.Context) error { return failures(ctx, conn, o, w, get) }},
		{"excluded", func(ctx context.Context) (err error) {
			rep.perRun, rep.windowAvail, err = excluded(ctx, conn, o, w, get)
			return err
		}},
		{"handshakes", func(ctx context.Context) error { return handshakes(ctx, conn, o, w, get) }},
		{"nel", func(ctx context.Context) error { return nelSection(ctx, conn, o, w, rep) }},
		{"curves", func(ctx context.Context) error { return curves(ctx, conn, o, w, rep.rollupCurves, get) }},
		{"trend", func(ctx context.Context) (err error) {
			rep.Trend, err = trend(ctx, conn, o, w, rep.windowRuns)
			return err
		}},
		{"run_facts", func(ctx context.Context) (err error) {
			rep.FirstContact, rep.ScriptErrors, err = runFacts(ctx, conn, o, w)
			return err
		}},
	}
	if rep.opts.Headline { // the headline alone: availability per run is all it takes of the others
		others = slices.DeleteFunc(others, func(s section) bool { return s.name != "excluded" })
	}
	return boot, others
}

// complete runs lanes at once, the sections of each in order, then sets
// what excluded counted for the others and finishes the report; stages names the
// estimate's sections among them, if any. The first error stops the other
// lanes.
func (rep *Report) complete(ctx context.Context, lanes [][]section, stages ...string) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	elapsed := map[string]time.Duration{}
	var wg sync.WaitGroup
	for _, lane := range lanes {
		wg.Go(func() {
			for _, sec := range lane {
				start := time.Now()
				if err := sec.run(ctx); err != nil {
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
	for _, name := range append(stages, "failures", "runs", "excluded", "itt", "handshakes", "nel", "curves", "trend", "run_facts") {
		rep.Stages = append(rep.Stages, Stage{name, elapsed[name]})
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

// points reads counts and percentiles per group, outcome and batch order;
// an outcome's percentiles are the mean of its two orders' (order.go).
// Raw reports whose selection the runs table holds read it instead of the
// samples (points_runs.sql): a row per run, and exact run counts; reports
// from the rollup take their run counts from it too (withExactRuns).
func points(ctx context.Context, conn driver.Conn, o *Options, w window, useRollup bool, get func(string) *Group, wr *windowRuns, cv *handoff[[]curveRow], gr *handoff[map[string]groupRuns]) error {
	read := func(add pointRow) error { return pointsFromSamples(ctx, conn, o, w, useRollup, cv, add) }
	if !useRollup && o.runsTableSelects() {
		read = func(add pointRow) error { return pointsFromRuns(ctx, conn, o, w, add) }
	}
	if useRollup && o.runsTableSelects() {
		read = withExactRuns(ctx, conn, o, w, read, wr, gr)
	}
	return pointsInto(o, read, get)
}

// pointsInto fills the groups from the rows read hands its add.
func pointsInto(o *Options, read func(add pointRow) error, get func(string) *Group) error {
	type byOrder struct {
		s  *Stats
		q  [2][]float64
		ok [2]bool
	}
	var outcomes []*byOrder
	index := map[[2]string]*byOrder{}
	at := func(grp, outcome string) *byOrder {
		k := [2]string{grp, outcome}
		b := index[k]
		if b == nil {
			b = &byOrder{s: &Stats{Percentiles: make([]Percentile, len(percentiles))}}
			for i, p := range percentiles {
				b.s.Percentiles[i].P = p
			}
			index[k] = b
			outcomes = append(outcomes, b)
			g := get(grp)
			switch outcome {
			case OutcomeH2:
				g.H2 = b.s
			case OutcomeH3:
				g.H3 = b.s
			case OutcomeWantedH3GotH2:
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
				s.Percentiles[i].MS = round3(v[i])
			}
		}
		s.TooSmall = s.Runs < o.MinRuns
		// Judged on the reported runs until the bootstrap counts the runs
		// its intervals come from (settle).
		s.markSufficiency(s.Runs)
	}
	return nil
}

// pointRow is points(…)'s add: one row of points_raw.sql's shape.
type pointRow func(grp, outcome, order string, runs, nSamples uint64, qs []float32)

// pointsFromSamples reads points_raw.sql or points_rollup.sql. From the
// rollup it reads every row at curveLevels, hands add the percentiles
// among them and cv the H2 and H3 rows of each batch order, the
// distribution's curves (set even when the read fails, so that the
// curves never wait on it).
func pointsFromSamples(ctx context.Context, conn driver.Conn, o *Options, w window, useRollup bool, cv *handoff[[]curveRow], add pointRow) error {
	// The runs table counts runs exactly where it holds the selection
	// (withExactRuns), which the rollup's HyperLogLog states cannot.
	st, err := prepare(sourceFile("points", useRollup), o, w, func(s *shape) { s.ExactRuns = o.runsTableSelects() })
	if err != nil {
		return err
	}
	var curveRows []curveRow
	if useRollup { // the query merges the t-digests at curveLevels (MergeLevels)
		defer func() { cv.set(curveRows) }()
	}
	return st.each(ctx, conn, "percentiles", func(rows driver.Rows) error {
		var (
			grp, outcome, order string
			runs, nSamples      uint64
			qs                  []float32
		)
		if err := rows.Scan(&grp, &outcome, &order, &runs, &nSamples, &qs); err != nil {
			return err
		}
		if useRollup {
			if len(qs) != len(curveLevels) {
				return fmt.Errorf("%d quantiles in a row, want the %d curve levels", len(qs), len(curveLevels))
			}
			if _, ok := orderIndex(order); ok && (outcome == OutcomeH2 || outcome == OutcomeH3) {
				curveRows = append(curveRows, curveRow{grp, outcome, order, qs})
			}
			qs = atPercentiles(qs)
		}
		add(grp, outcome, order, runs, nSamples, qs)
		return nil
	})
}

// pointsFromRuns reads points_runs.sql, a row per group × order with the
// outcomes side by side, and hands add the rows points_raw.sql would
// return, totals included.
func pointsFromRuns(ctx context.Context, conn driver.Conn, o *Options, w window, add pointRow) error {
	st, err := prepare("points_runs.sql", o, w, nil)
	if err != nil {
		return err
	}
	type counts struct{ runs, samples uint64 }
	groups := map[string]*counts{}
	byOutcome := map[[2]string]*counts{}
	var seen []string // groups and outcomes in their first row's order
	var keys [][2]string
	names := [4]string{OutcomeH2, OutcomeH3, OutcomeWantedH3GotH2, OutcomeOther}
	err = st.each(ctx, conn, "percentiles", func(rows driver.Rows) error {
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

// failures reads failed requests per group, origin and error code
// (failuresQuery).
func failures(ctx context.Context, conn driver.Conn, o *Options, w window, get func(string) *Group) error {
	st, err := failuresQuery(o, w, "")
	if err != nil {
		return err
	}
	return failuresFrom(ctx, conn, st, get)
}

// failuresQuery returns the failures' SQL, its name in errors and its
// parameters: from failure_counts and the window's raw edges
// (failures_rollup.sql) where the rollup answers the grouping, else from
// the runs table when it holds the selection (failures_table.sql), else
// from the samples (failures.sql); name, if not "", chooses the file.
func failuresQuery(o *Options, w window, name string) (stmt, error) {
	if name == "" {
		switch {
		case o.Source != SourceRaw && o.runsTableSelects() && (o.By == "continent" || o.By == "country" || o.By == "none"):
			name = "failures_rollup.sql"
		case o.runsTableSelects():
			name = "failures_table.sql"
		default:
			name = "failures.sql"
		}
	}
	return prepare(name, o, w, nil)
}

// failuresFrom reads a failures query.
func failuresFrom(ctx context.Context, conn driver.Conn, st stmt, get func(string) *Group) error {
	return st.each(ctx, conn, "failures", func(rows driver.Rows) error {
		var (
			grp, origin, code string
			n                 uint64
		)
		if err := rows.Scan(&grp, &origin, &code, &n); err != nil {
			return err
		}
		g := get(grp)
		g.Failures = append(g.Failures, Failure{Origin: origin, Error: code, Samples: int(n)})
		return nil
	})
}

// timeline reads selected samples per hour and outcome: raw reports from
// the runs table when it holds the selection.
func timeline(ctx context.Context, conn driver.Conn, o *Options, w window, useRollup bool) ([]Hour, error) {
	name := sourceFile("timeline", useRollup)
	if !useRollup && o.runsTableSelects() {
		name = "timeline_runs.sql"
	}
	st, err := prepare(name, o, w, nil)
	if err != nil {
		return nil, err
	}
	return timelineFrom(ctx, conn, st)
}

// timelineFrom reads a timeline query.
func timelineFrom(ctx context.Context, conn driver.Conn, st stmt) ([]Hour, error) {
	out := []Hour{}
	err := st.each(ctx, conn, "timeline", func(rows driver.Rows) error {
		var (
			h       time.Time
			outcome string
			n       uint64
		)
		if err := rows.Scan(&h, &outcome, &n); err != nil {
			return err
		}
		h = h.UTC()
		if len(out) == 0 || !out[len(out)-1].Hour.Equal(h) {
			out = append(out, Hour{Hour: h})
		}
		last := &out[len(out)-1]
		switch outcome {
		case OutcomeH2:
			last.H2 += int(n)
		case OutcomeH3:
			last.H3 += int(n)
		case OutcomeWantedH3GotH2:
			last.WantedH3GotH2 += int(n)
		default:
			last.Other += int(n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// hashScale is the modulus of the run-sampling hash in runs.sql and
// runs_table.sql.
const hashScale = 1000000

// perRun fetches the runs of the groups counts names (each sampled down
// to MaxRunsPerGroup; counts nil: the groups' own, once done returns
// them) and, once done returns the groups with their point estimates,
// computes confidence intervals, the paired view and availability.
func perRun(ctx context.Context, conn driver.Conn, o *Options, w window, counts map[string]groupRuns, done func(context.Context) ([]*Group, error)) error {
	if counts == nil {
		groups, err := done(ctx)
		if err != nil {
			return err
		}
		counts = map[string]groupRuns{}
		for _, g := range groups {
			counts[g.Group] = groupRuns{runs: g.Runs, point: g.H2 != nil || g.H3 != nil || g.WantedH3GotH2 != nil}
		}
	}
	var names []string
	var thresholds []uint32
	expect := map[string]int{} // runs each group should return: its cap, give or take the hash's spread
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		c := counts[name]
		if !c.point {
			continue
		}
		names = append(names, name)
		th := uint32(hashScale)
		if c.runs > o.MaxRunsPerGroup {
			th = uint32(math.Ceil(float64(hashScale) * float64(o.MaxRunsPerGroup) / float64(c.runs)))
		}
		thresholds = append(thresholds, th)
		expect[name] = min(c.runs, o.MaxRunsPerGroup) + min(c.runs, o.MaxRunsPerGroup)/8
	}
	if len(names) == 0 {
		return nil
	}
	st, err := perRunQuery(o, w, names, thresholds)
	if err != nil {
		return err
	}
	byGroup, err := fetchRuns(ctx, conn, st, expect)
	if err != nil {
		return err
	}
	groups, err := done(ctx)
	if err != nil {
		return err
	}
	byName := map[string]*Group{}
	for _, g := range groups {
		if g.H2 != nil || g.H3 != nil || g.WantedH3GotH2 != nil {
			byName[g.Group] = g
			g.Sampled = g.Runs > o.MaxRunsPerGroup
		}
	}
	// Groups are independent: bootstrap them on all cores, the largest
	// first so that the cores finish together.
	order := slices.SortedFunc(maps.Keys(byGroup), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(byGroup[b]), len(byGroup[a])), cmp.Compare(a, b))
	})
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, name := range order {
		g, runs := byName[name], byGroup[name]
		if g == nil || ctx.Err() != nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			// Row order varies; sort runs so that the bootstrap is
			// reproducible for a given seed.
			slices.SortFunc(runs, compareRuns)
			g.BootstrapRuns = len(runs)
			analyse(ctx, g, runs, o)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("computing confidence intervals: %w", err)
	}
	return nil
}

// perRunQuery returns the query that fetches the runs of groups names,
// each sampled below its threshold: from the runs table, one row per run,
// when it holds the selection (parallel batches of browser runs, a grouping
// it has); else from the samples.
func perRunQuery(o *Options, w window, names []string, thresholds []uint32) (stmt, error) {
	name := "runs_table.sql"
	if !o.runsTableSelects() {
		name = "runs.sql"
	}
	return prepare(name, o, w, nil, clickhouse.Named("groups", names), clickhouse.Named("thresholds", thresholds))
}

// fetchRuns runs st, a per-run query (runs.sql or runs_table.sql), and
// returns each group's runs in the order ClickHouse sent them. The query
// sends one row per run, its samples packed into strings (runs.sql says
// how). expect, if not nil, is about how many runs each group has, so
// that its slice is allocated once.
func fetchRuns(ctx context.Context, conn driver.Conn, st stmt, expect map[string]int) (map[string][]runSamples, error) {
	byGroup := map[string][]runSamples{}
	// One set of scan targets and buffers for every row: declared in the
	// callback, the targets escaped to the heap for each row.
	var (
		g, db, ob, pb string
		h3            uint8
		d             []float32
		oc, par       []uint8
	)
	err := st.each(ctx, conn, "per-run samples", func(rows driver.Rows) error {
		if err := rows.Scan(&g, &db, &ob, &pb, &h3); err != nil {
			return err
		}
		n := len(ob)
		if n == 0 || len(db) != 4*n || (pb != "" && len(pb) != n) {
			return fmt.Errorf("a run of group %q with %d bytes of durations, %d outcomes and %d parallel flags", g, len(db), n, len(pb))
		}
		d, oc, par = d[:0], append(oc[:0], ob...), par[:0]
		for i := 0; i < len(db); i += 4 {
			d = append(d, math.Float32frombits(binary.LittleEndian.Uint32([]byte(db[i:i+4]))))
		}
		if pb == "" {
			for range n {
				par = append(par, 1)
			}
		} else {
			par = append(par, pb...)
		}
		run := splitRun(d, oc, par)
		run.h3First = h3 == 1
		runs, ok := byGroup[g]
		if !ok && expect[g] > 0 {
			runs = make([]runSamples, 0, expect[g])
		}
		byGroup[g] = append(runs, run)
		return nil
	})
	return byGroup, err
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
		out[i] = Diff{P: p, MS: round3(b.MS - a.MS), Pct: round3(pctChange(a.MS, b.MS)), Insufficient: a.Insufficient || b.Insufficient}
	}
	return out
}

func pctChange(h2, h3 float64) float64 {
	if h2 == 0 {
		return 0
	}
	return 100 * (h3 - h2) / h2
}

// round3 rounds to 0.001 (a microsecond, or a thousandth of a percent).
func round3(v float64) float64 { return math.Round(v*1000)/1000 + 0 } // + 0 turns -0 into 0

func ptr(v float64) *float64 {
	v = round3(v)
	return &v
}
