package queries

import (
	"context"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/query"
)

// designs lists the designs of the window's runs, most runs first, exact
// counts of every browser run with parallel requests, whatever its
// exclusions: from run_counts and the window's raw edges (designsQuery),
// or from the runs table for a report from raw rows; an agent report's
// from raw rows.
func designs(ctx context.Context, conn driver.Conn, o *model.Options, w query.Window) ([]model.DesignCount, error) {
	st, err := designsQuery(o, w)
	if err != nil {
		return nil, err
	}
	var out []model.DesignCount
	err = st.Each(ctx, conn, "designs", func(rows driver.Rows) error {
		var (
			par, warm uint8
			bytes     uint32
			major     uint16
			extra     string
			runs      uint64
		)
		if err := rows.Scan(&par, &bytes, &warm, &major, &extra, &runs); err != nil {
			return err
		}
		out = append(out, model.DesignCount{Design: model.Design{Parallel: int(par), Bytes: int(bytes), Warmup: int(warm), BeaconMajor: int(major), Extra: extra}, Runs: int(runs)})
		return nil
	})
	return out, err
}

// designsQuery returns designs' query: designs_rollup.sql unless the
// report is from raw rows or the agent's (run_counts holds browser runs
// only).
func designsQuery(o *model.Options, w query.Window) (query.Stmt, error) {
	name := "designs_rollup.sql"
	switch {
	case o.Agent:
		name = "designs_agent.sql"
	case o.Source == model.SourceRaw:
		name = "designs.sql"
	}
	return prepare(name, o, w, nil)
}
