package queries

import (
	"embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

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

// query returns the embedded SQL file name with o's grouping, the
// percentile levels and o's design filled in: fixed strings and integers,
// never user text.
func query(name string, o *Options) (string, error) {
	b, err := sqlFiles.ReadFile("sql/" + name)
	if err != nil {
		return "", fmt.Errorf("reading embedded %s: %w", name, err)
	}
	expr, ok := groupExpr[o.By]
	if !ok {
		return "", invalid("unknown grouping %q", o.By)
	}
	q := selections.Replace(string(b))
	return strings.NewReplacer("/*GROUP*/", expr, "/*LEVELS*/", levelsSQL, "/*DESIGN*/", o.designSQL(), "/*PLACE*/", o.placeCond(), "/*KEPT DURATIONS*/", o.keptDurationsSQL(), "/*KEPT*/", o.keptSQL(), "/*BOT BIT*/", botBit, "/*TIMEOUT MS*/", timeoutMS,
		"/*OUTCOME COUNTS*/", outcomeCountsSQL, "/*MERGE LEVELS*/", curveLevelsSQL).Replace(q), nil
}

// keptDurationsSQL is /*KEPT DURATIONS*/: the durations of a runs-table
// row's parallel requests that the selection keeps. Failed requests are
// left out unless failures are included; but a run with one carries
// ExcludeFailed (store.classifyRun), which every exclusion mask counts, so
// unless excluded runs are included no selected run has any, and every
// duration is kept without reading the error codes (a quarter of the runs
// table's per-run fetch).
func (o *Options) keptDurationsSQL() string {
	if o.IncludeFailed || !o.IncludeExcluded {
		return "durations"
	}
	return "arrayFilter((d, e) -> e = '', durations, errors)"
}

// botBit is /*BOT BIT*/: the exclusion bit of a bot's run (store.ExcludeBot),
// which some sections leave out whatever the selection.
var botBit = strconv.Itoa(int(store.ExcludeBot))

// timeoutMS is /*TIMEOUT MS*/: what the intention-to-treat view counts a
// failed request at, the script's request timeout.
var timeoutMS = strconv.Itoa(beacon.RequestTimeoutMS)

// keptSQL is /*KEPT*/: a runs-table row's outcomes that the selection
// keeps, as keptDurationsSQL its durations: the outcomes themselves where
// it keeps every request.
func (o *Options) keptSQL() string {
	if o.IncludeFailed || !o.IncludeExcluded {
		return "outcomes"
	}
	return "arrayFilter((o, e) -> e = '', outcomes, errors)"
}

// designSQL is /*DESIGN*/: the design, who measured (browsers, or the
// agent) and where (placeSQL). The rollup and runs tables hold browser rows
// only and say so in an alias column, so the one condition serves every
// table.
func (o *Options) designSQL() string {
	source := "browser"
	if o.Agent {
		source = "agent"
	}
	return "(" + o.Design.sql() + " AND source = '" + source + "'" + o.placeSQL() + ")"
}

// selectionSQL is the report's selection of raw rows, the one definition
// every raw query uses as /*SELECTION*/: the window, the site, the widening
// options, the like-for-like headline (exclusion bits that count) and the
// design. rawArgs binds its parameters, in this order.
const selectionSQL = `time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
      AND (? = 1 OR phase = 'parallel')
      AND (? = 1 OR error = '')
      AND (? = 1 OR bot = 0)
      AND (? = 1 OR bitAnd(exclusions, ?) = 0)
      AND /*DESIGN*/`

// runsSelectionSQL is selectionSQL for the runs table (one row per run,
// its parallel requests as arrays), every runs-table query's
// /*RUNS SELECTION*/: the window, the site, bots and exclusions (the
// phase is parallel, and failures are left out of a run's arrays by each
// file). runsArgs binds its parameters, in this order.
const runsSelectionSQL = `time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)
      AND (? = 1 OR bot = 0)
      AND (? = 1 OR bitAnd(exclusions, ?) = 0)
      AND /*DESIGN*/`

// wholeHoursSQL and edgeHoursSQL are every rollup file's two selections,
// /*WHOLE HOURS*/ and /*EDGE HOURS*/: the rollup's rows of the window's
// whole hours and the raw rows of the partial hours at its edges, each of
// the site. withEdges binds their parameters.
const (
	wholeHoursSQL = `hour >= toDateTime(?, 'UTC') AND hour < toDateTime(?, 'UTC')
      AND (? = '' OR site = ?)`
	edgeHoursSQL = `((time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC'))
        OR (time >= toDateTime(?, 'UTC') AND time < toDateTime(?, 'UTC')))
      AND (? = '' OR site = ?)`
)

// selections fills in the selections an SQL file names, before anything
// else (they hold placeholders of their own).
var selections = strings.NewReplacer("/*SELECTION*/", selectionSQL, "/*RUNS SELECTION*/", runsSelectionSQL,
	"/*WHOLE HOURS*/", wholeHoursSQL, "/*EDGE HOURS*/", edgeHoursSQL)

// runsArgs are the parameters of runsSelectionSQL.
func runsArgs(o *Options, w window) []any {
	return []any{w.since, w.until, o.Site, o.Site, b01(o.IncludeBots), b01(o.IncludeExcluded), uint8(o.exclusionMask())}
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
// and reading that hour's raw rows instead was half the point estimates'
// ClickHouse CPU (186 against 90 ms at 10 M samples).
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

// rawArgs are the parameters of selectionSQL.
func rawArgs(o *Options, w window) []any {
	return []any{w.since, w.until, o.Site, o.Site, b01(o.IncludeWarmup), b01(o.IncludeFailed), b01(o.IncludeBots),
		b01(o.IncludeExcluded), uint8(o.exclusionMask())}
}

// Markers of the raw-edge block in the rollup SQL files: the branch that
// aggregates the partial hours at the window's edges from raw rows. Its
// parameters are the files' last, so cutting the block leaves the others
// in order.
const edgesBegin, edgesEnd = "/*RAW EDGES*/", "/*END RAW EDGES*/"

// cutEdges returns q, a rollup SQL file, with its raw-edge block kept
// (markers dropped) or cut out.
func cutEdges(name, q string, keep bool) (string, error) {
	before, rest, ok := strings.Cut(q, edgesBegin)
	block, after, ok2 := strings.Cut(rest, edgesEnd)
	if !ok || !ok2 {
		return "", fmt.Errorf("embedded %s has no %s … %s block", name, edgesBegin, edgesEnd)
	}
	if !keep {
		block = ""
	}
	return before + block + after, nil
}

// withEdges returns q, the rollup SQL file name, with its raw-edge block
// kept when w has partial hours at its edges and cut when it has none (an
// empty raw branch still costs a scan), the name it goes by in errors, and
// its parameters: head, the whole hours, sel; then, for the raw edges,
// their four bounds and sel again.
func withEdges(name, q string, w window, head, sel []any) (string, string, []any, error) {
	edges := w.edgeA0 != w.edgeA1 || w.edgeB0 != w.edgeB1
	q, err := cutEdges(name, q, edges)
	if err != nil {
		return name, "", nil, err
	}
	args := append(append(head[:len(head):len(head)], w.hourFrom, w.hourTo), sel...)
	if !edges {
		return name + " without raw edges", q, args, nil
	}
	return name, q, append(append(args, w.edgeA0, w.edgeA1, w.edgeB0, w.edgeB1), sel...), nil
}

// sourceQuery returns the SQL of kind ("points" or "timeline"), a name for
// it in errors, and its parameters: from raw rows; or from the rollup,
// with the partial hours at the window's edges aggregated from raw rows —
// when the window is whole hours the raw-edge block is cut, for an empty
// raw branch still costs a scan.
// runsHLL and runsExact fill points_rollup.sql's run counts: the
// rollup's HyperLogLog states, or zeros where the runs table counts them.
var (
	runsHLL   = strings.NewReplacer("/*RUNS MERGE*/", "uniqHLL12Merge(runs_state)", "/*ROLLUP RUNS*/", "runs", "/*EDGE RUNS*/", "uniqHLL12State(run_id)")
	runsExact = strings.NewReplacer("/*RUNS MERGE*/", "toUInt64(0)", "/*ROLLUP RUNS*/", "toUInt8(0)", "/*EDGE RUNS*/", "toUInt8(0)")
)

func sourceQuery(kind string, o *Options, w window, useRollup bool) (name, q string, args []any, err error) {
	if !useRollup {
		name = kind + "_raw.sql"
		q, err = query(name, o)
		return name, q, rawArgs(o, w), err
	}
	name = kind + "_rollup.sql"
	if q, err = query(name, o); err != nil {
		return name, "", nil, err
	}
	runs := runsHLL
	if o.runsTableSelects() { // points() counts the runs exactly (withExactRuns)
		runs = runsExact
	}
	return withEdges(name, runs.Replace(q), w, nil, []any{o.Site, o.Site})
}
