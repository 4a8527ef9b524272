package queries

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// ReportVersion is the version of the JSON shape (see REPORT.md).
const ReportVersion = 1

// Percentiles reported for every protocol, in percent: the one list. The
// SQL files take it as /*LEVELS*/ (the rollup's t-digest states were built
// with the same levels, see the samples_hourly migration).
var percentiles = [...]float64{50, 75, 90, 95, 99}

// levelsSQL is percentiles as quantile levels for the SQL files.
var levelsSQL = func() string {
	var b strings.Builder
	for i, p := range percentiles {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatFloat(p/100, 'f', -1, 64))
	}
	return b.String()
}()

// Outcome names, as the samples' outcome column spells them: the
// classification of a request by the origin it was sent to (want) and the
// protocol it used (got), made once at ingest (store.OutcomeOf).
var (
	OutcomeH2            = store.OutcomeH2.String()            // want h2, got h2
	OutcomeH3            = store.OutcomeH3.String()            // want h3, got h3
	OutcomeWantedH3GotH2 = store.OutcomeWantedH3GotH2.String() // want h3, got h2 or h1: UDP blocked or QUIC broken
	OutcomeOther         = store.OutcomeOther.String()         // anything else (unknown protocol, h1 on the h2 origin, …)
)

// Report is the regional comparison of HTTP/3 and HTTP/2 for one window.
// Its JSON shape is documented in REPORT.md and stable within Version.
type Report struct {
	Version     int       `json:"version"`
	Since       time.Time `json:"since"`
	Until       time.Time `json:"until"`
	Site        string    `json:"site"` // "" = all sites
	By          string    `json:"by"`
	MinRuns     int       `json:"min_runs"`
	Filters     Filters   `json:"filters"`
	Source      string    `json:"source"` // "rollup" or "raw": where point estimates came from
	Percentiles []float64 `json:"percentiles"`
	CI          CIMethod  `json:"ci"`
	Groups      []Group   `json:"groups"`
	Timeline    []Hour    `json:"timeline"`
	// Stages is how long each step of Run took (not part of the JSON).
	Stages []Stage `json:"-"`

	// What AddRuns needs to complete a report made by Estimate.
	opts   Options
	win    window
	groups map[string]*Group
	done   bool // AddRuns ran
}

// Stage is the wall time of one step of Run.
type Stage struct {
	Name    string // points, failures, timeline, runs (fetch and bootstrap)
	Elapsed time.Duration
}

// Filters says which samples the report includes beyond the default
// (parallel batches, successful requests, non-bot runs).
type Filters struct {
	IncludeWarmup bool `json:"include_warmup"`
	IncludeFailed bool `json:"include_failed"`
	IncludeBots   bool `json:"include_bots"`
}

// CIMethod describes how confidence intervals were computed.
type CIMethod struct {
	Method          string  `json:"method"` // "cluster_bootstrap_runs" or "none"
	Level           float64 `json:"level"`  // 0.95
	Replicates      int     `json:"replicates"`
	MaxRunsPerGroup int     `json:"max_runs_per_group"`
	Seed            uint64  `json:"seed"`
}

// Group is one region (or browser, ASN, …) of the report.
type Group struct {
	Group string `json:"group"` // "unknown" when the attribute was empty
	// Runs and Samples count every selected sample of the group, whatever
	// its outcome.
	Runs    int `json:"runs"`
	Samples int `json:"samples"`
	// TooSmall is set when H2 or H3 has fewer than MinRuns runs (or none):
	// the comparison is shown but not to be trusted.
	TooSmall      bool          `json:"too_small"`
	H2            *Stats        `json:"h2"`
	H3            *Stats        `json:"h3"`
	WantedH3GotH2 *Stats        `json:"wanted_h3_got_h2"`
	Other         *Stats        `json:"other"`
	Diff          []Diff        `json:"diff"` // H3 − H2 per percentile; empty unless both exist
	Paired        *Paired       `json:"paired"`
	Availability  *Availability `json:"h3_availability"`
	Failures      []Failure     `json:"failures"`
	// BootstrapRuns is how many runs the bootstrap and the paired view
	// used: all runs, or a uniform sample of about MaxRunsPerGroup.
	BootstrapRuns int  `json:"bootstrap_runs"`
	Sampled       bool `json:"sampled"`
}

// Stats are the figures of one outcome in one group.
type Stats struct {
	Runs        int          `json:"runs"`
	Samples     int          `json:"samples"`
	TooSmall    bool         `json:"too_small"`
	Percentiles []Percentile `json:"percentiles"`
}

// Percentile is one request-duration percentile in milliseconds, with its
// 95 % confidence interval (null when none could be computed).
type Percentile struct {
	P        float64  `json:"p"`
	MS       float64  `json:"ms"`
	CILowMS  *float64 `json:"ci_low_ms"`
	CIHighMS *float64 `json:"ci_high_ms"`
}

// Diff is H3 − H2 at one percentile: negative means HTTP/3 is faster.
type Diff struct {
	P         float64  `json:"p"`
	MS        float64  `json:"ms"`
	CILowMS   *float64 `json:"ci_low_ms"`
	CIHighMS  *float64 `json:"ci_high_ms"`
	Pct       float64  `json:"pct"` // 100 × (H3 − H2) / H2
	CILowPct  *float64 `json:"ci_low_pct"`
	CIHighPct *float64 `json:"ci_high_pct"`
}

// Paired is the within-run comparison: for each run whose parallel H3
// batch used h3 throughout and which has both batches, the median of its
// H3 batch minus the median of its H2 batch.
type Paired struct {
	Runs           int      `json:"runs"`
	MedianMS       float64  `json:"median_ms"`
	MedianCILowMS  *float64 `json:"median_ci_low_ms"`
	MedianCIHighMS *float64 `json:"median_ci_high_ms"`
	P90MS          float64  `json:"p90_ms"`
	P90CILowMS     *float64 `json:"p90_ci_low_ms"`
	P90CIHighMS    *float64 `json:"p90_ci_high_ms"`
	H3WonShare     float64  `json:"h3_won_share"` // share of runs with a negative difference
	H3WonCILow     *float64 `json:"h3_won_ci_low"`
	H3WonCIHigh    *float64 `json:"h3_won_ci_high"`
	// Histogram of the differences: Counts[i] runs fell in
	// [Edges[i], Edges[i+1]) ms; the outer bins also hold the tails.
	Histogram Histogram `json:"histogram"`
}

// Histogram is a binned distribution.
type Histogram struct {
	Edges  []float64 `json:"edges_ms"`
	Counts []int     `json:"counts"`
}

// Availability is the share of requests sent to the H3 origin that used
// h3, out of those that used h3, h2 or h1 (unknown protocols excluded).
type Availability struct {
	WantedH3 int      `json:"wanted_h3"`
	GotH3    int      `json:"got_h3"`
	Share    float64  `json:"share"`
	CILow    *float64 `json:"ci_low"`
	CIHigh   *float64 `json:"ci_high"`
}

// Failure counts failed requests of one group by origin and error code.
type Failure struct {
	Origin  string `json:"origin"` // protocol of the origin the request was sent to
	Error   string `json:"error"`
	Samples int    `json:"samples"`
}

// Hour counts selected samples per outcome in one hour.
type Hour struct {
	Hour          time.Time `json:"hour"`
	H2            int       `json:"h2"`
	H3            int       `json:"h3"`
	WantedH3GotH2 int       `json:"wanted_h3_got_h2"`
	Other         int       `json:"other"`
}

// groupExpr maps a grouping to its SQL expression; unknown values (empty
// strings, ASN 0) become "unknown". Only these fixed strings ever reach
// the query text.
var groupExpr = map[string]string{
	"continent":   "if(continent = '', 'unknown', continent)",
	"country":     "if(country = '', 'unknown', country)",
	"subdivision": "if(subdivision = '', 'unknown', subdivision)",
	"asn":         "if(asn = 0, 'unknown', concat('AS', toString(asn)))",
	"browser":     "if(browser = '', 'unknown', browser)",
	"connection":  "if(ect = '', 'unknown', ect)",
	"none":        "'all'",
}

// query returns the embedded SQL file name with its grouping filled in.
func query(name, by string) (string, error) {
	b, err := sqlFiles.ReadFile("sql/" + name)
	if err != nil {
		return "", fmt.Errorf("reading embedded %s: %w", name, err)
	}
	expr, ok := groupExpr[by]
	if !ok {
		return "", invalid("unknown grouping %q", by)
	}
	return strings.NewReplacer("/*GROUP*/", expr, "/*LEVELS*/", levelsSQL).Replace(string(b)), nil
}

// window is the report window in the forms the SQL files bind.
type window struct {
	since, until           uint32 // unix seconds
	hourFrom, hourTo       uint32 // whole hours inside [since, until): [hourFrom, hourTo)
	edgeA0, edgeA1, edgeB0 uint32 // raw edges [since, hourFrom) and [hourTo, until)
	edgeB1                 uint32
}

func newWindow(since, until time.Time) window {
	w := window{since: uint32(since.Unix()), until: uint32(until.Unix())}
	from := since.Truncate(time.Hour)
	if from.Before(since) {
		from = from.Add(time.Hour)
	}
	to := until.Truncate(time.Hour)
	if !to.After(from) {
		// No whole hour inside: everything comes from raw rows.
		w.hourFrom, w.hourTo = w.since, w.since
		w.edgeA0, w.edgeA1, w.edgeB0, w.edgeB1 = w.since, w.until, w.until, w.until
		return w
	}
	w.hourFrom, w.hourTo = uint32(from.Unix()), uint32(to.Unix())
	w.edgeA0, w.edgeA1, w.edgeB0, w.edgeB1 = w.since, w.hourFrom, w.hourTo, w.until
	return w
}

func b01(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// rawArgs are the leading parameters of the raw-row SQL files.
func rawArgs(o *Options, w window) []any {
	return []any{w.since, w.until, o.Site, o.Site, b01(o.IncludeWarmup), b01(o.IncludeFailed), b01(o.IncludeBots)}
}

// rollupArgs are the parameters of the rollup SQL files.
func rollupArgs(o *Options, w window) []any {
	return []any{w.hourFrom, w.hourTo, o.Site, o.Site, w.edgeA0, w.edgeA1, w.edgeB0, w.edgeB1, o.Site, o.Site}
}

// rollupQuery picks the rollup-only SQL when the window is whole hours
// (an empty raw branch still costs a scan) and the rollup+edges SQL
// otherwise.
func rollupQuery(kind string, o *Options, w window) (string, []any) {
	if w.edgeA0 == w.edgeA1 && w.edgeB0 == w.edgeB1 {
		return kind + "_rollup_hours.sql", []any{w.hourFrom, w.hourTo, o.Site, o.Site}
	}
	return kind + "_rollup.sql", rollupArgs(o, w)
}

// Run computes the report for opts (validated and defaulted in place of a
// copy) from the ClickHouse behind conn: Estimate, then AddRuns.
func Run(ctx context.Context, conn driver.Conn, opts Options) (*Report, error) {
	rep, err := Estimate(ctx, conn, opts)
	if err != nil {
		return nil, err
	}
	if err := rep.AddRuns(ctx, conn); err != nil {
		return nil, err
	}
	return rep, nil
}

// Estimate computes the first part of the report: counts, percentiles and
// their differences, failures, availability and the timeline — everything
// but what needs per-run samples (confidence intervals and the paired
// view), which AddRuns adds. The dashboard shows an estimate while the
// rest is computed.
func Estimate(ctx context.Context, conn driver.Conn, opts Options) (*Report, error) {
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
		useRollup = o.rollupAnswers()
		if useRollup && o.Until.Sub(o.Since) >= snapMin {
			// Raw rows of a partial hour cost a scan of the whole day (the
			// table is ordered by day, then run), so a long window is
			// rounded inward to whole hours and the rollup answers alone.
			// Report.Since/Until show the window used.
			since, until := o.Since.Truncate(time.Hour), o.Until.Truncate(time.Hour)
			if since.Before(o.Since) {
				since = since.Add(time.Hour)
			}
			o.Since, o.Until = since, until
		}
	}
	w := newWindow(o.Since, o.Until)
	rep := &Report{
		Version:     ReportVersion,
		Since:       o.Since,
		Until:       o.Until,
		Site:        o.Site,
		By:          o.By,
		MinRuns:     o.MinRuns,
		Filters:     Filters{IncludeWarmup: o.IncludeWarmup, IncludeFailed: o.IncludeFailed, IncludeBots: o.IncludeBots},
		Source:      "raw",
		Percentiles: percentiles[:],
		CI:          CIMethod{Method: "none", Level: 0.95},
		Groups:      []Group{},
		Timeline:    []Hour{},
	}
	if o.Replicates > 0 {
		rep.CI = CIMethod{Method: "cluster_bootstrap_runs", Level: 0.95, Replicates: o.Replicates, MaxRunsPerGroup: o.MaxRunsPerGroup, Seed: o.Seed}
	}
	if useRollup {
		rep.Source = "rollup"
	}

	groups := map[string]*Group{}
	get := func(name string) *Group {
		g := groups[name]
		if g == nil {
			g = &Group{Group: name, Diff: []Diff{}, Failures: []Failure{}}
			groups[name] = g
		}
		return g
	}
	t0 := time.Now()
	stage := func(name string) {
		now := time.Now()
		rep.Stages = append(rep.Stages, Stage{name, now.Sub(t0)})
		t0 = now
	}
	if err := points(ctx, conn, &o, w, useRollup, get); err != nil {
		return nil, err
	}
	stage("points")
	if err := failures(ctx, conn, &o, w, get); err != nil {
		return nil, err
	}
	stage("failures")
	tl, err := timeline(ctx, conn, &o, w, o.rollupAnswers() && o.Source != SourceRaw)
	if err != nil {
		return nil, err
	}
	rep.Timeline = tl
	stage("timeline")
	rep.opts, rep.win, rep.groups = o, w, groups
	rep.finish()
	return rep, nil
}

// AddRuns completes a report made by Estimate with what needs per-run
// samples: the bootstrap confidence intervals and the paired view.
func (rep *Report) AddRuns(ctx context.Context, conn driver.Conn) error {
	if rep.groups == nil {
		return errors.New("AddRuns needs a report made by Estimate")
	}
	if rep.done {
		return nil
	}
	start := time.Now()
	if err := perRun(ctx, conn, &rep.opts, rep.win, rep.groups); err != nil {
		return err
	}
	rep.Stages = append(rep.Stages, Stage{"runs", time.Since(start)})
	rep.done = true
	rep.finish()
	return nil
}

// finish turns the groups into the report's sorted Groups.
func (rep *Report) finish() {
	rep.Groups = rep.Groups[:0]
	for _, g := range rep.groups {
		finishGroup(g, &rep.opts)
		rep.Groups = append(rep.Groups, *g)
	}
	slices.SortFunc(rep.Groups, func(a, b Group) int {
		if c := cmp.Compare(b.Runs, a.Runs); c != 0 {
			return c
		}
		return cmp.Compare(a.Group, b.Group)
	})
}

// points reads counts and percentiles per group and outcome.
func points(ctx context.Context, conn driver.Conn, o *Options, w window, useRollup bool, get func(string) *Group) error {
	name, args := "points_raw.sql", rawArgs(o, w)
	if useRollup {
		name, args = rollupQuery("points", o, w)
	}
	q, err := query(name, o.By)
	if err != nil {
		return err
	}
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("querying percentiles (%s): %w", name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			grp, outcome   string
			runs, nSamples uint64
			qs             []float32
		)
		if err := rows.Scan(&grp, &outcome, &runs, &nSamples, &qs); err != nil {
			return fmt.Errorf("reading percentiles: %w", err)
		}
		if grp == "" {
			continue // the grand total of WITH ROLLUP
		}
		g := get(grp)
		if outcome == "" {
			g.Runs, g.Samples = int(runs), int(nSamples)
			continue
		}
		s := &Stats{Runs: int(runs), Samples: int(nSamples), TooSmall: int(runs) < o.MinRuns, Percentiles: make([]Percentile, len(percentiles))}
		for i, p := range percentiles {
			s.Percentiles[i].P = p
			if i < len(qs) {
				s.Percentiles[i].MS = round3(float64(qs[i]))
			}
		}
		switch outcome {
		case OutcomeH2:
			g.H2 = s
		case OutcomeH3:
			g.H3 = s
		case OutcomeWantedH3GotH2:
			g.WantedH3GotH2 = s
		default:
			g.Other = s
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading percentiles: %w", err)
	}
	return nil
}

// failures reads failed requests per group, origin and error code.
func failures(ctx context.Context, conn driver.Conn, o *Options, w window, get func(string) *Group) error {
	q, err := query("failures.sql", o.By)
	if err != nil {
		return err
	}
	rows, err := conn.Query(ctx, q, w.since, w.until, o.Site, o.Site, b01(o.IncludeWarmup), b01(o.IncludeBots))
	if err != nil {
		return fmt.Errorf("querying failures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			grp, origin, code string
			n                 uint64
		)
		if err := rows.Scan(&grp, &origin, &code, &n); err != nil {
			return fmt.Errorf("reading failures: %w", err)
		}
		g := get(grp)
		g.Failures = append(g.Failures, Failure{Origin: origin, Error: code, Samples: int(n)})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading failures: %w", err)
	}
	return nil
}

// timeline reads selected samples per hour and outcome.
func timeline(ctx context.Context, conn driver.Conn, o *Options, w window, useRollup bool) ([]Hour, error) {
	name, args := "timeline_raw.sql", rawArgs(o, w)
	if useRollup {
		name, args = rollupQuery("timeline", o, w)
	}
	q, err := query(name, o.By)
	if err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("querying timeline (%s): %w", name, err)
	}
	defer rows.Close()
	out := []Hour{}
	for rows.Next() {
		var (
			h       time.Time
			outcome string
			n       uint64
		)
		if err := rows.Scan(&h, &outcome, &n); err != nil {
			return nil, fmt.Errorf("reading timeline: %w", err)
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
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading timeline: %w", err)
	}
	return out, nil
}

// snapMin is the shortest window that SourceAuto rounds to whole hours.
const snapMin = 6 * time.Hour

// hashScale is the modulus of the run-sampling hash in runs.sql.
const hashScale = 1000000

// perRun fetches each group's runs (sampled down to MaxRunsPerGroup) and
// computes confidence intervals, the paired view and availability.
func perRun(ctx context.Context, conn driver.Conn, o *Options, w window, groups map[string]*Group) error {
	var names []string
	var thresholds []uint32
	for name, g := range groups {
		if g.H2 == nil && g.H3 == nil && g.WantedH3GotH2 == nil {
			continue
		}
		names = append(names, name)
		th := uint32(hashScale)
		if g.Runs > o.MaxRunsPerGroup {
			th = uint32(math.Ceil(float64(hashScale) * float64(o.MaxRunsPerGroup) / float64(g.Runs)))
			g.Sampled = true
		}
		thresholds = append(thresholds, th)
	}
	if len(names) == 0 {
		return nil
	}
	q, err := query("runs.sql", o.By)
	if err != nil {
		return err
	}
	args := append([]any{names, thresholds}, rawArgs(o, w)...)
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("querying per-run samples: %w", err)
	}
	defer rows.Close()
	byGroup := map[string][]runSamples{}
	for rows.Next() {
		var (
			grp     string
			d       []float32
			oc, par []uint8
		)
		if err := rows.Scan(&grp, &d, &oc, &par); err != nil {
			return fmt.Errorf("reading per-run samples: %w", err)
		}
		byGroup[grp] = append(byGroup[grp], splitRun(d, oc, par))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading per-run samples: %w", err)
	}
	// Groups are independent: bootstrap them on all cores.
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for name, runs := range byGroup {
		g := groups[name]
		if g == nil {
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
			analyse(g, runs, o)
		}()
	}
	wg.Wait()
	return nil
}

// finishGroup sets the comparison fields that need both protocols.
func finishGroup(g *Group, o *Options) {
	g.TooSmall = g.H2 == nil || g.H3 == nil || g.H2.TooSmall || g.H3.TooSmall
	if g.Availability == nil {
		g.Availability = availability(g) // the bootstrap replaces it, with an interval
	}
	if g.H2 != nil && g.H3 != nil && len(g.Diff) == 0 {
		// Bootstrap did not run (no intervals wanted): point differences only.
		g.Diff = pointDiffs(g.H2, g.H3)
	}
}

func pointDiffs(h2, h3 *Stats) []Diff {
	out := make([]Diff, len(percentiles))
	for i, p := range percentiles {
		a, b := h2.Percentiles[i].MS, h3.Percentiles[i].MS
		out[i] = Diff{P: p, MS: round3(b - a), Pct: round3(pctChange(a, b))}
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
