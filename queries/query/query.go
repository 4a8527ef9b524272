// Package query prepares a report's query files for its options: the
// window, the shape their templates read and the values they bind by name.
package query

import (
	"context"
	"fmt"
	"text/template"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/sqltext"
	"github.com/h3rum/h3rum/queries/model"
)

func b01(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// bound are the values a report's queries bind by name: the window and
// its hours, the site, the selection, the design and the place; a file
// binds those it names. extra adds a query's own (clickhouse.Named).
func bound(o *model.Options, w Window, extra ...any) []any {
	source := "browser"
	if o.Agent {
		source = "agent"
	}
	return append([]any{
		clickhouse.Named("since", w.since), clickhouse.Named("until", w.until),
		clickhouse.Named("hour_from", w.hourFrom), clickhouse.Named("hour_to", w.hourTo),
		clickhouse.Named("edge_a0", w.edgeA0), clickhouse.Named("edge_a1", w.edgeA1),
		clickhouse.Named("edge_b0", w.edgeB0), clickhouse.Named("edge_b1", w.edgeB1),
		clickhouse.Named("fine_a0", w.fineA0), clickhouse.Named("fine_a1", w.fineA1),
		clickhouse.Named("fine_b0", w.fineB0), clickhouse.Named("fine_b1", w.fineB1),
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

// Stmt is a query ready to run: the file it came from, its SQL and its
// parameters.
type Stmt struct {
	Name string
	SQL  string
	Args []any
}

// Prepare renders the query file sql/name of files for o over w; adjust,
// if not nil, changes the shape first. extra are the file's own
// parameters. The files stay with the package that runs them.
func Prepare(files *template.Template, name string, o *model.Options, w Window, adjust func(*Shape), extra ...any) (Stmt, error) {
	s, err := newShape(o, w)
	if err != nil {
		return Stmt{}, err
	}
	if adjust != nil {
		adjust(s)
	}
	q, err := sqltext.Render(files, "sql/"+name, s)
	if err != nil {
		return Stmt{}, err
	}
	return Stmt{Name: name, SQL: q, Args: bound(o, w, extra...)}, nil
}

// Each runs s and hands every row to scan; what names the figures in
// errors, with the file.
func (s Stmt) Each(ctx context.Context, conn driver.Conn, what string, scan func(driver.Rows) error) error {
	return eachRowOf(ctx, conn, s.SQL, s.Args, what+" ("+s.Name+")", scan)
}

// eachRowOf runs q with args and hands every row to scan.
func eachRowOf(ctx context.Context, conn driver.Conn, q string, args []any, what string, scan func(driver.Rows) error) error {
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("querying %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("reading %s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	return nil
}

// SourceFile is the file of kind ("points", "timeline", "itt") that reads
// raw rows, or the rollup with the window's edges from its five-minute
// twins and raw rows.
func SourceFile(kind string, useRollup bool) string {
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

// RunsTableHolds reports whether the runs table (one row per run) has
// what o groups by and selects from: browser runs (not the agent's), by
// any grouping but collector, a per-sample column.
func RunsTableHolds(o *model.Options) bool { return o.By != "collector" && !o.Agent }

// RunsTableSelects reports whether the runs table holds o's whole
// selection of samples: what RunsTableHolds says, and parallel batches only
// (its arrays hold no warm-up).
func RunsTableSelects(o *model.Options) bool { return RunsTableHolds(o) && !o.IncludeWarmup }

// RollupAnswers reports whether the hourly rollup holds what o asks for.
func RollupAnswers(o *model.Options) bool {
	return !o.IncludeWarmup && !o.IncludeFailed && !o.IncludeBots && !o.IncludeExcluded &&
		(o.By == "continent" || o.By == "country" || o.By == "none")
}
