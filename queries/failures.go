package queries

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

func init() {
	register(section{
		name: "failures", part: completePart, cost: light,
		files: []string{"failures.sql", "failures_rollup.sql", "failures_table.sql"},
		reads: []source{fromRaw, fromRollup, fromRunsTable},
		run: func(ctx context.Context, rep *build, conn driver.Conn) error {
			return failures(ctx, conn, &rep.opts, rep.win, rep.groups.get)
		},
	})
}

// failures reads failed requests per group, origin and error code
// (failuresQuery).
func failures(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window, get func(string) *model.Group) error {
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
func failuresQuery(o *model.Options, w query.Window, name string) (query.Stmt, error) {
	if name == "" {
		switch {
		case o.Source != model.SourceRaw && query.RunsTableSelects(o) && (o.By == "continent" || o.By == "country" || o.By == "none"):
			name = "failures_rollup.sql"
		case query.RunsTableSelects(o):
			name = "failures_table.sql"
		default:
			name = "failures.sql"
		}
	}
	return prepare(name, o, w, nil)
}

// failuresFrom reads a failures query.
func failuresFrom(ctx context.Context, conn driver.Conn, st query.Stmt, get func(string) *model.Group) error {
	return st.Each(ctx, conn, "failures", func(rows driver.Rows) error {
		var (
			grp, origin, code string
			n                 uint64
		)
		if err := rows.Scan(&grp, &origin, &code, &n); err != nil {
			return err
		}
		g := get(grp)
		g.Failures = append(g.Failures, model.Failure{Origin: origin, Error: code, Samples: int(n)})
		return nil
	})
}
