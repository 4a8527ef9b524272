package query

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/stats"
)

// levelsSQL is the report's percentiles (stats.Percentiles) as quantile
// levels for the SQL files' .Levels: the rollup's t-digest states were
// built with the same levels (see the samples_rollup migration).
var levelsSQL = func() string {
	var b strings.Builder
	for i, p := range stats.Percentiles {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatFloat(p/100, 'f', -1, 64))
	}
	return b.String()
}()

// CurveGrid are the curves' levels in percent: dense in the tail, where
// HTTP/3's gain lives, and every reported percentile among them.
var CurveGrid = []float64{1, 2, 5, 10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 85, 90, 92, 94, 95, 96, 97, 98, 99, 99.5, 99.9}

// curveLevelsSQL is CurveGrid as quantile levels, the files' .CurveLevels.
var curveLevelsSQL = func() string {
	s := make([]string, len(CurveGrid))
	for i, p := range CurveGrid {
		s[i] = strconv.FormatFloat(p/100, 'f', -1, 64)
	}
	return strings.Join(s, ", ")
}()

// TrendHourlyUpTo is the longest report whose trend is hourly.
const TrendHourlyUpTo = 72 * time.Hour

// TrendGrid is the grid of quantile levels (fractions) the trend's
// intervals are read from: a percentile's bounds fall between two of them.
var TrendGrid = func() []float64 {
	var l []float64
	add := func(from, to, step float64) {
		for i := 0; from+float64(i)*step <= to+1e-9; i++ {
			l = append(l, math.Round((from+float64(i)*step)*1e5)/1e5)
		}
	}
	add(0.30, 0.90, 0.01)
	add(0.9025, 0.99, 0.0025)
	add(0.9905, 0.999, 0.0005)
	return l
}()

// MergeGrid are the levels points_rollup.sql reads off the merged
// t-digests when it also reads the trend (Shape.Trend): the curves' (as
// fractions) and the trend's, sorted, each once; CurveAt and TrendAt are
// where each grid's levels are in it.
var MergeGrid, CurveAt, TrendAt = mergeGrids()

func mergeGrids() (grid []float64, curveAt, trendAt []int) {
	// A level is the same in both grids to a millionth (99.9 % is
	// 0.9990000000000001 as a fraction of CurveGrid's): the curves' float
	// is kept, so that the curves read the levels they always did.
	key := func(x float64) int64 { return int64(math.Round(x * 1e6)) }
	at := map[int64]float64{}
	for _, p := range CurveGrid {
		at[key(p/100)] = p / 100
	}
	for _, x := range TrendGrid {
		if _, ok := at[key(x)]; !ok {
			at[key(x)] = x
		}
	}
	keys := slices.Sorted(maps.Keys(at))
	index := map[int64]int{}
	for i, k := range keys {
		grid = append(grid, at[k])
		index[k] = i
	}
	for _, p := range CurveGrid {
		curveAt = append(curveAt, index[key(p/100)])
	}
	for _, x := range TrendGrid {
		trendAt = append(trendAt, index[key(x)])
	}
	return grid, curveAt, trendAt
}

func levelsList(l []float64) string {
	s := make([]string, len(l))
	for i, x := range l {
		s[i] = strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strings.Join(s, ", ")
}

// TrendHourly reports whether o's trend is by hour (else by day).
func TrendHourly(o *model.Options) bool { return o.Until.Sub(o.Since) <= TrendHourlyUpTo }

// trendWindow is the trend's window over the time column col: its hour,
// or its day for reports longer than TrendHourlyUpTo.
func trendWindow(col string, hourly bool) string {
	if hourly {
		return "toStartOfHour(" + col + ")"
	}
	return "toStartOfDay(" + col + ")"
}

// RunCountOutcomes are the outcomes points_runs_counts.sql counts runs
// of, in its columns' order after n_any.
var RunCountOutcomes = []store.Outcome{store.OutcomeH2, store.OutcomeH3, store.OutcomeWantedH3GotH2, store.OutcomeOther}

// outcomeCountsSQL is points_runs_counts.sql's .OutcomeCounts: per outcome
// of RunCountOutcomes, the runs whose kept outcomes hold its code in the
// outcomes column's Enum8.
var outcomeCountsSQL = func() string {
	var b strings.Builder
	for i, oc := range RunCountOutcomes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "countIf(has(kept, %d)) AS n_%s", int8(oc), oc)
	}
	return b.String()
}()

// ContinentOf is the continent column's value of the group name that
// groupExpr's continent expression gives.
func ContinentOf(group string) string {
	if group == "unknown" {
		return ""
	}
	return group
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
	// Rows stored before c.et kept to its vocabulary (beacon.EffectiveTypes)
	// may hold free text: it groups as unknown, as the decoder stores it now.
	"connection": "if(ect IN ('slow-2g', '2g', '3g', '4g'), ect, 'unknown')",
	"collector":  "if(collector = '', 'unknown', collector)",
	"none":       "materialize('all')", // a column, not a constant: Distributed tables (cluster mode) refuse a constant grouping key
}

// GroupExpr is the SQL expression of the grouping by, "" for none: the
// text of a query holds no other grouping than groupExpr's.
func GroupExpr(by string) string { return groupExpr[by] }

// keptDurationsSQL is the durations of a runs-table row's parallel
// requests that the selection keeps. Failed requests are left out unless
// failures are included; but a run with one carries ExcludeFailed
// (store.classifyRun), which every exclusion mask counts, so unless
// excluded runs are included no selected run has any, and every duration
// is kept without reading the error codes.
func keptDurationsSQL(o *model.Options) string {
	if o.IncludeFailed || !o.IncludeExcluded {
		return "durations"
	}
	return "arrayFilter((d, e) -> e = '', durations, errors)"
}

// KeptSQL is a runs-table row's outcomes that the selection keeps, as
// keptDurationsSQL its durations: the outcomes themselves where it keeps
// every request.
func KeptSQL(o *model.Options) string {
	if o.IncludeFailed || !o.IncludeExcluded {
		return "outcomes"
	}
	return "arrayFilter((o, e) -> e = '', outcomes, errors)"
}

// Shape is what a query file's template reads: the structure a report
// chooses among fixed alternatives (a grouping's expression, whether the
// window has raw edges, which columns a selection keeps). A value a
// request chose is never here: Prepare binds those by name.
type Shape struct {
	Group         string // the grouping's expression (groupExpr)
	KeptDurations string // a runs-table row's kept durations (keptDurationsSQL)
	Kept          string // and outcomes (KeptSQL)
	// Edges is whether the window has minutes outside the rollup's hours
	// and its five-minute twins' slots, which rollup files aggregate from
	// per-run rows; FineEdges whether it has slots of the twins beside the
	// rollup's whole hours (Rollups).
	Edges, FineEdges bool
	// ExactRuns leaves points_rollup.sql's run counts at zero, for the
	// report counts runs exactly from the runs table; Grafana's panels
	// merge the rollup's HyperLogLog states instead.
	ExactRuns bool
	// MergeLevels are the levels points_rollup.sql reads off the merged
	// t-digests: the curve levels in the report, the percentiles in
	// Grafana's panels.
	MergeLevels string
	GridLevels  string // the trend's levels in the quantiles files
	// Trend makes points_rollup.sql group by the trend's window (.Window
	// over each row's hour) after the batch order: its rows of one window
	// are the trend's quantile grid, read in the same pass over the rollup
	// as the point estimates, which a second query would merge again
	// (WithTrend).
	Trend bool
	// Hourly chooses the trend's windows (hours, else days); OneWindow
	// makes every row one window (the curves; excluded.sql over the
	// samples, which gives the trend no availability).
	Hourly, OneWindow bool
	// RunsTable makes excluded.sql read its runs from the runs table.
	RunsTable bool
	// DesignAll pools every design; DesignKey matches the design by its
	// key (Grafana's variable) rather than by its parameters.
	DesignAll, DesignKey bool
	// Continent and Country say which place filters apply.
	Continent, Country bool
	// SampleRanges is how many continents the run sample of a report by
	// continent names (runs_table.sql's "sample range"): each bound as
	// @sample_continent_N and @sample_bound_N.
	SampleRanges int
}

// newShape is o's shape over w.
func newShape(o *model.Options, w Window) (*Shape, error) {
	expr, ok := groupExpr[o.By]
	if !ok {
		return nil, fmt.Errorf("%w: unknown grouping %q", model.ErrInvalidOptions, o.By)
	}
	return &Shape{
		Group: expr, KeptDurations: keptDurationsSQL(o), Kept: KeptSQL(o),
		Edges: w.edgeA0 != w.edgeA1 || w.edgeB0 != w.edgeB1, FineEdges: w.fineA0 != w.fineA1 || w.fineB0 != w.fineB1,
		MergeLevels: curveLevelsSQL, Hourly: TrendHourly(o), RunsTable: RunsTableHolds(o), DesignAll: o.Design.All,
		Continent: model.IsPlaceCode(o.Continent), Country: model.IsPlaceCode(o.Country),
	}, nil
}

// Rollup is one of the tables a rollup file reads the window's
// aggregated rows from: the hourly Table, or its five-minute twin (Fine),
// whose slots at the window's edges the file reads in a second branch of
// the same form.
type Rollup struct {
	*Shape
	Table string
	Fine  bool
}

// Rollups are the tables holding table's rows of the window (an hourly
// table of the store's with a five-minute twin): table for the whole
// hours, and its twin where the window has its slots.
func (s *Shape) Rollups(table string) []Rollup {
	r := []Rollup{{Shape: s, Table: table}}
	if s.FineEdges {
		r = append(r, Rollup{Shape: s, Table: store.FiveMinuteTwin(table), Fine: true})
	}
	return r
}

// WithTrend makes points_rollup.sql read the trend too (Trend), its
// quantiles at MergeGrid.
func (s *Shape) WithTrend() { s.Trend, s.MergeLevels = true, levelsList(MergeGrid) }

// Levels are the report's percentiles as quantile levels.
func (*Shape) Levels() string { return levelsSQL }

// CurveLevels are the distribution's curve levels.
func (*Shape) CurveLevels() string { return curveLevelsSQL }

// TrendLevels are the trend's percentiles as quantile levels.
func (*Shape) TrendLevels() string { return levelsList(TrendGrid) }

// OutcomeCounts counts a runs-table row's kept outcomes, one column each.
func (*Shape) OutcomeCounts() string { return outcomeCountsSQL }

// BotBit is the exclusion bit of a bot's run (store.ExcludeBot), which
// some sections leave out whatever the selection.
func (*Shape) BotBit() int { return int(store.ExcludeBot) }

// TimeoutMS is what the intention-to-treat view counts a failed request
// at, the script's request timeout.
func (*Shape) TimeoutMS() int { return beacon.RequestTimeoutMS }

// Window is the trend's window of the time column col: its hour or day,
// or one window for every row (a column times 0: Distributed tables refuse
// a constant grouping key).
func (s *Shape) Window(col string) string {
	if s.OneWindow {
		return "0 * toUInt32(" + col + ")"
	}
	return trendWindow(col, s.Hourly)
}
