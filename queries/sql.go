package queries

import (
	"context"
	"embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/sqltext"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/stats"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// sqlTemplates is every query file, parsed once: sql/blocks.sql defines
// the blocks the others share (the selections, the design, the place).
var sqlTemplates = template.Must(sqltext.Parse(sqlFiles, "sql/*.sql"))

// percentiles are those reported for every protocol, in percent: the one list,
// stats.Percentiles. The SQL files take it as .Levels (the rollup's
// t-digest states were built with the same levels, see the samples_rollup
// migration).
var percentiles = stats.Percentiles

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

// keptSQL is a runs-table row's outcomes that the selection keeps, as
// keptDurationsSQL its durations: the outcomes themselves where it keeps
// every request.
func keptSQL(o *model.Options) string {
	if o.IncludeFailed || !o.IncludeExcluded {
		return "outcomes"
	}
	return "arrayFilter((o, e) -> e = '', outcomes, errors)"
}

// window is the report window in the forms the SQL files bind.
type window struct {
	since, until           uint32 // unix seconds
	hourFrom, hourTo       uint32 // the rollup's hours: [hourFrom, hourTo)
	edgeA0, edgeA1, edgeB0 uint32 // raw edges [since, hourFrom) and [hourTo, until)
	edgeB1                 uint32
}

// newWindow splits [since, until) into the rollup's whole hours and the
// partial hours at either edge, which are read from raw rows. A window that
// runs to the present (until at or after now) takes its last, current
// hour from the rollup too: it holds every row stored so far, so nothing
// later than until unless stored since now (the moment the report began),
// and reading that hour's raw rows instead is the costlier half of the
// point estimates.
func newWindow(since, until, now time.Time) window {
	w := window{since: uint32(since.Unix()), until: uint32(until.Unix())}
	from := since.Truncate(time.Hour)
	if from.Before(since) {
		from = from.Add(time.Hour)
	}
	to := until.Truncate(time.Hour)
	if to.Before(until) && !until.Before(now) && to.After(from) {
		to = to.Add(time.Hour) // the current hour, whole in the rollup so far
		w.hourFrom, w.hourTo = uint32(from.Unix()), uint32(to.Unix())
		w.edgeA0, w.edgeA1, w.edgeB0, w.edgeB1 = w.since, w.hourFrom, w.until, w.until
		return w
	}
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

// shape is what a query file's template reads: the structure a report
// chooses among fixed alternatives (a grouping's expression, whether the
// window has raw edges, which columns a selection keeps). A value a
// request chose is never here: bound binds those by name.
type shape struct {
	Group         string // the grouping's expression (groupExpr)
	KeptDurations string // a runs-table row's kept durations (keptDurationsSQL)
	Kept          string // and outcomes (keptSQL)
	// Edges is whether the window has partial hours, which rollup files
	// aggregate from raw rows beside the rollup's whole hours.
	Edges bool
	// ExactRuns leaves points_rollup.sql's run counts at zero, for the
	// report counts runs exactly from the runs table; Grafana's panels
	// merge the rollup's HyperLogLog states instead.
	ExactRuns bool
	// MergeLevels are the levels points_rollup.sql reads off the merged
	// t-digests: the curve levels in the report, the percentiles in
	// Grafana's panels.
	MergeLevels string
	GridLevels  string // the trend's levels in the quantiles files
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
}

// newShape is o's shape over w.
func newShape(o *model.Options, w window) (*shape, error) {
	expr, ok := groupExpr[o.By]
	if !ok {
		return nil, fmt.Errorf("%w: unknown grouping %q", model.ErrInvalidOptions, o.By)
	}
	return &shape{
		Group: expr, KeptDurations: keptDurationsSQL(o), Kept: keptSQL(o),
		Edges: w.edgeA0 != w.edgeA1 || w.edgeB0 != w.edgeB1, MergeLevels: curveLevelsSQL,
		Hourly: trendHourly(o), RunsTable: runsTableHolds(o), DesignAll: o.Design.All,
		Continent: model.IsPlaceCode(o.Continent), Country: model.IsPlaceCode(o.Country),
	}, nil
}

// Levels are the report's percentiles as quantile levels.
func (*shape) Levels() string { return levelsSQL }

// CurveLevels are the distribution's curve levels.
func (*shape) CurveLevels() string { return curveLevelsSQL }

// TrendLevels are the trend's percentiles as quantile levels.
func (*shape) TrendLevels() string { return levelsList(trendLevels) }

// OutcomeCounts counts a runs-table row's kept outcomes, one column each.
func (*shape) OutcomeCounts() string { return outcomeCountsSQL }

// BotBit is the exclusion bit of a bot's run (store.ExcludeBot), which
// some sections leave out whatever the selection.
func (*shape) BotBit() int { return int(store.ExcludeBot) }

// TimeoutMS is what the intention-to-treat view counts a failed request
// at, the script's request timeout.
func (*shape) TimeoutMS() int { return beacon.RequestTimeoutMS }

// Window is the trend's window of the time column col: its hour or day,
// or one window for every row (a column times 0: Distributed tables refuse
// a constant grouping key).
func (s *shape) Window(col string) string {
	if s.OneWindow {
		return "0 * toUInt32(" + col + ")"
	}
	return trendWindow(col, s.Hourly)
}

// bound are the values a report's queries bind by name: the window and
// its hours, the site, the selection, the design and the place; a file
// binds those it names. extra adds a query's own (clickhouse.Named).
func bound(o *model.Options, w window, extra ...any) []any {
	source := "browser"
	if o.Agent {
		source = "agent"
	}
	return append([]any{
		clickhouse.Named("since", w.since), clickhouse.Named("until", w.until),
		clickhouse.Named("hour_from", w.hourFrom), clickhouse.Named("hour_to", w.hourTo),
		clickhouse.Named("edge_a0", w.edgeA0), clickhouse.Named("edge_a1", w.edgeA1),
		clickhouse.Named("edge_b0", w.edgeB0), clickhouse.Named("edge_b1", w.edgeB1),
		clickhouse.Named("site", o.Site),
		clickhouse.Named("include_warmup", b01(o.IncludeWarmup)), clickhouse.Named("include_failed", b01(o.IncludeFailed)),
		clickhouse.Named("include_bots", b01(o.IncludeBots)), clickhouse.Named("include_excluded", b01(o.IncludeExcluded)),
		clickhouse.Named("exclusions", uint8(exclusionMask(o))),
		clickhouse.Named("parallel", o.Design.Parallel), clickhouse.Named("bytes", o.Design.Bytes),
		clickhouse.Named("warmup", o.Design.Warmup), clickhouse.Named("beacon_major", o.Design.BeaconMajor),
		clickhouse.Named("extra", o.Design.Extra), clickhouse.Named("source", source),
		clickhouse.Named("continent", o.Continent), clickhouse.Named("country", o.Country),
	}, extra...)
}

// stmt is a query ready to run: the file it came from, its SQL and its
// parameters.
type stmt struct {
	name string
	sql  string
	args []any
}

// prepare renders the query file name (in sql/) for o over w; adjust, if
// not nil, changes the shape first. extra are the file's own parameters.
func prepare(name string, o *model.Options, w window, adjust func(*shape), extra ...any) (stmt, error) {
	s, err := newShape(o, w)
	if err != nil {
		return stmt{}, err
	}
	if adjust != nil {
		adjust(s)
	}
	q, err := sqltext.Render(sqlTemplates, "sql/"+name, s)
	if err != nil {
		return stmt{}, err
	}
	return stmt{name: name, sql: q, args: bound(o, w, extra...)}, nil
}

// each runs s and hands every row to scan; what names the figures in
// errors, with the file.
func (s stmt) each(ctx context.Context, conn driver.Conn, what string, scan func(driver.Rows) error) error {
	return eachRowOf(ctx, conn, s.sql, s.args, what+" ("+s.name+")", scan)
}

// sourceFile is the file of kind ("points", "timeline", "itt") that reads
// raw rows, or the rollup with the window's partial hours from raw rows.
func sourceFile(kind string, useRollup bool) string {
	if useRollup {
		return kind + "_rollup.sql"
	}
	return kind + "_raw.sql"
}

// exclusionMask is the exclusion bits that leave a run out of o's
// selection: every reason, but bot when bots are asked for (IncludeBots
// then brings in bots' otherwise like-for-like runs).
func exclusionMask(o *model.Options) store.Exclusions {
	if o.IncludeBots {
		return ^store.ExcludeBot
	}
	return ^store.Exclusions(0)
}

// runsTableHolds reports whether the runs table (one row per run) has
// what o groups by and selects from: browser runs (not the agent's), by
// any grouping but collector, a per-sample column.
func runsTableHolds(o *model.Options) bool { return o.By != "collector" && !o.Agent }

// runsTableSelects reports whether the runs table holds o's whole
// selection of samples: what runsTableHolds says, and parallel batches only
// (its arrays hold no warm-up).
func runsTableSelects(o *model.Options) bool { return runsTableHolds(o) && !o.IncludeWarmup }

// rollupAnswers reports whether the hourly rollup holds what o asks for.
func rollupAnswers(o *model.Options) bool {
	return !o.IncludeWarmup && !o.IncludeFailed && !o.IncludeBots && !o.IncludeExcluded &&
		(o.By == "continent" || o.By == "country" || o.By == "none")
}
